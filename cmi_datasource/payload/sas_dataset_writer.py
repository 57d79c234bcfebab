"""Arrow table -> the sequenced payloads of a SAS dataset attachment (the reverse codec).

Type mapping (recorded in docs/writing.md#type-mapping):
integers, floats, decimals -> numeric (8 bytes, or the field's ``sas_length`` metadata 3..8);
boolean -> numeric 0/1; date -> numeric with DATE9.; timestamp -> DATETIME (naive value);
time -> TIME; duration (Spark's interval day to second) -> TIME, its seconds; string -> character
of the longest encoded value (or ``sas_length``).
Field metadata ``label``, ``format``, ``informat`` is written through.

Nothing is written that the reader (``sas_dataset.py``) would refuse or read back otherwise:
column names are SAS variable names by the rule chosen (``NAME_RULES``), unique without
regard to case; every type has a SAS equivalent; and, unless the caller accepts rounding,
every decimal and 64-bit integer value is one a SAS number (a double) holds exactly.
"""
from __future__ import annotations

import re
from typing import Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa

# pyarrow.compute is imported in the functions that use it: its import takes about 60 ms, which every
# Spark worker that only reads would pay (engine/options imports this module for its limits).

from ..arrow.strings import ValueTooLongError, max_encoded_length, place_strings
from ..charsets import CodePage, not_encodable
from ..cmi.records import DATASET_DEFINITION, VARIABLE_DEFINITION, write_record
from ..cmi.wire import FieldWriter, WireFormat
from ..errors import CmiEncodeError
from ..threads import SpareBuffers, ordered_map
from ..encoding import FloatFormat
from .sas_dataset import (EPOCH_SHIFT_DAYS, EPOCH_SHIFT_SECONDS, MAX_CHARACTER_LENGTH, RECORD_DATASET,
                          RECORD_OBSERVATIONS, RECORD_TYPE_SIZE, RECORD_VARIABLES, SasVariable,
                          variable_name_key)
from .sas_formats import split_display_format
from .sas_numbers import S390RangeError, place_numbers, place_slots

MAX_MESSAGE_BYTES = 32768
# Observations encoded at a time on a work thread: large enough that numpy and the kernels, which
# release the GIL, do most of the work; small enough that the few chunks in flight stay small
# (4 MiB chunks and 2 MiB groups of text held about 50 MB more at the peak of a 2M-row commit).
OBSERVATION_CHUNK_BYTES = 1 << 20
# A SAS variable name: at most 32 characters under V7 (all single-byte), 32 bytes as a name literal.
MAX_NAME_LENGTH = 32


def _meta(field: pa.Field, key: str) -> Optional[str]:
    if not field.metadata:
        return None
    v = field.metadata.get(key.encode())
    return v.decode("utf-8") if v is not None else None


# TIME10. for durations: 10 characters show up to 9999:59:59 and down to -999:59:59.
_DEFAULT_FORMATS = {"date": "DATE9.", "timestamp": "DATETIME20.", "time": "TIME8.", "duration": "TIME10."}


def _type_family(t: pa.DataType) -> Optional[str]:
    """The kind of SAS variable a column of type ``t`` becomes; None when SAS has none for it."""
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) or pa.types.is_boolean(t):
        return "number"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_time(t):
        return "time"
    if pa.types.is_duration(t):
        return "duration"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    return None


def no_sas_equivalent(column: str, type_name: str) -> CmiEncodeError:
    """The error for a column whose type (as the user knows it: Spark's name, or Arrow's) has no SAS
    variable type."""
    return CmiEncodeError(f"column {column!r} has type {type_name}, which has no SAS equivalent: cast it to "
                          f"string, a number, date or timestamp (to_json() for arrays, maps and structs, "
                          f"hex() or base64() for binary), or drop it")


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
            raise not_encodable(f"column {field.name!r}", e, codepage) from None
    return out


def merge_lengths(a: Mapping[str, int], b: Mapping[str, int]) -> Dict[str, int]:
    return {k: max(a.get(k, 0), b.get(k, 0)) for k in set(a) | set(b)}


# A SAS number is a double: it keeps every decimal of up to 15 significant digits (DBL_DIG) and
# every integer of up to 2**53 in magnitude; beyond either, values round.
EXACT_DIGITS = 15
MAX_EXACT_INTEGER = 2 ** 53
_DECIMAL_TYPES = {32: pa.decimal32, 64: pa.decimal64, 128: pa.decimal128, 256: pa.decimal256}


def significant_digits(column: pa.Array) -> pa.Array:
    """Significant decimal digits of each value of a decimal array (0 for zero, null for null)."""
    import pyarrow.compute as pc  # lazily: see the imports above
    t = column.type
    # The same bytes read with scale 0 are the unscaled integers, which Arrow prints without an
    # exponent (1E-10 at scale 10 prints as "1"): the digits between the sign and the trailing
    # zeros are the significant ones.
    unscaled = pa.Array.from_buffers(_DECIMAL_TYPES[t.bit_width](t.precision, 0), len(column), column.buffers(),
                                     column.null_count, column.offset)
    return pc.utf8_length(pc.utf8_rtrim(pc.utf8_ltrim(pc.cast(unscaled, pa.string()), "-"), "0"))


def _first(mask: pa.Array) -> int:
    """Index of the first true value of a boolean array (nulls count as false), or -1."""
    import pyarrow.compute as pc  # lazily: see the imports above
    return pc.index(mask.fill_null(False), True).as_py()


def check_exact_numbers(data, first_row: int = 0, partition: Optional[int] = None) -> None:
    """Fail on the first value of a batch or table that a SAS number would round: a decimal of more
    than 15 significant digits, a 64-bit integer beyond +-2**53. Decimals of precision 15 or less
    always fit and are not looked at. ``first_row``: rows before ``data`` (in ``partition``, in a
    Spark task), so that the error says which row, counting from 1."""
    import pyarrow.compute as pc  # lazily: see the imports above
    for field, column in zip(data.schema, data.columns):
        t = field.type
        checked_decimal = pa.types.is_decimal(t) and t.precision > EXACT_DIGITS
        if not (checked_decimal or t in (pa.int64(), pa.uint64())):
            continue
        column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        if checked_decimal:
            digits = significant_digits(column)
            row = _first(pc.greater(digits, EXACT_DIGITS))
        else:
            beyond = pc.greater(column, MAX_EXACT_INTEGER)
            if pa.types.is_signed_integer(t):
                beyond = pc.or_(beyond, pc.less(column, -MAX_EXACT_INTEGER))
            row = _first(beyond)
        if row < 0:
            continue
        problem = (f"has {digits[row].as_py()} significant digits and a SAS number (a double) holds {EXACT_DIGITS}"
                   if checked_decimal else
                   f"is beyond +-2**53 ({MAX_EXACT_INTEGER}), past which a SAS number (a double) rounds integers")
        where = f"row {first_row + row + 1}"
        if partition is not None:  # Spark's numbering, from 0: what spark_partition_id() gives
            where = f"{where} of spark_partition_id() {partition}"
        raise CmiEncodeError(f"column {field.name!r}, {where}: {column[row].as_py()} {problem}: set option "
                             f"lossyNumbers=true to write such values rounded, or cast the column to string "
                             f"to keep every digit")


# SAS's VALIDVARNAME= values, and what each lets a column name be (engine/options.py offers the same).
NAME_RULES = ("v7", "upcase", "any")
_V7_CHARACTER = re.compile(r"[A-Za-z0-9_]")
# V7 forbids the names of SAS's automatic variables and variable lists; a name literal ('_N_'n)
# is the same name, so every rule refuses them.
RESERVED_NAMES = ("_N_", "_ERROR_", "_NUMERIC_", "_CHARACTER_", "_ALL_")
_RENAME = "rename it"
_RENAME_OR_LITERAL = "rename it, or set option validVarName=any to write it as a SAS name literal"


def _v7_problem(name: str) -> Optional[Tuple[str, str]]:
    """Why ``name`` is no V7 SAS name (1 to 32 letters, digits and underscores, no leading digit),
    and what to do; None when it is one."""
    if not name:
        return "it is empty", _RENAME
    if len(name) > MAX_NAME_LENGTH:
        return f"it has {len(name)} characters, more than {MAX_NAME_LENGTH}", _RENAME
    others = sorted({c for c in name if not _V7_CHARACTER.fullmatch(c)})
    if others:
        return f"it holds {''.join(others)!r}, not only letters, digits and underscores", _RENAME_OR_LITERAL
    if name[0].isdigit():
        return "it starts with a digit", _RENAME_OR_LITERAL
    return None


def _name_literal_problem(name: str, codepage: CodePage) -> Optional[Tuple[str, str]]:
    """Why ``name`` is no SAS name literal under VALIDVARNAME=ANY (any characters in up to 32 bytes,
    no NUL, not all blanks, no trailing blank), and what to do; None when it is one. Leading
    blanks are allowed: SAS keeps them."""
    if not name.strip(" "):
        return "it is empty or all blanks", _RENAME
    if "\0" in name:
        return "it holds a NUL character", _RENAME
    if name.endswith(" "):
        # SAS ignores trailing blanks in names, and so does the reader: it would come back without them.
        return "it ends with a blank, which SAS drops from names", "rename it without the trailing blanks"
    try:
        size = len(codepage.encode(name))
    except UnicodeEncodeError as e:
        return (f"{e.object[e.start:e.end]!r} cannot be encoded in {codepage.codec} (CCSID {codepage.ccsid})",
                "rename it, or choose a CCSID that holds it with option ccsid")
    if size > MAX_NAME_LENGTH:
        return (f"it is {size} bytes in {codepage.codec} (CCSID {codepage.ccsid}), more than {MAX_NAME_LENGTH}",
                _RENAME)
    return None


def sas_variable_names(names: Sequence[str], valid_var_name: str, codepage: CodePage) -> List[str]:
    """The SAS variable names the columns ``names`` are written as, under ``valid_var_name`` (one of
    NAME_RULES, after SAS's VALIDVARNAME= option): v7 writes names as given, upcase upper-cased,
    any as name literals. Raises CmiEncodeError for the first name the rule refuses, and for two
    names SAS would take for one (SAS names ignore case)."""
    if valid_var_name not in NAME_RULES:
        raise ValueError(f"valid_var_name {valid_var_name!r} is none of {NAME_RULES}")
    written: List[str] = []
    by_key: Dict[str, str] = {}
    for name in names:
        refused = _name_literal_problem(name, codepage) if valid_var_name == "any" else _v7_problem(name)
        if refused is None and name.upper() in RESERVED_NAMES:
            refused = "SAS reserves it for an automatic variable or a variable list", _RENAME
        if refused is not None:
            problem, remedy = refused
            raise CmiEncodeError(f"column {name!r} is not a valid SAS variable name under "
                                 f"validVarName={valid_var_name} ({problem}): {remedy}")
        sas_name = name.upper() if valid_var_name == "upcase" else name
        key = variable_name_key(sas_name)
        if key in by_key:
            raise CmiEncodeError(f"columns {by_key[key]!r} and {name!r} would be the same SAS variable (SAS "
                                 f"names ignore case): rename one of them")
        by_key[key] = name
        written.append(sas_name)
    return written


def check_schema(schema: pa.Schema, valid_var_name: str, codepage: CodePage,
                 type_names: Optional[Sequence[str]] = None) -> List[str]:
    """Fail before any data moves when a column cannot become a SAS variable; the SAS variable
    names otherwise. ``type_names``: the columns' types as the user knows them (Spark's names),
    for the error; Arrow's by default."""
    for i, field in enumerate(schema):
        if _type_family(field.type) is None:
            raise no_sas_equivalent(field.name, type_names[i] if type_names else str(field.type))
    return sas_variable_names(schema.names, valid_var_name, codepage)


def plan_variables(schema: pa.Schema, lengths: Mapping[str, int], codepage: CodePage, truncate: bool = False,
                   fmt: Optional[FloatFormat] = None, valid_var_name: str = "v7") -> List[SasVariable]:
    """SAS variables for an Arrow schema; ``lengths`` = longest encoded value per string column.
    Numerics may be 3-8 bytes, or 2-8 in S/390 format (as z/OS SAS allows)."""
    shortest_numeric = 2 if fmt is FloatFormat.S390 else 3
    names = check_schema(schema, valid_var_name, codepage)
    variables: List[SasVariable] = []
    offset = 0
    for field, name in zip(schema, names):
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
            name=name, label=_meta(field, "label") or "", is_numeric=family != "string",
            length=length, offset=offset, format_name=fname, format_width=fwidth, format_decimals=fdec,
            informat_name=iname, informat_width=iwidth, informat_decimals=idec))
        offset += length
    return variables


def _slots(array: pa.Array, dtype: type) -> np.ndarray:
    """The value slots of a primitive ``array`` as numpy, without a copy. What a null's slot holds
    is unspecified: callers mask nulls (Arrow's fill_null would cost a copy and about 40 µs a call)."""
    if not len(array):
        return np.zeros(0, dtype=dtype)
    itemsize = np.dtype(dtype).itemsize
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * itemsize)


def _numbers(column: pa.Array) -> Tuple[np.ndarray, np.ndarray]:
    """SAS numeric values (float64, 1960 epoch for temporal types) and the null mask; a null's
    value is unspecified (the mask decides)."""
    import pyarrow.compute as pc  # lazily: see the imports above
    t = column.type
    missing = (column.is_null().to_numpy(zero_copy_only=False) if column.null_count
               else np.zeros(len(column), dtype=bool))
    if pa.types.is_decimal(t):
        # Arrow's decimal-to-double cast can miss the nearest double by one unit (0.69 becomes
        # 0.6900000000000001); decimal text is exact, and Arrow parses it to the nearest double.
        values = _slots(pc.cast(pc.cast(column, pa.string()), pa.float64()), np.float64)
    elif pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_floating(t):
        # SAS numerics are doubles: integers beyond 2**53 round (check_exact_numbers refuses them
        # unless the caller accepts rounding).
        values = _slots(pc.cast(column, pa.float64(), safe=False), np.float64)
    elif pa.types.is_date(t):
        days = _slots(pc.cast(pc.cast(column, pa.date32()), pa.int32()), np.int32)
        values = days.astype(np.float64) + EPOCH_SHIFT_DAYS
    elif pa.types.is_timestamp(t):
        # SAS datetimes are naive: a zoned timestamp is written as its wall-clock time in its zone.
        naive = pc.local_timestamp(column) if t.tz else column
        # SAS datetimes hold about microseconds at best: finer units are cut to microseconds.
        naive = pc.cast(naive, pa.timestamp("us"), safe=False) if naive.type.unit != "us" else naive
        micros = _slots(pc.cast(naive, pa.int64()), np.int64)
        # One correctly rounded division, so the nearest double to the instant is written.
        values = (micros + EPOCH_SHIFT_SECONDS * 1_000_000) / 1e6
    elif pa.types.is_duration(t):
        # Elapsed seconds, as SAS TIME values are; finer units than microseconds are cut to them.
        as_micros = column.cast(pa.duration("us"), safe=False) if t.unit != "us" else column
        micros = _slots(pc.cast(as_micros, pa.int64()), np.int64)
        values = micros / 1e6  # one correctly rounded division: the nearest double
    else:  # time
        nanos = _slots(pc.cast(column.cast(pa.time64("ns")), pa.int64()), np.int64)
        values = nanos / 1e9
    return np.asarray(values, dtype=np.float64), missing


# The Arrow types whose value slots the placing kernel reads as they come (``place_slots``), each
# with how it makes them doubles, as ``_numbers`` does: (the slots' numpy type, the integer added,
# the divisor). The rest (and S/390 floats) go through ``_numbers`` and ``place_numbers``.
_SLOT_READINGS: Dict[pa.DataType, Tuple[type, int, float]] = {
    pa.float64(): (np.float64, 0, 1.0), pa.float32(): (np.float32, 0, 1.0),
    pa.int64(): (np.int64, 0, 1.0), pa.int32(): (np.int32, 0, 1.0),
    pa.date32(): (np.int32, EPOCH_SHIFT_DAYS, 1.0),
    pa.timestamp("us"): (np.int64, EPOCH_SHIFT_SECONDS * 1_000_000, 1e6),
    pa.duration("us"): (np.int64, 0, 1e6),
    pa.time64("ns"): (np.int64, 0, 1e9),
}


def _place_numeric(column: pa.Array, fmt: FloatFormat, rows: np.ndarray, at: int, width: int) -> None:
    """A numeric column's SAS values into ``rows[:, at:at + width]``."""
    reading = _SLOT_READINGS.get(column.type) if fmt is not FloatFormat.S390 else None
    if reading is None:
        values, missing = _numbers(column)
        place_numbers(values, missing, fmt, rows, at, width)
        return
    dtype, add, divisor = reading
    validity = column.buffers()[0] if column.null_count else None
    place_slots(_slots(column, dtype), None if validity is None else np.frombuffer(validity, np.uint8),
                column.offset, add, divisor, fmt, rows, at, width)


def encode_observations(table: pa.Table, variables: Sequence[SasVariable], codepage: CodePage,
                        fmt: FloatFormat, obs_length: int, truncate: bool = False, first_row: int = 0,
                        into: Optional[np.ndarray] = None) -> memoryview:
    """The observations of ``table``, ``obs_length`` bytes each; ``first_row``: observations before
    them in the dataset, so that an error says which row, counting from 1. Each variable is
    written straight into its place in the rows (compiled kernels): no matrix per column.
    ``into``: the uint8 buffer of ``table.num_rows * obs_length`` bytes to write them in (what it
    holds is overwritten), instead of a new one."""
    shape = (table.num_rows, obs_length)
    if into is None:
        rows = np.zeros(shape, dtype=np.uint8)
    else:
        if into.dtype != np.uint8 or into.shape != (shape[0] * shape[1],):
            raise ValueError(f"a buffer of {into.shape} {into.dtype} cannot hold {shape[0]} rows of {shape[1]} bytes")
        rows = into.reshape(shape)
        rows.fill(0)
    for variable, column in zip(variables, table.columns):
        # A column of several chunks is placed chunk by chunk into their rows: no copy made whole.
        start = 0
        for chunk in column.chunks if isinstance(column, pa.ChunkedArray) else [column]:
            _place_variable(variable, chunk, codepage, fmt, rows[start:start + len(chunk)], truncate, first_row + start)
            start += len(chunk)
    return rows.reshape(-1).data


def _place_variable(variable: SasVariable, column: pa.Array, codepage: CodePage, fmt: FloatFormat, rows: np.ndarray,
                    truncate: bool, first_row: int) -> None:
    """One variable's values into their bytes of ``rows`` (a row per value), as ``encode_observations`` says."""
    if variable.is_numeric:
        try:
            _place_numeric(column, fmt, rows, variable.offset, variable.length)
        except S390RangeError as e:
            raise CmiEncodeError(f"column {variable.name}: {e}") from None
        return
    if truncate:
        column = _truncate_strings(column, codepage, variable.length)
    try:
        place_strings(column, codepage, rows, variable.offset, variable.length)
    except UnicodeEncodeError as e:
        raise not_encodable(f"column {variable.name!r}", e, codepage) from None
    except ValueError as e:  # Arrow's cast of binary values to text raises ArrowInvalid, a ValueError
        row = first_row + e.row + 1 if isinstance(e, ValueTooLongError) else "?"
        raise CmiEncodeError(f"column {variable.name}, row {row}: {e}") from None


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
        except UnicodeEncodeError as e:
            raise not_encodable(what, e, self.codepage) from None

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
        """Observation messages (type 3), full to max_payload; records straddle messages.

        The batches are encoded in chunks of about OBSERVATION_CHUNK_BYTES on the work threads
        (``threads.ordered_map``), a few chunks ahead, and cut into messages here in order: the
        bytes are those of encoding every row in one go, whatever the batches and threads."""
        room = self.max_payload - RECORD_TYPE_SIZE
        type_int = _type_int(RECORD_OBSERVATIONS, self.wire)

        # A chunk's rows are copied into the messages cut from it: then its buffer serves a later chunk.
        spare = SpareBuffers()

        def encode(chunk: Tuple[int, List[pa.RecordBatch]]) -> memoryview:
            first_row, group = chunk
            table = pa.Table.from_batches(group) if len(group) > 1 else group[0]
            return encode_observations(table, self.variables, self.codepage, self.fmt, self.obs_length,
                                       self.truncate, first_row, spare.take(table.num_rows * self.obs_length))

        pending = b""  # the observation bytes of the message the chunks so far end in the middle of
        for encoded in ordered_map(encode, self._chunks(batches)):
            data, first = memoryview(encoded), 0
            if pending:  # that message is finished from this chunk's start, not the chunk copied behind it
                first = min(room - len(pending), len(data))
                pending += data[:first]
                if len(pending) < room:
                    spare.give(encoded.obj)
                    continue
                yield type_int + pending
            full = first + (len(data) - first) // room * room
            for at in range(first, full, room):
                yield type_int + data[at:at + room]
            pending = bytes(data[full:])
            spare.give(encoded.obj)
        if pending:
            yield type_int + pending

    def _chunks(self, batches: Iterable) -> Iterator[Tuple[int, List[pa.RecordBatch]]]:
        """The non-empty batches in groups of about OBSERVATION_CHUNK_BYTES of observations, each
        with the number of rows before it."""
        group: List[pa.RecordBatch] = []
        rows = first_row = 0
        for batch in batches:
            if not batch.num_rows:
                continue
            group.append(batch)
            rows += batch.num_rows
            if (rows - first_row) * self.obs_length >= OBSERVATION_CHUNK_BYTES:
                yield first_row, group
                group, first_row = [], rows
        if group:
            yield first_row, group
