"""The physical message: what every capture container is turned into.

One capture format (an MQ dump, later an MQTT or TIB/RV capture) yields a
sequence of these: a descriptor (MQMD fields, or None when the capture has
none), the payload bytes, and where they came from.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .errors import Location
from .mq.mqmd import Descriptor


@dataclass(frozen=True)
class PhysicalMessage:
    descriptor: Optional[Descriptor]
    payload: bytes
    source: str
    index: int  # 0-based position of the message in its file
    file_offset: int  # byte offset where the message's record starts in the file
    file_end: int  # byte offset just past the message's record

    def location(self, payload_offset: Optional[int] = None) -> Location:
        return Location(self.source, self.index, self.file_offset, payload_offset)
