"""A byte stream made of consecutive message payloads, which still knows where each byte came from."""
from __future__ import annotations

import bisect
from typing import Iterable, List, Sequence, Tuple

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


class StreamOrigins:
    """Where each message's share of a stream came from, by the stream offset it starts at: locates
    any byte passed so far while keeping nothing of the messages themselves."""

    def __init__(self, skip: int = 0):
        self.skip = skip  # payload bytes before each message's share (a record type, say)
        self.starts: List[int] = []
        self._origins: List[Tuple[str, int, int]] = []  # (source, index, file_offset) per message

    def add(self, start: int, source: str, index: int, file_offset: int) -> None:
        self.starts.append(start)
        self._origins.append((source, index, file_offset))

    def extend(self, starts: Iterable[int], origins: Iterable[Tuple[str, int, int]]) -> None:
        self.starts.extend(starts)
        self._origins.extend(origins)

    def locate(self, pos: int) -> Location:
        if not self.starts:
            return Location()
        i = max(bisect.bisect_right(self.starts, pos) - 1, 0)
        source, index, file_offset = self._origins[i]
        return Location(source, index, file_offset, self.skip + pos - self.starts[i])


class OnePassStream(MessageStream):
    """A stream over messages read one at a time and dropped once consumed, so a reader holds
    one message (plus what it buffers), however long the stream. It still locates any
    byte it has passed, keeping only where each message came from."""

    def __init__(self, messages: Iterable[PhysicalMessage], skip: int = 0, base: int = 0):
        self._source = iter(messages)
        self.skip = skip
        self.base = base
        self.messages = []
        self.origins = StreamOrigins(skip)
        self.starts = self.origins.starts

    def parts(self):
        at = self.base
        for m in self._source:
            data = m.payload[self.skip:]
            self.origins.add(at, m.source, m.index, m.file_offset)
            yield at, data
            at += len(data)

    def locate(self, pos: int) -> Location:
        return self.origins.locate(pos)
