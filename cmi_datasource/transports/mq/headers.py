"""MQ header structures that can stand in front of message data, as field tables.

Sources: IBM MQ copybooks (cmqc.h), docs/spec/mq.md#the-header-chain, docs/spec/mq.md#mqmde.
Every structure id is 4 characters in the code page of the structure before it,
so z/OS dumps carry them in EBCDIC; ``struc_id_matches`` accepts either.
"""
from __future__ import annotations

from ...layout import Field, Layout

def _mqh_fields(struc_id: bytes, struc_length: int):
    """The fields every "MQH*"-style header starts with (MQMDE, MQRFH2, MQCIH, ...)."""
    return (
        Field("struc_id", "4s", struc_id),
        Field("version", "i", 2),
        Field("struc_length", "i", struc_length),
        Field("encoding", "i", 546),
        Field("ccsid", "i", 0),
        Field("format", "8s", b" " * 8, text=True),
        Field("flags", "i", 0),
    )


MQH_COMMON = Layout("MQH", _mqh_fields(b"    ", 32))

MQMDE = Layout("MQMDE", _mqh_fields(b"MDE ", 72) + (
    Field("group_id", "24s", bytes(24)),
    Field("msg_seq_number", "i", 1),
    Field("offset", "i", 0),
    Field("msg_flags", "i", 0),
    Field("original_length", "i", -1),
))

MQXQH = Layout("MQXQH", (
    Field("struc_id", "4s", b"XQH "),
    Field("version", "i", 1),
    Field("remote_q_name", "48s", b" " * 48, text=True),
    Field("remote_q_mgr_name", "48s", b" " * 48, text=True),
    # Then a version-1 MQMD (MsgDesc), laid out by mq.mqmd.MQMD_V1.
))

MQDLH = Layout("MQDLH", (
    Field("struc_id", "4s", b"DLH "),
    Field("version", "i", 1),
    Field("reason", "i", 0),
    Field("dest_q_name", "48s", b" " * 48, text=True),
    Field("dest_q_mgr_name", "48s", b" " * 48, text=True),
    Field("encoding", "i", 546),
    Field("ccsid", "i", 0),
    Field("format", "8s", b" " * 8, text=True),
    Field("put_appl_type", "i", 0),
    Field("put_appl_name", "28s", b" " * 28, text=True),
    Field("put_date", "8s", b" " * 8, text=True),
    Field("put_time", "8s", b" " * 8, text=True),
))

MQRFH2 = Layout("MQRFH2", _mqh_fields(b"RFH ", 36) + (Field("name_value_ccsid", "i", 1208),))

FORMAT_XMIT = "MQXMIT"
FORMAT_MD_EXTENSION = "MQHMDE"
FORMAT_DEAD_LETTER = "MQDEAD"
FORMAT_RFH2 = "MQHRF2"
MQCCSI_INHERIT = -2

# MQMDE fields that a version-2 MQMD also has, with their defaults (docs/spec/mq.md#mqmde).
MQMDE_V2_FIELDS = ("group_id", "msg_seq_number", "offset", "msg_flags", "original_length")
MQMDE_V2_DEFAULTS = {"group_id": bytes(24), "msg_seq_number": 1, "offset": 0, "msg_flags": 0,
                     "original_length": -1}

_EBCDIC = "cp037"


def struc_id_matches(raw: bytes, struc_id: str) -> bool:
    return raw == struc_id.encode("ascii") or raw == struc_id.encode(_EBCDIC)


def struc_id_is_ebcdic(raw: bytes) -> bool:
    return raw[:1] not in (b"",) and raw[0] >= 0x80
