"""Arrow table -> the sequenced payloads of a SAS dataset attachment (the reverse codec).

Type mapping (recorded in the README):
integers, floats, decimals -> numeric (8 bytes, or the field's ``sas_length`` metadata 3..8);
boolean -> numeric 0/1; date -> numeric with DATE9.; timestamp -> DATETIME (naive value);
time -> TIME; string -> character of the longest encoded value (or ``sas_length``).
Field metadata ``label``, ``format``, ``informat`` is written through.
"""
from __future__ import annotations

from typing import Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..arrow.strings import fixed_width_from_strings, max_encoded_length
from ..charsets import CodePage
from ..cmi.records import DATASET_DEFINITION, VARIABLE_DEFINITION, write_record
from ..cmi.wire import FieldWriter, WireFormat
from ..errors import CmiEncodeError
from ..encoding import FloatFormat
from .sas_dataset import (EPOCH_SHIFT_DAYS, EPOCH_SHIFT_SECONDS, MAX_CHARACTER_LENGTH, RECORD_DATASET,
                          RECORD_OBSERVATIONS, RECORD_TYPE_SIZE, RECORD_VARIABLES, SasVariable)
from .sas_formats import split_display_format
from .sas_numbers import S390RangeError, encode_numbers

MAX_MESSAGE_BYTES = 32768
MAX_NAME_LENGTH = 32


def _meta(field: pa.Field, key: str) -> Optional[str]:
    if not field.metadata:
        return None
    v = field.metadata.get(key.encode())
    return v.decode("utf-8") if v is not None else None


_DEFAULT_FORMATS = {"date": "DATE9.", "timestamp": "DATETIME20.", "time": "TIME8."}


def _type_family(t: pa.DataType) -> str:
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) or pa.types.is_boolean(t):
        return "number"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_time(t):
        return "time"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    raise CmiEncodeError(f"type {t} has no SAS equivalent (nested and binary columns cannot be "
                             f"written as SAS variables)")


def string_lengths(data, codepage: CodePage) -> Dict[str, int]:
    """Longest encoded value of each string column of a batch or table (0 when all null).

    Raises CmiEncodeError for characters the code page cannot hold.
    """
    out: Dict[str, int] = {}
    for field, column in zip(data.schema, data.columns):
        if _type_family(field.type) != "string":
            continue
        column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        try:
            out[field.name] = max_encoded_length(column, codepage)
        except UnicodeEncodeError as e:
            raise CmiEncodeError(f"column {field.name}: {e.object[e.start:e.end]!r} cannot be "
                                     f"encoded in {codepage.codec} (CCSID {codepage.ccsid})") from None
    return out


def merge_lengths(a: Mapping[str, int], b: Mapping[str, int]) -> Dict[str, int]:
    return {k: max(a.get(k, 0), b.get(k, 0)) for k in set(a) | set(b)}


def check_schema(schema: pa.Schema) -> None:
    """Fail before any data moves when a column cannot become a SAS variable."""
    for field in schema:
        try:
            _type_family(field.type)
        except CmiEncodeError as e:
            raise CmiEncodeError(f"column {field.name}: {e}") from None
        if not field.name or len(field.name) > MAX_NAME_LENGTH:
            raise CmiEncodeError(f"column name {field.name!r}: SAS variable names are 1 to "
                                     f"{MAX_NAME_LENGTH} characters")


def plan_variables(schema: pa.Schema, lengths: Mapping[str, int], truncate: bool = False,
                   fmt: Optional[FloatFormat] = None) -> List[SasVariable]:
    """SAS variables for an Arrow schema; ``lengths`` = longest encoded value per string column.
    Numerics may be 3-8 bytes, or 2-8 in S/390 format (as z/OS SAS allows)."""
    shortest_numeric = 2 if fmt is FloatFormat.S390 else 3
    check_schema(schema)
    variables: List[SasVariable] = []
    offset = 0
    for field in schema:
        family = _type_family(field.type)
        declared = _meta(field, "sas_length")
        if family == "string":
            length = int(declared) if declared is not None else max(lengths.get(field.name, 0), 1)
            if length > MAX_CHARACTER_LENGTH:
                if not truncate:
                    raise CmiEncodeError(f"column {field.name} has values of {length} bytes; SAS "
                                             f"character variables hold at most {MAX_CHARACTER_LENGTH} "
                                             f"(option truncate=true cuts them)")
                length = MAX_CHARACTER_LENGTH
        else:
            length = int(declared) if declared is not None else 8
            if not shortest_numeric <= length <= 8:
                raise CmiEncodeError(f"column {field.name}: numeric sas_length {length} is not "
                                     f"{shortest_numeric}..8")
        fmt = _meta(field, "format") or _DEFAULT_FORMATS.get(family, "")
        informat = _meta(field, "informat") or ""
        fname, fwidth, fdec = split_display_format(fmt) if fmt else ("", 0, 0)
        iname, iwidth, idec = split_display_format(informat) if informat else ("", 0, 0)
        variables.append(SasVariable(
            name=field.name, label=_meta(field, "label") or "", is_numeric=family != "string",
            length=length, offset=offset, format_name=fname, format_width=fwidth, format_decimals=fdec,
            informat_name=iname, informat_width=iwidth, informat_decimals=idec))
        offset += length
    return variables


def _numbers(column: pa.Array) -> Tuple[np.ndarray, np.ndarray]:
    """SAS numeric values (float64, 1960 epoch for temporal types) and the null mask."""
    t = column.type
    missing = column.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_decimal(t) or pa.types.is_floating(t):
        # SAS numerics are doubles: integers beyond 2**53 round, as they do in SAS itself.
        values = pc.cast(column, pa.float64(), safe=False).fill_null(0).to_numpy(zero_copy_only=False)
    elif pa.types.is_date(t):
        days = pc.cast(pc.cast(column, pa.date32()), pa.int32()).fill_null(0).to_numpy(zero_copy_only=False)
        values = days.astype(np.float64) + EPOCH_SHIFT_DAYS
    elif pa.types.is_timestamp(t):
        # SAS datetimes are naive: a zoned timestamp is written as its wall-clock time in its zone.
        naive = pc.local_timestamp(column) if t.tz else column
        # SAS datetimes hold about microseconds at best: finer units are cut to microseconds.
        naive = pc.cast(naive, pa.timestamp("us"), safe=False) if naive.type.unit != "us" else naive
        micros = pc.cast(naive, pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        # One correctly rounded division, so the nearest double to the instant is written.
        values = (micros + EPOCH_SHIFT_SECONDS * 1_000_000) / 1e6
    else:  # time
        nanos = pc.cast(column.cast(pa.time64("ns")), pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        values = nanos / 1e9
    return np.asarray(values, dtype=np.float64), np.asarray(missing, dtype=bool)


def encode_observations(table: pa.Table, variables: Sequence[SasVariable], codepage: CodePage,
                        fmt: FloatFormat, obs_length: int, truncate: bool = False) -> bytes:
    rows = np.zeros((table.num_rows, obs_length), dtype=np.uint8)
    for variable, column in zip(variables, table.columns):
        column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        target = rows[:, variable.offset:variable.offset + variable.length]
        if variable.is_numeric:
            values, missing = _numbers(column)
            try:
                target[:] = encode_numbers(values, missing, variable.length, fmt)
            except S390RangeError as e:
                raise CmiEncodeError(f"column {variable.name}: {e}") from None
        else:
            if truncate:
                column = _truncate_strings(column, codepage, variable.length)
            try:
                target[:] = fixed_width_from_strings(column, codepage, variable.length)
            except UnicodeEncodeError as e:
                raise CmiEncodeError(f"column {variable.name}: {e.object[e.start:e.end]!r} cannot be "
                                         f"encoded in {codepage.codec} (CCSID {codepage.ccsid})") from None
            except ValueError as e:
                raise CmiEncodeError(f"column {variable.name}, row {getattr(e, 'row', '?')}: {e}") from None
    return rows.tobytes()


def _truncate_strings(column: pa.Array, codepage: CodePage, width: int) -> pa.Array:
    # Truncation is opt-in and rare: per-value work on that path only.
    out = []
    for v in column.to_pylist():
        if v is not None:
            while len(codepage.encode(v)) > width:
                v = v[:-1]
        out.append(v)
    return pa.array(out, type=pa.string())


def _type_int(record_type: int, wire: WireFormat) -> bytes:
    return FieldWriter(wire).int32(record_type).getvalue()


def chunk_stream(record_type: int, data: bytes, wire: WireFormat, max_payload: int) -> List[bytes]:
    """Payloads of one record stream: the type int, then up to max_payload bytes in all."""
    room = max_payload - RECORD_TYPE_SIZE
    if not data:
        return [_type_int(record_type, wire)]
    return [_type_int(record_type, wire) + data[i:i + room] for i in range(0, len(data), room)]


class DatasetEncoder:
    """Encodes one SAS dataset attachment's sequenced payloads, observations streamed batch by batch."""

    def __init__(self, variables: Sequence[SasVariable], codepage: CodePage, fmt: FloatFormat,
                 wire: WireFormat, max_payload: int = MAX_MESSAGE_BYTES, truncate: bool = False):
        if max_payload <= RECORD_TYPE_SIZE:
            raise ValueError(f"message size {max_payload} leaves no room for data")
        self.variables = list(variables)
        self.codepage = codepage
        self.fmt = fmt
        self.wire = wire
        self.max_payload = max_payload
        self.truncate = truncate
        self.obs_length = sum(v.length for v in self.variables)

    def _text(self, value: str, what: str) -> bytes:
        try:
            return self.codepage.encode(value)
        except UnicodeEncodeError:
            raise CmiEncodeError(f"{what} {value!r} cannot be encoded in {self.codepage.codec}") from None

    def definition_payloads(self, nobs: int, label: str = "", dataset_type: str = "DATA") -> List[bytes]:
        """The dataset definition (type 1) and variable definition (type 2) messages."""
        definition = FieldWriter(self.wire)
        write_record(definition, DATASET_DEFINITION, {
            "version": 0, "dataset_type": self._text(dataset_type, "dataset type"),
            "label": self._text(label, "dataset label"), "nobs": nobs, "nvars": len(self.variables),
            "obs_length": self.obs_length,
        })
        variable_stream = FieldWriter(self.wire)
        for v in self.variables:
            write_record(variable_stream, VARIABLE_DEFINITION, {
                "name": self._text(v.name, "variable name"), "format_name": self._text(v.format_name, "format"),
                "informat_name": self._text(v.informat_name, "informat"),
                "label": self._text(v.label, f"label of {v.name}"),
                "type": 1 if v.is_numeric else 2, "length": v.length,
                "format_width": v.format_width, "format_decimals": v.format_decimals,
                "informat_width": v.informat_width, "informat_decimals": v.informat_decimals,
            })
        return (chunk_stream(RECORD_DATASET, definition.getvalue(), self.wire, self.max_payload)
                + chunk_stream(RECORD_VARIABLES, variable_stream.getvalue(), self.wire, self.max_payload))

    def observation_payloads(self, batches: Iterable) -> Iterator[bytes]:
        """Observation messages (type 3), full to max_payload; records straddle messages."""
        room = self.max_payload - RECORD_TYPE_SIZE
        type_int = _type_int(RECORD_OBSERVATIONS, self.wire)
        pending = bytearray()
        for batch in batches:
            pending += encode_observations(batch, self.variables, self.codepage, self.fmt, self.obs_length,
                                           self.truncate)
            full = len(pending) - len(pending) % room
            for at in range(0, full, room):
                yield type_int + bytes(pending[at:at + room])
            del pending[:full]
        if pending:
            yield type_int + bytes(pending)
