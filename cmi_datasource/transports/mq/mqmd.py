"""The MQ message descriptor (MQMD), as one field table.

The table carries, per field: the MQMD name (snake case), struct code, default,
whether it is a character field, and the 3-letter attribute code the dmpmqmsg
text dump uses for it. The binary layout, the ``MQMD`` class and the dump
reader/writer are all derived from this one table.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

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


def _text(name, size, dump_code, browse_name, version=1):
    return MqmdField(name, f"{size}s", " " * size, dump_code, "text", browse_name, version)


def _hex(name, size, dump_code, browse_name, version=1):
    return MqmdField(name, f"{size}s", bytes(size), dump_code, "hex", browse_name, version)


def _int(name, default, dump_code, browse_name, version=1):
    return MqmdField(name, "i", default, dump_code, "int", browse_name, version)


MQMD_FIELDS: Tuple[MqmdField, ...] = (
    MqmdField("struc_id", "4s", "MD  ", None, "text", "StrucId"),
    _int("version", 1, "VER", "Version"),
    _int("report", 0, "RPT", "Report"),
    _int("msg_type", 8, "MST", "MsgType"),  # MQMT_DATAGRAM
    _int("expiry", -1, "EXP", "Expiry"),  # MQEI_UNLIMITED
    _int("feedback", 0, "FDB", "Feedback"),
    _int("encoding", 546, "ENC", "Encoding"),  # MQENC_NATIVE on x86
    _int("ccsid", 0, "CCS", "CodedCharSetId"),  # MQCCSI_Q_MGR
    _text("format", 8, "FMT", "Format"),
    _int("priority", -1, "PRI", "Priority"),
    _int("persistence", 2, "PER", "Persistence"),
    _hex("msg_id", 24, "MSI", "MsgId"),
    _hex("correl_id", 24, "COI", "CorrelId"),
    _int("backout_count", 0, "BOC", "BackoutCount"),
    _text("reply_to_q", 48, "RTQ", "ReplyToQ"),
    _text("reply_to_qmgr", 48, "RTM", "ReplyToQMgr"),
    _text("user_identifier", 12, "USR", "UserIdentifier"),
    _hex("accounting_token", 32, "ACC", "AccountingToken"),
    # ApplIdentityData and ApplOriginData are characters in MQ, but dmpmqmsg dumps them
    # in hex (AIX/AOX) unless -dc is given (AID/AOD); we keep their raw bytes.
    MqmdField("appl_identity_data", "32s", b" " * 32, "AIX", "hex", "ApplIdentityData"),
    _int("put_appl_type", 0, "PAT", "PutApplType"),
    _text("put_appl_name", 28, "PAN", "PutApplName"),
    _text("put_date", 8, "PTD", "PutDate"),
    _text("put_time", 8, "PTT", "PutTime"),
    MqmdField("appl_origin_data", "4s", b" " * 4, "AOX", "hex", "ApplOriginData"),
    _hex("group_id", 24, "GRP", "GroupId", version=2),
    _int("msg_seq_number", 1, "MSQ", "MsgSeqNumber", version=2),
    _int("offset", 0, "OFF", "Offset", version=2),
    _int("msg_flags", 0, "MSF", "MsgFlags", version=2),
    _int("original_length", -1, "ORL", "OriginalLength", version=2),
)

MQMD_V1 = Layout("MQMD v1", (Field(f.name, f.code, f.default, f.kind == "text")
                             for f in MQMD_FIELDS if f.version == 1))
MQMD_V2 = Layout("MQMD v2", (Field(f.name, f.code, f.default, f.kind == "text")
                             for f in MQMD_FIELDS))

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
MQMD = dataclasses.make_dataclass(
    "MQMD",
    [(f.name, object, dataclasses.field(default=f.default)) for f in MQMD_FIELDS],
    frozen=True,
    namespace={"__doc__": "An MQMD's fields: ints as int, character fields as str, ids as bytes."},
)
MQMD.__module__ = __name__  # so descriptors pickle (make_dataclass would leave "types")

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
    return MQMD(**values)


def descriptor_to_bytes(descriptor: MQMD, order: str, codec: str) -> bytes:
    """The binary form of an MQMD (its own version decides 324 or 364 bytes)."""
    layout = MQMD_V2 if descriptor.version >= 2 else MQMD_V1
    values = {}
    for f in MQMD_FIELDS:
        if f.name in layout.by_name:
            v = getattr(descriptor, f.name)
            values[f.name] = v.encode(codec) if f.kind == "text" else v
    return layout.pack(values, order)
