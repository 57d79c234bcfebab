"""One entry point over every capture container format: the format is sniffed from the file's start."""
from __future__ import annotations

from itertools import groupby
from typing import Iterator, Sequence

from ..errors import CmiFormatError, Location
from ..messages import MessageSpan, PhysicalMessage
from . import dmpmqmsg, mqget_capture


def is_binary_capture(path: str) -> bool:
    with open(path, "rb") as f:
        return mqget_capture.looks_like_capture(f.read(4))


def read_capture(path: str) -> Iterator[PhysicalMessage]:
    if is_binary_capture(path):
        return mqget_capture.read_capture_file(path)
    return dmpmqmsg.read_dump(path)


def read_spans(spans: Sequence[MessageSpan]) -> Iterator[PhysicalMessage]:
    """The physical messages at ``spans``, in the order given, opening each file once per run.

    Each span is parsed on its own, with the file's offsets and indexes, so a span that no
    longer holds exactly one message (the file changed since planning) is an error.
    """
    for source, run in groupby(spans, key=lambda s: s[0]):
        parse = mqget_capture.parse_capture if is_binary_capture(source) else dmpmqmsg.parse_dump
        with open(source, "rb") as f:
            for span in run:
                f.seek(span[2])
                yield parse_span(parse, f.read(span[3] - span[2]), span)


def parse_span(parse, data: bytes, span: MessageSpan) -> PhysicalMessage:
    """The one message ``parse`` finds in ``data``, the text of a planned span; a span that no
    longer holds exactly one message means the file changed since planning."""
    source, index, start, end = span
    found = list(parse(data, source, start, index))
    if len(found) != 1:
        raise CmiFormatError(f"expected one message between byte offsets {start} and {end}, "
                             f"found {len(found)}: the file changed since it was planned",
                             Location(source, index, start))
    return found[0]
