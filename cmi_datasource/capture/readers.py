"""One entry point over every capture container format: the format is sniffed from the file's start."""
from __future__ import annotations

from itertools import groupby
from typing import Iterator, Sequence

from ..messages import MessageSpan, PhysicalMessage
from . import dmpmqmsg, mqget_capture


def _is_binary_capture(path: str) -> bool:
    with open(path, "rb") as f:
        return mqget_capture.looks_like_capture(f.read(4))


def read_capture(path: str) -> Iterator[PhysicalMessage]:
    if _is_binary_capture(path):
        return mqget_capture.read_capture_file(path)
    return dmpmqmsg.read_dump(path)


def read_spans(spans: Sequence[MessageSpan]) -> Iterator[PhysicalMessage]:
    """The physical messages at ``spans``, in the order given, opening each file once per run."""
    for source, run in groupby(spans, key=lambda s: s[0]):
        wanted = [(i, a, b) for _, i, a, b in run]
        if _is_binary_capture(source):
            yield from mqget_capture.read_capture_messages(source, wanted)
        else:
            yield from dmpmqmsg.read_dump_messages(source, wanted)
