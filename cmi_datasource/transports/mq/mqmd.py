"""The MQ message descriptor (MQMD), as one field table.

The table is the ``MQMD`` dataclass: per field, its name (snake case) and Python type, and in
its metadata the struct code, default, kind (number, characters, bytes), the 3-letter
attribute code the dmpmqmsg text dump uses for it, amqsbcg's name and the MQMD version that
introduced it. ``MQMD_FIELDS``, the binary layouts and the dump readers/writers are all
derived from this one table.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple

from ...frozen import made
from ...layout import Field, Layout

BLANK8 = b" " * 8


@dataclass(frozen=True)
class MqmdField:
    name: str
    code: str
    default: object
    dump_code: Optional[str]  # dmpmqmsg attribute code; None = not in the dump
    kind: str  # "int", "text" (blank-padded characters) or "hex" (raw bytes)
    browse_name: str  # the name IBM's browse sample amqsbcg prints, as in the MQMD's documentation
    version: int = 1  # MQMD version that introduced the field


def _field(code: str, default: object, dump_code: Optional[str], kind: str, browse_name: str, version: int = 1) -> Any:
    """One row of the table: a dataclass field of ``MQMD`` whose metadata is the rest of the row.
    Typed ``Any`` so that each annotation of ``MQMD`` states its field's type."""
    return dataclasses.field(default=default, metadata={"mqmd": (code, default, dump_code, kind, browse_name, version)})


def _text(size: int, dump_code: str, browse_name: str, version: int = 1) -> Any:
    return _field(f"{size}s", " " * size, dump_code, "text", browse_name, version)


def _hex(size: int, dump_code: str, browse_name: str, version: int = 1) -> Any:
    return _field(f"{size}s", bytes(size), dump_code, "hex", browse_name, version)


def _int(default: int, dump_code: str, browse_name: str, version: int = 1) -> Any:
    return _field("i", default, dump_code, "int", browse_name, version)


@dataclass(frozen=True)
class MQMD:
    """An MQMD's fields: ints as int, character fields as str, ids as bytes."""
    struc_id: str = _field("4s", "MD  ", None, "text", "StrucId")
    version: int = _int(1, "VER", "Version")
    report: int = _int(0, "RPT", "Report")
    msg_type: int = _int(8, "MST", "MsgType")  # MQMT_DATAGRAM
    expiry: int = _int(-1, "EXP", "Expiry")  # MQEI_UNLIMITED
    feedback: int = _int(0, "FDB", "Feedback")
    encoding: int = _int(546, "ENC", "Encoding")  # MQENC_NATIVE on x86
    ccsid: int = _int(0, "CCS", "CodedCharSetId")  # MQCCSI_Q_MGR
    format: str = _text(8, "FMT", "Format")
    priority: int = _int(-1, "PRI", "Priority")
    persistence: int = _int(2, "PER", "Persistence")
    msg_id: bytes = _hex(24, "MSI", "MsgId")
    correl_id: bytes = _hex(24, "COI", "CorrelId")
    backout_count: int = _int(0, "BOC", "BackoutCount")
    reply_to_q: str = _text(48, "RTQ", "ReplyToQ")
    reply_to_qmgr: str = _text(48, "RTM", "ReplyToQMgr")
    user_identifier: str = _text(12, "USR", "UserIdentifier")
    accounting_token: bytes = _hex(32, "ACC", "AccountingToken")
    # ApplIdentityData and ApplOriginData are characters in MQ, but dmpmqmsg dumps them
    # in hex (AIX/AOX) unless -dc is given (AID/AOD); we keep their raw bytes.
    appl_identity_data: bytes = _field("32s", b" " * 32, "AIX", "hex", "ApplIdentityData")
    put_appl_type: int = _int(0, "PAT", "PutApplType")
    put_appl_name: str = _text(28, "PAN", "PutApplName")
    put_date: str = _text(8, "PTD", "PutDate")
    put_time: str = _text(8, "PTT", "PutTime")
    appl_origin_data: bytes = _field("4s", b" " * 4, "AOX", "hex", "ApplOriginData")
    group_id: bytes = _hex(24, "GRP", "GroupId", version=2)
    msg_seq_number: int = _int(1, "MSQ", "MsgSeqNumber", version=2)
    offset: int = _int(0, "OFF", "Offset", version=2)
    msg_flags: int = _int(0, "MSF", "MsgFlags", version=2)
    original_length: int = _int(-1, "ORL", "OriginalLength", version=2)


MQMD_FIELDS: Tuple[MqmdField, ...] = tuple(MqmdField(f.name, *f.metadata["mqmd"]) for f in dataclasses.fields(MQMD))

MQMD_V1 = Layout("MQMD v1", (Field(f.name, f.code, f.default, f.kind == "text")
                             for f in MQMD_FIELDS if f.version == 1))
MQMD_V2 = Layout("MQMD v2", (Field(f.name, f.code, f.default, f.kind == "text")
                             for f in MQMD_FIELDS))


def mqmd_of_fields(values: Mapping[str, Any]) -> MQMD:
    """``MQMD(**values)`` in 1.7 us instead of 7.4 (``frozen.made``): every reader (dumps, amqsbcg
    output, binary captures) makes one a message."""
    return made(MQMD, values)


FIELDS_BY_DUMP_CODE: Dict[str, MqmdField] = {f.dump_code: f for f in MQMD_FIELDS if f.dump_code}
FIELDS_BY_BROWSE_NAME: Dict[str, MqmdField] = {f.browse_name: f for f in MQMD_FIELDS}
# dmpmqmsg -dc writes these two in characters instead of hex.
FIELDS_BY_DUMP_CODE["AID"] = MQMD_FIELDS[[f.name for f in MQMD_FIELDS].index("appl_identity_data")]
FIELDS_BY_DUMP_CODE["AOD"] = MQMD_FIELDS[[f.name for f in MQMD_FIELDS].index("appl_origin_data")]

# MsgFlags bits.
MQMF_SEGMENTATION_ALLOWED = 0x01
MQMF_SEGMENT = 0x02
MQMF_LAST_SEGMENT = 0x04
MQMF_MSG_IN_GROUP = 0x08
MQMF_LAST_MSG_IN_GROUP = 0x10

MQLONG_MIN, MQLONG_MAX = -(1 << 31), (1 << 31) - 1  # every MQMD number is an MQLONG (4 bytes, signed)
MQMD_STRUC_ID = "MD  "


def descriptor_from_bytes(buf: bytes, offset: int, order: str, version: int, codec: str,
                          location=None) -> MQMD:
    """An MQMD from its binary form (version 1 or 2); character fields decoded with ``codec``."""
    layout = MQMD_V2 if version >= 2 else MQMD_V1
    raw = layout.unpack(buf, offset, order, location)
    values = {}
    for f in MQMD_FIELDS:
        if f.name in raw:
            v = raw[f.name]
            # Descriptor text is metadata (names, dates): undecodable bytes become U+FFFD rather
            # than making the message unreadable.
            values[f.name] = v.decode(codec, errors="replace") if f.kind == "text" else v
    values["version"] = min(version, 2)
    return mqmd_of_fields(values)


def descriptor_to_bytes(descriptor: MQMD, order: str, codec: str) -> bytes:
    """The binary form of an MQMD (its own version decides 324 or 364 bytes)."""
    layout = MQMD_V2 if descriptor.version >= 2 else MQMD_V1
    values = {}
    for f in MQMD_FIELDS:
        if f.name in layout.by_name:
            v = getattr(descriptor, f.name)
            values[f.name] = v.encode(codec) if f.kind == "text" else v
    return layout.pack(values, order)
