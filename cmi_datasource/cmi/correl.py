"""CMI message types and the layout of a CorrelId (docs/spec/cmi.md#message-types, #correlation-ids).

An attachment's messages are found by CorrelId alone: the count message carries the attachment
key and zeros, sequenced message k the key, k and zeros. The sequence number is big-endian as
written; a reader also accepts little-endian (``cmi/assembly.py`` decides per attachment).
"""
from __future__ import annotations

from typing import Literal

from ..layout import Field, Layout

MSGTYPE_CMI_HEADER = 100000  # the attachment header message
MSGTYPE_CMI_SUBORDINATE = 100001  # application, count and sequenced messages

CORREL_ID = Layout("CMI CorrelId", (
    Field("key", "16s", bytes(16)),  # the first 16 bytes of the attachment correlid in the header
    Field("sequence", "4s", bytes(4)),  # k = 1..N; zero in the count message
    Field("tail", "4s", bytes(4)),  # always zero
))
CORREL_ID_SIZE = CORREL_ID.size
KEY = CORREL_ID.slice("key")
SEQUENCE = CORREL_ID.slice("sequence")
TAIL = CORREL_ID.slice("tail")
KEY_SIZE = KEY.stop - KEY.start
_ZERO_SEQUENCE = bytes(SEQUENCE.stop - SEQUENCE.start)
_ZERO_TAIL = bytes(TAIL.stop - TAIL.start)


def count_correl_id(key: bytes) -> bytes:
    return CORREL_ID.pack({"key": key})


def sequence_correl_id(key: bytes, k: int) -> bytes:
    return CORREL_ID.pack({"key": key, "sequence": k.to_bytes(4, "big")})


def is_sequenced(correl_id: bytes) -> bool:
    """Whether a CorrelId has the shape of a sequenced message's: a sequence number, a zero tail."""
    return correl_id[SEQUENCE] != _ZERO_SEQUENCE and correl_id[TAIL] == _ZERO_TAIL


ByteOrder = Literal["big", "little"]


def sequence_number(correl_id: bytes, order: ByteOrder) -> int:
    """k of a sequenced message's CorrelId, read in byte order ``order`` ("big" or "little")."""
    return int.from_bytes(correl_id[SEQUENCE], order)
