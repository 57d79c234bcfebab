"""A byte stream made of consecutive message payloads, which still knows where each byte came from."""
from __future__ import annotations

import bisect
from typing import List, Sequence

from ..errors import Location
from ..messages import PhysicalMessage


class MessageStream:
    """Payloads of ``messages`` from byte ``skip`` of each (a record-type int, say), end to end."""

    def __init__(self, messages: Sequence[PhysicalMessage], skip: int = 0, base: int = 0):
        """``base``: the stream offset of the first message, when these are a stretch of a longer stream."""
        self.messages: List[PhysicalMessage] = list(messages)
        self.skip = skip
        self.starts: List[int] = []
        at = base
        for m in self.messages:
            self.starts.append(at)
            at += m.length - skip
        self.length = at

    def data(self) -> bytes:
        if any(m.is_partial for m in self.messages):
            raise ValueError("the stream holds messages read only in part (planning data)")
        return b"".join(m.payload[self.skip:] for m in self.messages)

    def parts(self):
        """(stream offset, bytes) of each message's share of the stream."""
        for m, start in zip(self.messages, self.starts):
            yield start, m.payload[self.skip:]

    def locate(self, pos: int) -> Location:
        if not self.messages:
            return Location()
        i = max(bisect.bisect_right(self.starts, pos) - 1, 0)
        return self.messages[i].location(self.skip + pos - self.starts[i])

    def end_location(self) -> Location:
        last = self.messages[-1]
        return last.location(last.length)
