"""One entry point over every capture container format."""
from __future__ import annotations

from itertools import groupby
from typing import Iterator, Sequence, Tuple

from ..messages import PhysicalMessage
from . import dmpmqmsg

# (source, index, file_offset, file_end): enough to re-read one message later, in read().
MessageSpan = Tuple[str, int, int, int]


def read_capture(path: str) -> Iterator[PhysicalMessage]:
    return dmpmqmsg.read_dump(path)


def span_of(message: PhysicalMessage) -> MessageSpan:
    return (message.source, message.index, message.file_offset, message.file_end)


def read_spans(spans: Sequence[MessageSpan]) -> Iterator[PhysicalMessage]:
    """The messages at ``spans``, in the order given, opening each file once per run."""
    for source, run in groupby(spans, key=lambda s: s[0]):
        yield from dmpmqmsg.read_dump_messages(source, [(i, a, b) for _, i, a, b in run])
