"""SAS dataset attachments (type 1): definitions, variables and observations -> Arrow.

The sequenced messages of a dataset attachment each start with an ``int`` record
type; consecutive messages of one type form a stream whose records may straddle
message boundaries (docs/spec/cmi.md#record-types). Observation streams are decoded in
batches of whole observations by compiled kernels that read each row once for all
its variables, so memory is bounded by the batch size and not by the dataset.
"""
from __future__ import annotations

import bisect
import dataclasses
import datetime as dt
import functools
import struct
from collections import OrderedDict
from dataclasses import dataclass
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
import pyarrow as pa

from ..arrow.numbers import from_numpy
from ..arrow.strings import FieldUnicodeDecodeError, string_fields
from ..charsets import NOT_IN_CODE_PAGE, CodePage
from ..cmi.records import DATASET_DEFINITION, VARIABLE_DEFINITION, min_record_size, read_record
from ..cmi.stream import MessageStream
from ..cmi.wire import FieldReader, WireFormat
from ..compiled import kernel
from ..errors import (DatasetLayoutError, KeptError, Location, TruncatedError, UnsupportedEncodingError,
                      ValueConversionError)
from ..messages import PhysicalMessage
from ..encoding import FloatFormat, float_format, integer_order
from .sas_formats import KIND_DATE, KIND_DATETIME, KIND_TIME, display_format, temporal_kind
from .sas_numbers import decode_number_fields

RECORD_DATASET = 1
RECORD_VARIABLES = 2
RECORD_OBSERVATIONS = 3
RECORD_INDEX = 4
RECORD_CONSTRAINTS = 5
RECORD_TYPE_SIZE = 4

MAX_CHARACTER_LENGTH = 32767
DEFAULT_BATCH_ROWS = 65536

SAS_EPOCH = dt.date(1960, 1, 1)
EPOCH_SHIFT_DAYS = (dt.date(1970, 1, 1) - SAS_EPOCH).days  # 3653
EPOCH_SHIFT_SECONDS = EPOCH_SHIFT_DAYS * 86400
SECONDS_PER_DAY = 86400
# Spark's date and timestamp range: 0001-01-01 .. 9999-12-31, in SAS days from 1960.
MIN_SAS_DAY = (dt.date(1, 1, 1) - SAS_EPOCH).days
MAX_SAS_DAY = (dt.date(9999, 12, 31) - SAS_EPOCH).days


# ------------------------------------------------------------------------------------------
# Record streams


class RecordStream(MessageStream):
    """Consecutive sequenced messages of one record type, their type ints removed."""

    def __init__(self, record_type: int, messages: List[PhysicalMessage], base: int = 0):
        super().__init__(messages, skip=RECORD_TYPE_SIZE, base=base)
        self.record_type = record_type


def record_type_of(message: PhysicalMessage) -> int:
    if len(message.payload) < RECORD_TYPE_SIZE:
        raise TruncatedError(f"dataset message of {len(message.payload)} bytes has no record type",
                             message.location(0))
    # record_type_in's read, not a call of it: planning asks this of every message, twice.
    (record_type,) = struct.unpack_from(integer_order(message.descriptor.encoding) + "i", message.payload)
    return record_type


def record_type_in(payload: Union[bytes, memoryview], encoding: int) -> int:
    """The record type a dataset message's payload (any buffer of ``RECORD_TYPE_SIZE`` bytes or
    more) starts with, in the message's ``encoding``."""
    (record_type,) = struct.unpack_from(integer_order(encoding) + "i", payload)
    return record_type


def split_streams(messages: Sequence[PhysicalMessage]) -> List[RecordStream]:
    """Group sequenced messages (in sequence order) into record streams and check their order."""
    runs: List[Tuple[int, List[PhysicalMessage]]] = []
    for m in messages:
        record_type = record_type_of(m)
        if record_type not in (RECORD_DATASET, RECORD_VARIABLES, RECORD_OBSERVATIONS,
                               RECORD_INDEX, RECORD_CONSTRAINTS):
            raise DatasetLayoutError(f"unknown dataset record type {record_type}", m.location(0))
        if runs and runs[-1][0] == record_type:
            runs[-1][1].append(m)
        else:
            runs.append((record_type, [m]))
    streams = [RecordStream(t, ms) for t, ms in runs]
    order = [s.record_type for s in streams]
    core = [t for t in order if t <= RECORD_OBSERVATIONS]
    expected_core = [RECORD_DATASET, RECORD_VARIABLES] + ([RECORD_OBSERVATIONS] if RECORD_OBSERVATIONS in core else [])
    first_trailer = next((i for i, t in enumerate(order) if t > RECORD_OBSERVATIONS), len(order))
    if core != expected_core or any(t <= RECORD_OBSERVATIONS for t in order[first_trailer:]):
        where = streams[0].messages[0].location(0) if streams else Location()
        raise DatasetLayoutError(f"dataset record types come in the order {order}; expected 1, 2, "
                                 f"then 3 (observations), then 4/5", where)
    return streams


# ------------------------------------------------------------------------------------------
# Definitions


@dataclass(frozen=True)
class SasVariable:
    name: str
    label: str
    is_numeric: bool
    length: int
    offset: int
    format_name: str = ""
    format_width: int = 0
    format_decimals: int = 0
    informat_name: str = ""
    informat_width: int = 0
    informat_decimals: int = 0
    nsort: int = 0

    @property
    def format(self) -> str:
        return display_format(self.format_name, self.format_width, self.format_decimals)

    @property
    def informat(self) -> str:
        return display_format(self.informat_name, self.informat_width, self.informat_decimals)

    @property
    def sas_type(self) -> str:
        return "num" if self.is_numeric else "char"

    @property
    def temporal_kind(self) -> Optional[str]:
        return temporal_kind(self.format_name) if self.is_numeric else None


@dataclass(frozen=True)
class DatasetDefinition:
    version: int
    dataset_type: str
    label: str
    nobs: int
    nvars: int
    obs_length: int
    compress: str
    reuse: int
    encrypt: str
    sort_key_count: int
    collating_sequence: str
    sort_flags: int
    read_password_set: bool
    write_password_set: bool
    alter_password_set: bool


@dataclass(frozen=True)
class DatasetLayout:
    definition: DatasetDefinition
    variables: Tuple[SasVariable, ...]
    encoding: int
    ccsid: int
    wire: WireFormat
    observation_bytes: int  # length of the observation stream

    @property
    def float_format(self) -> FloatFormat:
        return float_format(self.encoding)

    @property
    def observations(self) -> int:
        # Without variables there is nothing to read: report what the dataset view returns.
        obslen = self.definition.obs_length
        return self.observation_bytes // obslen if obslen else 0


def _decode_text(raw: bytes, codepage: CodePage, what: str, location: Location) -> str:
    try:
        return codepage.decode(raw).rstrip(" \0")
    except UnicodeDecodeError:
        raise DatasetLayoutError(f"{what} is not valid {codepage.codec}", location) from None


def _read_definition(stream: RecordStream, wire: WireFormat, codepage: CodePage) -> DatasetDefinition:
    reader = FieldReader(stream.data(), wire, stream.locate)
    raw = read_record(reader, DATASET_DEFINITION)
    where = stream.locate(0)
    text = {k: _decode_text(raw[k], codepage, k.replace("_", " "), where)
            for k in ("dataset_type", "label", "compress", "encrypt", "collating_sequence")}
    # Passwords are never exposed; only whether each is set.
    return DatasetDefinition(
        raw["version"], text["dataset_type"], text["label"], raw["nobs"], raw["nvars"], raw["obs_length"],
        text["compress"], raw["reuse"], text["encrypt"], raw["sort_key_count"], text["collating_sequence"],
        raw["sort_flags"], raw["read_password_flag"] != 0, raw["write_password_flag"] != 0,
        raw["alter_password_flag"] != 0)


def variable_name_key(name: str) -> str:
    """What SAS tells variable names apart by: their letters without regard to case (``id`` and
    ``ID`` name one variable). The writer refuses what the reader would take for one name."""
    return name.upper()


# Variable definitions already read, by their bytes and how they were read: a queue export of
# thousands of small transfers of one data set repeats the same definitions in every attachment
# (10,000 of them took 6.8 s of a 17 s planning). Only successful reads are kept.
_VARIABLES_READ: "OrderedDict[tuple, Tuple[SasVariable, ...]]" = OrderedDict()
_VARIABLES_KEPT = 64


def _read_variables(stream: RecordStream, wire: WireFormat, codepage: CodePage,
                    definition: DatasetDefinition) -> Tuple[SasVariable, ...]:
    data = stream.data()
    key = (data, wire, codepage.ccsid, codepage.codec, definition.nvars, definition.obs_length)
    found = _VARIABLES_READ.get(key)
    if found is None:
        found = _VARIABLES_READ[key] = _parse_variables(data, stream, wire, codepage, definition)
        if len(_VARIABLES_READ) > _VARIABLES_KEPT:
            _VARIABLES_READ.popitem(last=False)
    return found


def _parse_variables(data: bytes, stream: RecordStream, wire: WireFormat, codepage: CodePage,
                     definition: DatasetDefinition) -> Tuple[SasVariable, ...]:
    nvars = definition.nvars
    if nvars < 0 or nvars * min_record_size(VARIABLE_DEFINITION, wire.long_size, wire.terminated) > len(data):
        raise DatasetLayoutError(f"dataset definition declares {nvars} variables but the variable "
                                 f"definitions hold only {len(data)} bytes", stream.locate(0))
    reader = FieldReader(data, wire, stream.locate)
    variables: List[SasVariable] = []
    offset = 0
    seen: Dict[str, int] = {}
    for _ in range(nvars):
        at = reader.pos
        raw = read_record(reader, VARIABLE_DEFINITION)
        where = stream.locate(at)
        name = _decode_text(raw["name"], codepage, "variable name", where)
        is_numeric = raw["type"] in (1, codepage.digit_one)
        length = raw["length"]
        if is_numeric and not 2 <= length <= 8:
            raise DatasetLayoutError(f"numeric variable {name} has length {length}; SAS numerics "
                                     f"are 2 to 8 bytes", where)
        if not is_numeric and not 1 <= length <= MAX_CHARACTER_LENGTH:
            raise DatasetLayoutError(f"character variable {name} has length {length}", where)
        if not name:
            raise DatasetLayoutError("a variable has an empty name", where)
        if variable_name_key(name) in seen:
            raise DatasetLayoutError(f"variable name {name} appears twice", where)
        seen[variable_name_key(name)] = len(variables)
        variables.append(SasVariable(
            name=name, label=_decode_text(raw["label"], codepage, "variable label", where),
            is_numeric=is_numeric, length=length, offset=offset,
            format_name=_decode_text(raw["format_name"], codepage, "format name", where),
            format_width=raw["format_width"], format_decimals=raw["format_decimals"],
            informat_name=_decode_text(raw["informat_name"], codepage, "informat name", where),
            informat_width=raw["informat_width"], informat_decimals=raw["informat_decimals"],
            nsort=raw["nsort"]))
        offset += length
    if reader.remaining:
        raise DatasetLayoutError(f"{reader.remaining} bytes follow the {nvars} variable definitions",
                                 stream.locate(reader.pos))
    if offset > definition.obs_length:
        raise DatasetLayoutError(f"variable lengths add up to {offset} bytes but the observation "
                                 f"length is {definition.obs_length}", stream.locate(0))
    return tuple(variables)


def read_definitions(messages: Sequence[PhysicalMessage], header_wire: WireFormat,
                     codepage_of) -> Tuple[DatasetLayout, List[RecordStream]]:
    """The dataset and variable definitions of a dataset attachment, from its sequenced messages
    in order (the definitions' messages at least), with the record streams those messages
    make; the layout's ``observation_bytes`` is 0, for the caller to measure."""
    if not messages:
        raise DatasetLayoutError("dataset attachment has no sequenced messages")
    first = messages[0]
    encoding, ccsid = first.descriptor.encoding, first.descriptor.ccsid
    for m in messages:
        if (m.descriptor.encoding, m.descriptor.ccsid) != (encoding, ccsid):
            raise DatasetLayoutError(
                f"message has Encoding {m.descriptor.encoding} and CCSID {m.descriptor.ccsid} but the "
                f"attachment started with {encoding} and {ccsid}", m.location())
    try:
        float_format(encoding)
    except ValueError as e:
        raise UnsupportedEncodingError(str(e), first.location()) from None
    codepage = codepage_of(first)
    wire = header_wire.with_order(integer_order(encoding))
    streams = split_streams(messages)
    definition = _read_definition(streams[0], wire, codepage)
    variables = _read_variables(streams[1], wire, codepage, definition)
    if definition.obs_length < 0:
        raise DatasetLayoutError(f"observation length {definition.obs_length} is negative", streams[0].locate(0))
    return DatasetLayout(definition, variables, encoding, ccsid, wire, 0), streams


def read_layout(messages: Sequence[PhysicalMessage], header_wire: WireFormat,
                codepage_of) -> Tuple[DatasetLayout, Optional[RecordStream]]:
    """Definitions of a dataset attachment, from its sequenced messages in order, checked
    against its observation stream (a whole number of observations, as many as declared).

    ``codepage_of(message)`` gives a message's code page. Observations are not decoded;
    the observation stream is returned for that.
    """
    layout, streams = read_definitions(messages, header_wire, codepage_of)
    definition = layout.definition
    observations = next((s for s in streams if s.record_type == RECORD_OBSERVATIONS), None)
    observation_bytes = observations.length if observations else 0
    obslen = definition.obs_length
    if obslen == 0 and observation_bytes:
        raise DatasetLayoutError(f"observation length {obslen} cannot hold {observation_bytes} "
                                 f"bytes of observations", streams[0].locate(0))
    if obslen and observation_bytes % obslen:
        raise DatasetLayoutError(
            f"observation stream has {observation_bytes} bytes, not a whole number of "
            f"{obslen}-byte observations", observations.end_location())
    layout = dataclasses.replace(layout, observation_bytes=observation_bytes)
    if definition.nobs >= 0 and obslen and layout.observations != definition.nobs:
        raise DatasetLayoutError(
            f"dataset definition declares {definition.nobs} observations but the observation "
            f"messages hold {layout.observations}",
            observations.end_location() if observations else streams[-1].end_location())
    return layout, observations


# ------------------------------------------------------------------------------------------
# Observations -> Arrow


# What a numeric with a TIME-family format becomes (read option timeType; docs/reading.md#sas-time-values).
# SAS TIME values are elapsed seconds, not times of day: durations of 100 hours and more, negative
# values and fractions are ordinary. An interval holds them all, to the microsecond, and Spark
# compares, filters and writes it (Parquet, ORC, CSV, JSON) with no session flag; Spark's TIME
# holds a time of day only and needs spark.sql.timeType.enabled; seconds are the SAS number.
TIME_AS_INTERVAL, TIME_AS_TIME_OF_DAY, TIME_AS_SECONDS = "interval", "time", "seconds"
TIME_MAPPINGS = (TIME_AS_INTERVAL, TIME_AS_TIME_OF_DAY, TIME_AS_SECONDS)
# Kinds of conversion (the kernel's codes); a time read as seconds is a plain number (None).
KIND_INTERVAL = "interval"


@dataclass(frozen=True)
class TemporalTypes:
    """What numerics with date, datetime and time formats become: ``typed`` (read option
    temporalTypes) false keeps every one a SAS number; ``time`` (option timeType) is one of
    TIME_MAPPINGS."""

    typed: bool = True
    time: str = TIME_AS_INTERVAL

    def kind(self, variable: SasVariable) -> Optional[str]:
        """The conversion of ``variable``'s values: None (a double as stored), or a key of _ARROW_TYPES."""
        kind = variable.temporal_kind if self.typed else None
        if kind != KIND_TIME or self.time == TIME_AS_TIME_OF_DAY:
            return kind
        return KIND_INTERVAL if self.time == TIME_AS_INTERVAL else None


DEFAULT_TEMPORAL_TYPES = TemporalTypes()
_ARROW_TYPES = {None: pa.float64(), KIND_DATE: pa.date32(), KIND_DATETIME: pa.timestamp("us"),
                KIND_TIME: pa.time64("ns"), KIND_INTERVAL: pa.duration("us")}


def arrow_field(variable: SasVariable, temporal: TemporalTypes = DEFAULT_TEMPORAL_TYPES) -> pa.Field:
    if variable.is_numeric:
        arrow_type = _ARROW_TYPES[temporal.kind(variable)]
    else:
        arrow_type = pa.string()
    metadata = {"label": variable.label, "format": variable.format, "informat": variable.informat,
                "sas_type": variable.sas_type, "sas_length": str(variable.length)}
    return pa.field(variable.name, arrow_type, nullable=True, metadata=metadata)


def arrow_schema(layout: DatasetLayout, temporal: TemporalTypes = DEFAULT_TEMPORAL_TYPES) -> pa.Schema:
    return _schema_of(layout.variables, temporal)


@functools.lru_cache(maxsize=64)
def _schema_of(variables: Tuple[SasVariable, ...], temporal: TemporalTypes) -> pa.Schema:
    # Cached: planning compares the schemas of every chosen attachment, thousands in a queue export.
    return pa.schema([arrow_field(v, temporal) for v in variables])


class ObservationDecoder:
    """Decodes whole observations of one dataset layout into record batches."""

    def __init__(self, layout: DatasetLayout, codepage: CodePage, temporal: TemporalTypes = DEFAULT_TEMPORAL_TYPES):
        self.layout = layout
        self.codepage = codepage
        self.temporal = temporal
        self.schema = arrow_schema(layout, temporal)
        self.float_format = layout.float_format

    def decode(self, rows: np.ndarray, first_row: int, locate) -> pa.RecordBatch:
        """``rows``: (n, obs_length) uint8; ``first_row`` and ``locate`` place errors."""
        columns: List[Optional[pa.Array]] = [None] * len(self.layout.variables)
        numeric = [i for i, v in enumerate(self.layout.variables) if v.is_numeric]
        character = [i for i, v in enumerate(self.layout.variables) if not v.is_numeric]
        if numeric:
            chosen = [self.layout.variables[i] for i in numeric]
            values, missing = decode_number_fields(rows, self.float_format, [v.offset for v in chosen],
                                                   [v.length for v in chosen])
            for k, i in enumerate(numeric):
                columns[i] = self._numeric(values[k], missing[k], self.layout.variables[i], self.schema[i].type,
                                           first_row, locate)
        if character:
            chosen = [self.layout.variables[i] for i in character]
            try:
                arrays = string_fields(rows, self.codepage, [v.offset for v in chosen], [v.length for v in chosen])
            except FieldUnicodeDecodeError as e:
                variable, row = chosen[e.field], first_row + e.start
                raise ValueConversionError(
                    f"variable {variable.name}, observation {row + 1}: {e.object[:40]!r} is not valid "
                    f"UTF-8 (CCSID {self.codepage.ccsid})",
                    locate(row * self.layout.definition.obs_length + variable.offset), hint=NOT_IN_CODE_PAGE) from None
            for i, array in zip(character, arrays):
                columns[i] = array
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)

    def decode_tolerant(self, rows: np.ndarray, first_row: int, locate) -> "TolerantBatch":
        """``decode``, except that an observation whose values cannot be represented becomes a
        row of nulls, returned with its error. Bad rows are found by halving the batch, so a
        clean batch costs one decode."""
        try:
            return TolerantBatch(self.decode(rows, first_row, locate), ())
        except ValueConversionError as e:
            if len(rows) == 1:
                nulls = [pa.nulls(1, f.type) for f in self.schema]
                return TolerantBatch(pa.RecordBatch.from_arrays(nulls, schema=self.schema), ((0, KeptError.of(e)),))
        half = len(rows) // 2
        head = self.decode_tolerant(rows[:half], first_row, locate)
        tail = self.decode_tolerant(rows[half:], first_row + half, locate)
        return TolerantBatch(pa.concat_batches([head.batch, tail.batch]),
                             head.bad + tuple((at + half, e) for at, e in tail.bad))

    def _numeric(self, values, missing, variable, arrow_type, first_row, locate) -> pa.Array:
        kind = self.temporal.kind(variable)
        if kind is None:
            return from_numpy(values, pa.float64(), missing)
        out = np.empty(len(values), dtype=np.int32 if kind == KIND_DATE else np.int64)
        bad = _sas_to_arrow_time(values, missing, _TEMPORAL_CODES[kind], out)
        if bad >= 0:
            raise ValueConversionError(
                f"variable {variable.name} ({variable.format}), observation {first_row + bad + 1}: "
                f"{float(values[bad])!r} is {_TEMPORAL_RANGES[kind]}",
                locate((first_row + bad) * self.layout.definition.obs_length + variable.offset))
        return from_numpy(out, arrow_type, missing)


@dataclass(frozen=True)
class TolerantBatch:
    """Observations decoded by ``ObservationDecoder.decode_tolerant``: ``bad`` holds (row in
    ``batch``, error) of each observation that could not be decoded, a row of nulls in ``batch``."""

    batch: pa.RecordBatch
    bad: Tuple[Tuple[int, KeptError], ...]


_TEMPORAL_CODES = {KIND_DATE: 0, KIND_DATETIME: 1, KIND_TIME: 2, KIND_INTERVAL: 3}
# An interval is a signed 64-bit count of microseconds (Arrow's duration[us], Spark's interval day
# to second): about 292,000 years either way. Past it a value is surely no elapsed time.
MAX_INTERVAL_SECONDS = float((2 ** 63 - 1) // 1_000_000)
_TEMPORAL_RANGES = {KIND_DATE: "outside the dates 0001-01-01 .. 9999-12-31",
                    KIND_DATETIME: "outside the datetimes of years 1 .. 9999",
                    KIND_TIME: "not a time of day (0 to 86399.999 seconds), which option timeType=time needs: "
                               "timeType=interval (the default) reads any elapsed time",
                    KIND_INTERVAL: f"beyond ±{MAX_INTERVAL_SECONDS:.0f} seconds, more than an interval holds"}
_LAST_NANOSECOND_OF_DAY = SECONDS_PER_DAY * 10 ** 9 - 1


# The C twin takes the constants after the kernel's arguments: they are defined here only.
@kernel(native="sas_to_arrow_time", native_args=(MIN_SAS_DAY, MAX_SAS_DAY, EPOCH_SHIFT_DAYS, EPOCH_SHIFT_SECONDS,
                                                 SECONDS_PER_DAY, MAX_INTERVAL_SECONDS, _LAST_NANOSECOND_OF_DAY))
def _sas_to_arrow_time(values, missing, kind, out):
    """SAS dates (days from 1960), datetimes (seconds from 1960), times of day (seconds from
    midnight) or elapsed times (seconds) as Arrow's date32 days, timestamp microseconds from 1970,
    time64 nanoseconds or duration microseconds into ``out``; returns the first present value
    outside the type's range, or -1. Missing values get 0."""
    for i in range(values.shape[0]):
        if missing[i]:
            out[i] = 0
            continue
        v = values[i]
        if kind == 0:
            if not (MIN_SAS_DAY <= v < MAX_SAS_DAY + 1):
                return i
            out[i] = np.int64(np.floor(v)) - EPOCH_SHIFT_DAYS
        elif kind == 1:
            if not (MIN_SAS_DAY * SECONDS_PER_DAY <= v < (MAX_SAS_DAY + 1) * SECONDS_PER_DAY):
                return i
            # Whole seconds and the fraction apart: v * 1e6 would add a rounding error that
            # shifts the microsecond of late datetimes.
            whole = np.floor(v)
            out[i] = (np.int64(whole) * 1_000_000 + np.int64(np.rint((v - whole) * 1e6))
                      - EPOCH_SHIFT_SECONDS * 1_000_000)
        elif kind == 2:
            if not (0 <= v < SECONDS_PER_DAY):
                return i
            out[i] = min(np.int64(np.rint(v * 1e9)), _LAST_NANOSECOND_OF_DAY)
        else:
            if not (-MAX_INTERVAL_SECONDS <= v <= MAX_INTERVAL_SECONDS):
                return i
            # As datetimes: the fraction rounded apart from the whole seconds (floor: -1.5 s is
            # -2 s and 500,000 us), so 359280.123456 s is 359280123456 us exactly.
            whole = np.floor(v)
            out[i] = np.int64(whole) * 1_000_000 + np.int64(np.rint((v - whole) * 1e6))
    return -1


def observation_messages(stream: RecordStream, obs_length: int, first_row: int, last_row: int) -> Tuple[int, int]:
    """[lo, hi): the messages of an observation stream holding rows [first_row, last_row)."""
    if first_row >= last_row:
        return 0, 0
    lo = bisect.bisect_right(stream.starts, first_row * obs_length) - 1
    hi = bisect.bisect_left(stream.starts, last_row * obs_length)
    return max(lo, 0), hi


@dataclass(frozen=True)
class ObservationChunk:
    """Observation-stream bytes from stream offset ``start``, held in ``buffer[room:end]``.

    ``buffer[:room]`` is free: the start of a row begun in the previous chunk is copied
    there, so a row straddling two chunks is decoded without copying either chunk."""

    start: int
    buffer: np.ndarray
    room: int
    end: int


def chunks_of_parts(parts: Iterable[Tuple[int, bytes]], room: int, chunk_bytes: int) -> Iterator[ObservationChunk]:
    """Pack (stream offset, bytes) parts, a message's share each, into chunks of about ``chunk_bytes``."""
    pending: List[bytes] = []
    held, start = 0, 0
    for at, part in parts:
        if not pending:
            start = at
        pending.append(part)
        held += len(part)
        if held >= chunk_bytes:
            yield _packed(start, pending, held, room)
            pending, held = [], 0
    if pending:
        yield _packed(start, pending, held, room)


def _packed(start: int, parts: List[bytes], size: int, room: int) -> ObservationChunk:
    buffer = np.empty(room + size, dtype=np.uint8)
    at = room
    for part in parts:
        buffer[at:at + len(part)] = np.frombuffer(part, dtype=np.uint8)
        at += len(part)
    return ObservationChunk(start, buffer, room, at)


def observation_batches(layout: DatasetLayout, chunks: Iterable[ObservationChunk], locate, codepage: CodePage,
                        batch_rows: int = DEFAULT_BATCH_ROWS, temporal: TemporalTypes = DEFAULT_TEMPORAL_TYPES,
                        first_row: int = 0, last_row: Optional[int] = None, tolerant: bool = False) -> Iterator:
    """Record batches of observations [first_row, last_row) of consecutive chunks of the stream,
    whose ``room`` must hold a row; ``locate(stream offset)`` places errors. ``tolerant``: each
    is a ``TolerantBatch``, in which observations that cannot be decoded are rows of nulls."""
    obslen = layout.definition.obs_length
    if obslen == 0:
        return
    decoder = ObservationDecoder(layout, codepage, temporal)
    decode = decoder.decode_tolerant if tolerant else decoder.decode
    last_row = layout.observations if last_row is None else last_row
    batch_rows = max(batch_rows, 1)
    start_byte, end_byte = first_row * obslen, last_row * obslen
    row, left = first_row, np.zeros(0, dtype=np.uint8)  # left: a row begun in the previous chunk
    for chunk in chunks:
        if chunk.start >= end_byte:
            break
        lo = max(start_byte - chunk.start, 0)
        hi = min(end_byte - chunk.start, chunk.end - chunk.room)
        if lo >= hi:
            continue
        begin = chunk.room + lo - len(left)
        chunk.buffer[begin:chunk.room + lo] = left
        data = chunk.buffer[begin:chunk.room + hi]
        whole = len(data) - len(data) % obslen
        rows = data[:whole].reshape(-1, obslen)
        for at in range(0, len(rows), batch_rows):
            piece = rows[at:at + batch_rows]
            yield decode(piece, row, locate)
            row += len(piece)
        left = data[whole:].copy()
    if row != last_row:
        raise TruncatedError(f"the observation stream ends after {row} observations, {last_row} were planned",
                             locate(row * obslen))
