"""The physical message: what every capture container is turned into.

One capture format (an MQ text dump, a binary MQGET capture, later MQTT or TIB/RV)
yields a sequence of these: a descriptor (MQMD fields, or None when the capture has
none), the payload bytes, and where they came from. The MQ layer then removes
header structures (recording them in ``envelope``) and joins segments into logical
messages (recording the physical pieces in ``parts``).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional, Tuple

from zlib_ng.zlib_ng import crc32  # zlib's CRC-32, computed about 5 times faster

from .errors import Location
from .mq.mqmd import Descriptor

# (source, index, file_offset, file_end): enough to re-read one physical message later, in read().
MessageSpan = Tuple[str, int, int, int]


@dataclass(frozen=True)
class Envelope:
    """MQ header structures found (and removed) in front of a message's data."""

    outer: Descriptor  # the descriptor as captured
    headers: Tuple[str, ...] = ()  # e.g. ("MQXQH", "MQMDE")
    remote_queue: Optional[str] = None  # MQXQH: where the message was going
    remote_qmgr: Optional[str] = None
    dead_letter_reason: Optional[int] = None  # MQDLH
    dead_letter_queue: Optional[str] = None  # MQDLH: the queue it could not reach
    dead_letter_qmgr: Optional[str] = None
    properties: Tuple[str, ...] = ()  # MQRFH2 name/value folders, as text
    problem: Optional[str] = None  # a header that could not be walked; the data is left as it was
    captured_length: Optional[int] = None  # payload bytes as captured, headers included


@dataclass(frozen=True)
class PhysicalMessage:
    descriptor: Optional[Descriptor]
    payload: bytes
    source: str
    index: int  # 0-based position of the message in its file
    file_offset: int  # byte offset where the message's record starts in the file
    file_end: int  # byte offset just past the message's record
    envelope: Optional[Envelope] = None
    parts: Tuple[MessageSpan, ...] = ()  # the segments of a joined logical message, in order
    # Planning keeps only the first bytes of large payloads (see ``partial``): then these hold
    # the whole payload's length and CRC-32, and ``payload`` is its beginning.
    full_length: Optional[int] = None
    full_crc: Optional[int] = None

    @property
    def length(self) -> int:
        return len(self.payload) if self.full_length is None else self.full_length

    @property
    def is_partial(self) -> bool:
        return self.full_length is not None

    @property
    def content_key(self) -> Tuple[int, int]:
        """Equal for messages with equal payloads (duplicates), without holding the payloads."""
        return (self.length, crc32(self.payload) if self.full_crc is None else self.full_crc)

    @property
    def span(self) -> MessageSpan:
        return (self.source, self.index, self.file_offset, self.file_end)

    @property
    def spans(self) -> Tuple[MessageSpan, ...]:
        """The physical records this message was made from."""
        return self.parts or (self.span,)

    def location(self, payload_offset: Optional[int] = None) -> Location:
        return Location(self.source, self.index, self.file_offset, payload_offset)


def partial(message: PhysicalMessage, keep: int) -> PhysicalMessage:
    """The message with only the first ``keep`` bytes of its payload (length and CRC kept)."""
    if message.is_partial or len(message.payload) <= keep:
        return message
    return dataclasses.replace(message, payload=message.payload[:keep], full_length=len(message.payload),
                               full_crc=crc32(message.payload))
