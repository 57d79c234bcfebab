"""CMI over TIB/Rendezvous (seed 001, contract section 3): each message type's fields, as tables,
and what each message becomes on the CMI side.

Every field of a message carries the message's type name (HDR, DAT, VAR, ...) and field ids 1,
2, 3, ... in the order of the seed's tables; repeated groups continue the id sequence. An RV
message becomes the payload CMI over MQ would carry for it (``cmi/records.py``), so that
assembly and the SAS codecs read both transports alike: DAT the dataset definition, VAR the
variable definitions, ATO the observations as fixed-width rows (``observations.py``), FDC the
file prologue, ATX/ATB the file records, LST the count, HDR the attachment header.
"""
from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from typing import Dict, List, Mapping, Sequence, Tuple

from ...charsets import code_page
from ...cmi.correl import CORREL_ID_SIZE
from ...cmi.header import AttachmentEntry, CmiHeader, build_header
from ...cmi.records import DATASET_DEFINITION, FILE_PROLOGUE, VARIABLE_DEFINITION, write_record
from ...cmi.wire import FieldWriter, WireFormat
from ...encoding import ENCODING_BIG_ENDIAN, integer_order
from ...errors import CmiFormatError, Location
from .wire import RvField, type_name

# The CMI side of every RV message: big-endian IEEE (MQ Encoding 273), 4-byte longs, NUL-ended strings.
ENCODING = ENCODING_BIG_ENDIAN
WIRE = WireFormat(integer_order(ENCODING), 4, True)

KINDS = ("HDR", "MSG", "DATA", "DAT", "VAR", "ATO", "ATI", "ATC", "FDC", "ATX", "ATB", "LST")
RECORD_TYPES = {"DAT": 1, "VAR": 2, "ATO": 3, "ATI": 4, "ATC": 5}

# Field ids of each message (seed 001), named as the CMI record fields they fill.
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


class RvCmiError(CmiFormatError):
    """An RV message that does not follow seed 001's layout for its type."""


@dataclass(frozen=True)
class ObservationLayout:
    """What an ATO message needs to become fixed-width rows: from the attachment's DAT and VAR."""

    obs_length: int
    numeric: Tuple[bool, ...]
    lengths: Tuple[int, ...]


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


def _value(fields: Mapping[int, RvField], fid: int, kind: str, where: Location):
    f = fields.get(fid)
    if f is None:
        raise RvCmiError(f"{kind} message has no field {fid}", where)
    return f.value


def _text(value) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode("latin-1")


def _char(value) -> int:
    """A ``char`` field, sent with tibrvMsg_AddString ("R", "1") or as a number."""
    if isinstance(value, (bytes, bytearray)):
        return value[0] if value else 0
    return int(value)


def synthetic_key(source: str, index: int, number: int) -> bytes:
    """A 16-byte attachment key for correlids sent blank (seed 001 allows it): stable per file,
    message and attachment, so that option("attachment", ...) names the same attachment every read."""
    return hashlib.sha256(f"{source}\0{index}\0{number}".encode()).digest()[:16]


def _correl(value, source: str, index: int, number: int) -> bytes:
    raw = _text(value)[:CORREL_ID_SIZE]
    if raw.strip(b" \0"):
        return raw.ljust(CORREL_ID_SIZE, b"\0")
    return synthetic_key(source, index, number) + bytes(CORREL_ID_SIZE - 16)


def header(fields: Sequence[RvField], source: str, index: int, where: Location) -> Tuple[bytes, CmiHeader]:
    """The CMI attachment header an HDR message stands for, and its bytes."""
    f = by_id(fields, "HDR", where)
    count = _value(f, 5, "HDR", where)
    if not 0 <= count <= len(fields):  # every attachment takes ten fields: bounds an untrusted count
        raise RvCmiError(f"HDR declares {count} attachments in {len(fields)} fields", where)
    entries = []
    latin1 = code_page(819)
    for n in range(count):
        values = {name: _value(f, 6 + 10 * n + i, "HDR", where) for i, name in enumerate(HDR_ENTRY) if name}
        entries.append(AttachmentEntry(int(values["attachment_type"]), _correl(values["correl_id"], source, index, n + 2),
                                       latin1.decode(_text(values["qualifier1"])),
                                       latin1.decode(_text(values["qualifier2"])),
                                       latin1.decode(_text(values["description"])),
                                       int(values["minor_version"]), int(values["major_version"])))
    cmi = CmiHeader(_correl(_value(f, 1, "HDR", where), source, index, 0), int(_value(f, 2, "HDR", where)),
                    _text(_value(f, 3, "HDR", where))[:CORREL_ID_SIZE].ljust(CORREL_ID_SIZE, b"\0"),
                    _correl(_value(f, 4, "HDR", where), source, index, 1), tuple(entries), WIRE)
    return build_header(cmi, latin1), cmi


def dataset_definition(fields: Sequence[RvField], where: Location) -> bytes:
    f = by_id(fields, "DAT", where)
    values = {name: _value(f, fid, "DAT", where) for fid, name in DAT_FIELDS.items()}
    for name in ("dataset_type", "label", "compress", "encrypt", "collating_sequence"):
        values[name] = _text(values[name])
    values["reuse"] = _char(values["reuse"])
    w = FieldWriter(WIRE).int32(RECORD_TYPES["DAT"])
    write_record(w, DATASET_DEFINITION, values)
    return w.getvalue()


def variable_definitions(fields: Sequence[RvField], where: Location) -> Tuple[bytes, List[Tuple[bool, int]]]:
    """The variable definitions record, and (numeric?, length) of each variable."""
    f = by_id(fields, "VAR", where)
    count = _value(f, 1, "VAR", where)
    if not 0 <= count <= len(fields) // len(VAR_ENTRY) + 1:
        raise RvCmiError(f"VAR declares {count} variables in {len(fields)} fields", where)
    w = FieldWriter(WIRE).int32(RECORD_TYPES["VAR"])
    layout = []
    for n in range(count):
        values = {name: _value(f, 3 + 15 * n + i, "VAR", where) for i, name in enumerate(VAR_ENTRY) if name}
        for name in ("name", "format_name", "informat_name", "label"):
            values[name] = _text(values[name])
        kind = _char(values["type"])
        numeric = kind in (1, ord("1"))
        values["type"], values["nsort"] = 1 if numeric else 2, _char(values["nsort"])
        write_record(w, VARIABLE_DEFINITION, values)
        layout.append((numeric, int(values["length"])))
    return w.getvalue(), layout


def file_prologue(fields: Sequence[RvField], where: Location) -> bytes:
    f = by_id(fields, "FDC", where)
    w = FieldWriter(WIRE)
    write_record(w, FILE_PROLOGUE, {name: _value(f, fid, "FDC", where) for fid, name in FDC_FIELDS.items()})
    return w.getvalue()


def file_records(fields: Sequence[RvField], kind: str, where: Location) -> bytes:
    """ATX/ATB: field 1 the record count, then (2 length, 3 data) per record, ids continuing."""
    f = by_id(fields, kind, where)
    count = _value(f, 1, kind, where)
    if not 0 <= count <= len(fields) // 2:
        raise RvCmiError(f"{kind} declares {count} records in {len(fields)} fields", where)
    w = FieldWriter(WIRE)
    for n in range(count):
        length = _value(f, 2 + 2 * n, kind, where)
        data = f[3 + 2 * n].data if (3 + 2 * n) in f else None
        if data is None or length < 0 or length > len(data):
            raise RvCmiError(f"{kind} record {n + 1} declares {length} bytes; its data field holds "
                             f"{0 if data is None else len(data)}", where)
        w.long(length).raw(data[:length])
    return w.getvalue()


def count_of(fields: Sequence[RvField], kind: str, where: Location) -> int:
    return int(_value(by_id(fields, kind, where), 1, kind, where))


def record_type_only(kind: str) -> bytes:
    """ATI and ATC: indexes and integrity constraints, which CMI readers skip (seed 000)."""
    return struct.pack(">i", RECORD_TYPES[kind])


def application_values(fields: Sequence[RvField]) -> Tuple[str, ...]:
    """MSG/DATA: field 1 the count, then (data type, value) pairs (1 short, 2 long, 3 double,
    4 string): each value as text, in order."""
    return tuple(v.decode("latin-1") if isinstance(v, bytes) else repr(v) for v in (f.value for f in fields[2::2]))


def application_text(fields: Sequence[RvField]) -> bytes:
    """The application message's bytes: its values ";"-separated, as seed 001 writes the map
    ('100;9999;9999.1234;ABC...')."""
    return ";".join(application_values(fields)).encode("latin-1")


def summary(fields: Sequence[RvField], field_count: int, limit: int = 12) -> str:
    """A readable line of the first fields: NAME(id)=value ..., types the reader does not know named."""
    parts = []
    for f in fields[:limit]:
        value = f.value
        shown = (value.decode("latin-1") if isinstance(value, bytes) and f.type == 8 else
                 f"[{len(f.data)} {type_name(f.type)} bytes]" if isinstance(value, bytes) else repr(value))
        parts.append(f"{f.name}({f.field_id})={shown[:40]}" if f.field_id is not None else f"{f.name}={shown[:40]}")
    return " ".join(parts) + (f" ... ({field_count} fields)" if field_count > limit else "")


def layout_of(definition_fields: Sequence[RvField], variables: Sequence[Tuple[bool, int]],
              where: Location) -> ObservationLayout:
    obs_length = int(_value(by_id(definition_fields, "DAT", where), 9, "DAT", where))
    return ObservationLayout(obs_length, tuple(v[0] for v in variables), tuple(v[1] for v in variables))

