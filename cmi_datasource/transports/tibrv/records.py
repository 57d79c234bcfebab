"""CMI over TIB/Rendezvous (docs/spec/tibrv.md#cmi-message-types): each message type's fields, as tables,
and what each message becomes on the CMI side.

Every field of a message carries the message's type name (HDR, DAT, VAR, ...) and field ids 1,
2, 3, ... in the order of SAS's tables; repeated groups continue the id sequence. An RV
message becomes the payload CMI over MQ would carry for it (``cmi/records.py``), so that
assembly and the SAS codecs read both transports alike: DAT the dataset definition, VAR the
variable definitions, ATO the observations as fixed-width rows (``observations.py``), FDC the
file prologue, ATX/ATB the file records, LST the count, HDR the attachment header.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ...charsets import code_page
from ...cmi.correl import CORREL_ID_SIZE
from ...cmi.header import AttachmentEntry, CmiHeader, build_header
from ...cmi.records import (ATTACHMENT_ENTRY, DATASET_DEFINITION, FILE_PROLOGUE, HEADER, VARIABLE_DEFINITION,
                            RecordTable, write_record)
from ...cmi.wire import FieldWriter, WireFormat
from ...encoding import ENCODING_BIG_ENDIAN, integer_order
from ...errors import CmiFormatError, Location
from .wire import RvField, type_name

# The CMI side of every RV message: big-endian IEEE (MQ Encoding 273), 4-byte longs, NUL-ended strings.
ENCODING = ENCODING_BIG_ENDIAN
WIRE = WireFormat(integer_order(ENCODING), 4, True)

KINDS = ("HDR", "MSG", "DATA", "DAT", "VAR", "ATO", "ATI", "ATC", "FDC", "ATX", "ATB", "LST")
RECORD_TYPES = {"DAT": 1, "VAR": 2, "ATO": 3, "ATI": 4, "ATC": 5}

# Field ids of each message (docs/spec/tibrv.md#cmi-message-types), named as the CMI record fields they fill.
HDR_FIELDS = {1: "header_correl_id", 2: "original_msg_type", 3: "original_correl_id", 4: "message_correl_id",
              5: "attachment_count"}
HDR_ENTRY = ("attachment_type", "correl_id", None, "qualifier1", None, "qualifier2", None, "description",
             "minor_version", "major_version")  # fields 6-15, repeated per attachment (None: a length)
DAT_FIELDS = {2: "version", 4: "dataset_type", 6: "label", 7: "nobs", 8: "nvars", 9: "obs_length",
              11: "compress", 12: "reuse", 14: "encrypt", 15: "sort_key_count", 17: "collating_sequence",
              18: "sort_flags", 19: "read_password_flag", 20: "read_password", 21: "write_password_flag",
              22: "write_password", 23: "alter_password_flag", 24: "alter_password"}
VAR_ENTRY = (None, "name", None, "format_name", None, "informat_name", None, "label", "type", "length",
             "format_width", "format_decimals", "informat_width", "informat_decimals", "nsort")  # 3-17 per variable
FDC_FIELDS = {1: "lrecl", 2: "size"}


@dataclass(frozen=True)
class RvDetails:
    kind: str  # HDR, MSG, DAT, VAR, ATO, ... (the name of the message's fields)
    field_count: int
    summary: str  # the first fields, readable
    # HDR: its attachments; LST: the messages it counts; DAT: the observations it declares (None
    # when unknown); ATO: the observations it holds
    count: Optional[int] = None
    header: Optional[CmiHeader] = None  # HDR: the header, its correlids as sent
    raw: bool = False  # ATO re-read without its layout: the RV body, waiting for ``rebuild``
    values: Tuple[str, ...] = ()  # MSG/DATA: its parameters


class RvCmiError(CmiFormatError):
    """An RV message that does not follow its type's layout (docs/spec/tibrv.md#cmi-message-types)."""


@dataclass(frozen=True)
class ObservationLayout:
    """What an ATO message needs to become fixed-width rows: from the attachment's DAT and VAR."""

    obs_length: int
    numeric: Tuple[bool, ...]
    lengths: Tuple[int, ...]
    # Where DAT's observation length and each VAR length were read: errors about the layout name them.
    obs_length_at: Optional[Location] = None
    lengths_at: Tuple[Location, ...] = ()


def kind_of(fields: Sequence[RvField]) -> str:
    return fields[0].name if fields else ""


def by_id(fields: Sequence[RvField], kind: str, where: Location) -> Dict[int, RvField]:
    found: Dict[int, RvField] = {}
    for f in fields:
        if f.name != kind:
            raise RvCmiError(f"{kind} message holds a field named {f.name!r}", where.at_payload(f.offset))
        if f.field_id is None:
            raise RvCmiError(f"{kind} message has a field without a field id", where.at_payload(f.offset))
        found[f.field_id] = f
    return found


# Every value an RV field gives a CMI record is checked against the CMI primitive it fills, so
# that a field of another type or too large a number is an RvCmiError naming the field, never a
# Python error (or a struct.error from FieldWriter) later.
_BITS = {"int": 32, "long": 8 * WIRE.long_size, "short": 16}


def _primitives(*tables: RecordTable) -> Dict[str, str]:
    return {name: primitive for table in tables for primitive, name in table}


HDR_PRIMITIVES = _primitives(HEADER, ATTACHMENT_ENTRY)
DAT_PRIMITIVES = _primitives(DATASET_DEFINITION)
VAR_PRIMITIVES = _primitives(VARIABLE_DEFINITION)
FDC_PRIMITIVES = _primitives(FILE_PROLOGUE)


def _field(fields: Mapping[int, RvField], fid: int, kind: str, where: Location) -> RvField:
    f = fields.get(fid)
    if f is None:
        raise RvCmiError(f"{kind} message has no field {fid}", where)
    return f


def _wrong(f: RvField, kind: str, fid: int, value: Any, wanted: str, where: Location) -> RvCmiError:
    shown = repr(value) if isinstance(value, (int, float)) else f"{len(f.data)} bytes"
    return RvCmiError(f"{kind} field {fid} ({type_name(f.type)}, {shown}) is not {wanted}", where.at_payload(f.offset))


def _number(fields: Mapping[int, RvField], fid: int, kind: str, where: Location, primitive: str = "int") -> int:
    """An integer field that fills a CMI ``int``, ``long`` or ``short``."""
    f = _field(fields, fid, kind, where)
    value = f.decoded(where.at_payload)
    bits = _BITS[primitive]
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong(f, kind, fid, value, "an integer", where)
    if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        raise _wrong(f, kind, fid, value, f"a {bits // 8}-byte CMI {primitive}", where)
    return value


def _text(fields: Mapping[int, RvField], fid: int, kind: str, where: Location) -> bytes:
    """A string field (a number is taken as its digits)."""
    f = _field(fields, fid, kind, where)
    value = f.decoded(where.at_payload)
    if isinstance(value, bytes):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value).encode("latin-1")
    raise _wrong(f, kind, fid, value, "a string", where)


def _char(fields: Mapping[int, RvField], fid: int, kind: str, where: Location) -> int:
    """A ``char`` field, sent with tibrvMsg_AddString ("R", "1") or as a number."""
    f = _field(fields, fid, kind, where)
    value = f.decoded(where.at_payload)
    if isinstance(value, bytes):
        return value[0] if value else 0
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 0xFF:
        return value
    raise _wrong(f, kind, fid, value, "one character", where)


def _raw(fields: Mapping[int, RvField], fid: int, kind: str, where: Location, size: int) -> bytes:
    """A ``bytesN`` field (a password): at most N bytes, NUL-padded to N."""
    f = _field(fields, fid, kind, where)
    value = f.decoded(where.at_payload)
    if not isinstance(value, bytes) or len(value) > size:
        raise _wrong(f, kind, fid, value, f"a string or opaque of at most {size} bytes", where)
    return value.ljust(size, b"\0")


def _cmi(fields: Mapping[int, RvField], fid: int, kind: str, where: Location, primitive: str):
    """The value of an RV field for the CMI record field of type ``primitive`` it fills."""
    if primitive in _BITS:
        return _number(fields, fid, kind, where, primitive)
    if primitive == "char":
        return _char(fields, fid, kind, where)
    if primitive in ("string", "int_string"):
        return _text(fields, fid, kind, where)
    if primitive.startswith("bytes"):
        return _raw(fields, fid, kind, where, int(primitive[len("bytes"):]))
    raise AssertionError(primitive)


def is_blank(correl_id: bytes) -> bool:
    """Whether a correlid was sent blank (docs/spec/tibrv.md#correlation-ids allows it): then
    ``sequence.py`` gives it a key
    from the capture's content."""
    return not correl_id.strip(b" \0")


def _correl(value: bytes) -> bytes:
    """A correlid as sent: its first 24 bytes, NUL-padded to 24."""
    return value[:CORREL_ID_SIZE].ljust(CORREL_ID_SIZE, b"\0")


def header(fields: Sequence[RvField], where: Location) -> CmiHeader:
    """The CMI attachment header an HDR message stands for, its correlids as sent (blank ones
    included: ``sequence.py`` replaces them)."""
    f = by_id(fields, "HDR", where)
    count = _number(f, 5, "HDR", where)
    if not 0 <= count <= len(fields):  # every attachment takes ten fields: bounds an untrusted count
        raise RvCmiError(f"HDR declares {count} attachments in {len(fields)} fields", where)
    entries = []
    latin1 = code_page(819)

    def value(fid: int, name: str):
        primitive = HDR_PRIMITIVES[name]
        return _text(f, fid, "HDR", where) if primitive.startswith("bytes") else _cmi(f, fid, "HDR", where, primitive)

    for n in range(count):
        values = {name: value(6 + 10 * n + i, name) for i, name in enumerate(HDR_ENTRY) if name}
        entries.append(AttachmentEntry(values["attachment_type"], _correl(values["correl_id"]),
                                       latin1.decode(values["qualifier1"]), latin1.decode(values["qualifier2"]),
                                       latin1.decode(values["description"]),
                                       values["minor_version"], values["major_version"]))
    return CmiHeader(_correl(value(1, "header_correl_id")), value(2, "original_msg_type"),
                     _correl(value(3, "original_correl_id")), _correl(value(4, "message_correl_id")),
                     tuple(entries), WIRE)


def header_bytes(header: CmiHeader) -> bytes:
    """The CMI header message's payload (its strings Latin-1, as RV sends them)."""
    return build_header(header, code_page(819))


def dataset_definition(fields: Sequence[RvField], where: Location) -> bytes:
    f = by_id(fields, "DAT", where)
    values = {name: _cmi(f, fid, "DAT", where, DAT_PRIMITIVES[name]) for fid, name in DAT_FIELDS.items()}
    w = FieldWriter(WIRE).int32(RECORD_TYPES["DAT"])
    write_record(w, DATASET_DEFINITION, values)
    return w.getvalue()


def declared_observations(fields: Sequence[RvField], where: Location) -> int:
    """DAT field 7: the number of observations the data set declares."""
    return _number(by_id(fields, "DAT", where), 7, "DAT", where, "long")


def variable_definitions(fields: Sequence[RvField], where: Location
                         ) -> Tuple[bytes, List[Tuple[bool, int, Location]]]:
    """The variable definitions record, and (numeric?, length, where the length was read) of each variable."""
    f = by_id(fields, "VAR", where)
    count = _number(f, 1, "VAR", where)
    if not 0 <= count <= len(fields) // len(VAR_ENTRY) + 1:
        raise RvCmiError(f"VAR declares {count} variables in {len(fields)} fields", where)
    w = FieldWriter(WIRE).int32(RECORD_TYPES["VAR"])
    layout = []
    for n in range(count):
        values = {name: _cmi(f, 3 + 15 * n + i, "VAR", where, VAR_PRIMITIVES[name])
                  for i, name in enumerate(VAR_ENTRY) if name}
        numeric = values["type"] in (1, ord("1"))
        values["type"] = 1 if numeric else 2
        write_record(w, VARIABLE_DEFINITION, values)
        length_fid = 3 + 15 * n + VAR_ENTRY.index("length")
        layout.append((numeric, values["length"], where.at_payload(f[length_fid].offset)))
    return w.getvalue(), layout


def file_prologue(fields: Sequence[RvField], where: Location) -> bytes:
    f = by_id(fields, "FDC", where)
    w = FieldWriter(WIRE)
    write_record(w, FILE_PROLOGUE, {name: _cmi(f, fid, "FDC", where, FDC_PRIMITIVES[name])
                                    for fid, name in FDC_FIELDS.items()})
    return w.getvalue()


def file_records(fields: Sequence[RvField], kind: str, where: Location) -> bytes:
    """ATX/ATB: field 1 the record count, then (2 length, 3 data) per record, ids continuing."""
    f = by_id(fields, kind, where)
    count = _number(f, 1, kind, where)
    if not 0 <= count <= len(fields) // 2:
        raise RvCmiError(f"{kind} declares {count} records in {len(fields)} fields", where)
    w = FieldWriter(WIRE)
    for n in range(count):
        length = _number(f, 2 + 2 * n, kind, where, "long")
        data = f[3 + 2 * n].data if (3 + 2 * n) in f else None
        if data is None or length < 0 or length > len(data):
            raise RvCmiError(f"{kind} record {n + 1} declares {length} bytes; its data field holds "
                             f"{0 if data is None else len(data)}", where)
        w.long(length).raw(data[:length])
    return w.getvalue()


def count_of(fields: Sequence[RvField], kind: str, where: Location) -> int:
    return _number(by_id(fields, kind, where), 1, kind, where)


def record_type_only(kind: str) -> bytes:
    """ATI and ATC: indexes and integrity constraints, which CMI readers skip (docs/spec/cmi.md#record-types)."""
    return struct.pack(">i", RECORD_TYPES[kind])


_AT_PAYLOAD: Callable[[int], Location] = Location().at_payload


def application_values(fields: Sequence[RvField], where: Optional[Location] = None) -> Tuple[str, ...]:
    """MSG/DATA: field 1 the count, then (data type, value) pairs (1 short, 2 long, 3 double,
    4 string): each value as text, in order."""
    at = where.at_payload if where is not None else _AT_PAYLOAD
    return tuple(v.decode("latin-1") if isinstance(v, bytes) else repr(v)
                 for v in (f.decoded(at) for f in fields[2::2]))


def application_text(fields: Sequence[RvField], where: Optional[Location] = None) -> bytes:
    """The application message's bytes: its values ";"-separated, as SAS's example writes the map
    (docs/spec/tibrv.md#msg-and-data)
    ('100;9999;9999.1234;ABC...')."""
    return ";".join(application_values(fields, where)).encode("latin-1")


def summary(fields: Sequence[RvField], field_count: int, limit: int = 12, where: Optional[Location] = None) -> str:
    """A readable line of the first fields: NAME(id)=value ..., types the reader does not know named."""
    at = where.at_payload if where is not None else _AT_PAYLOAD
    parts = []
    for f in fields[:limit]:
        value = f.decoded(at)
        shown = (value.decode("latin-1") if isinstance(value, bytes) and f.type == 8 else
                 f"[{len(f.data)} {type_name(f.type)} bytes]" if isinstance(value, bytes) else repr(value))
        parts.append(f"{f.name}({f.field_id})={shown[:40]}" if f.field_id is not None else f"{f.name}={shown[:40]}")
    return " ".join(parts) + (f" ... ({field_count} fields)" if field_count > limit else "")


def layout_of(definition_fields: Sequence[RvField], variables: Sequence[Tuple[bool, int, Location]],
              where: Location) -> ObservationLayout:
    """The layout of ATO rows: from the DAT message (its fields, read at ``where``) and the VAR
    messages' variables."""
    dat = by_id(definition_fields, "DAT", where)
    obs_length = _number(dat, 9, "DAT", where, "long")
    return ObservationLayout(obs_length, tuple(v[0] for v in variables), tuple(v[1] for v in variables),
                             where.at_payload(dat[9].offset), tuple(v[2] for v in variables))

