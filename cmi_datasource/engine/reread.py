"""Planned messages and their re-reading: planning names each message a partition needs by where
its records lie and what it saw of it; a partition re-reads exactly those, far from planning.

Every message re-read is checked against the length and CRC-32 planning recorded, so a file
rewritten since then with the same size and mtime (``cp -p``, ``rsync -t``) is an error instead
of a mix of old and new data.
"""
from __future__ import annotations

from itertools import groupby
from typing import Any, Iterator, Mapping, NamedTuple, Sequence, Tuple

from ..errors import CmiFormatError, Location
from ..messages import ContentKey, MessageSpan, PhysicalMessage
from ..transports import CaptureFormat, capture_format

LogicalRef = Tuple[MessageSpan, ...]  # the physical records of one logical message


class PlannedMessage(NamedTuple):
    """One message a partition re-reads: where its records lie and what planning saw of it."""

    spans: LogicalRef  # its physical records, in order
    content_key: ContentKey  # checked when it is re-read: a rewritten file is an error
    header_bytes: int  # transport header bytes in front of its data, as captured
    hint: Any  # what its transport needs to rebuild it (PhysicalMessage.reread_hint), or None
    sequence: int  # its sequence number in the attachment (errors name it); 0 when it has none


def planned_messages(messages: Sequence[PhysicalMessage], sequences: Sequence[int]) -> Tuple[PlannedMessage, ...]:
    return tuple(PlannedMessage(m.spans, m.content_key, m.origin.header_length, m.reread_hint, k)
                 for m, k in zip(messages, sequences))


def reread(planned: Sequence[PlannedMessage], formats: Mapping[str, str]) -> Iterator[PhysicalMessage]:
    """The planned logical messages re-read from their physical records and rebuilt by their
    transport, one at a time (a partition never holds all of its messages), each checked
    against what planning saw of it."""
    physical = _reread_physical([span for m in planned for span in m.spans], formats)
    for m in planned:
        pieces = [next(physical) for _ in m.spans]
        message = format_of(formats, m.spans[0][0]).transport.rebuild(pieces, m.hint)
        if message.content_key != m.content_key:
            raise CmiFormatError("the message differs from the one planned: the file changed while "
                                 "it was being read", message.location())
        yield message


def format_of(formats: Mapping[str, str], source: str) -> CaptureFormat:
    name = formats.get(source)
    if name is None:
        raise CmiFormatError("the plan names no capture format for this file", Location(source))
    return capture_format(name)


def _reread_physical(spans: Sequence[MessageSpan], formats: Mapping[str, str]) -> Iterator[PhysicalMessage]:
    for source, run in groupby(spans, key=lambda s: s[0]):
        yield from format_of(formats, source).reread(list(run))
