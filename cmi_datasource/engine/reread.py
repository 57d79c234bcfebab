"""Planned messages and their re-reading: planning names each message a partition needs by where
its records lie and what it saw of it; a partition re-reads exactly those, far from planning.

Every message re-read is checked against the length and CRC-32 planning recorded, so a file
rewritten since then with the same size and mtime (``cp -p``, ``rsync -t``) is an error instead
of a mix of old and new data.
"""
from __future__ import annotations

from itertools import groupby
from typing import Any, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union, overload

import numpy as np

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


# One row of PlannedMessages.rows per message: its one physical record (source number, index,
# offset, end), its content key (length, CRC-32), its transport header bytes and its sequence number.
_ROW = np.dtype([("source", "<u4"), ("index", "<i8"), ("offset", "<i8"), ("end", "<i8"),
                 ("length", "<i8"), ("crc", "<u4"), ("header_bytes", "<u4"), ("sequence", "<i8")])


class PlannedMessages(Sequence[PlannedMessage]):
    """The planned messages of one part, held as columns: one structured numpy row per message
    (52 bytes) and the part's source paths once, instead of a ``PlannedMessage`` of nested tuples
    and ints per message (454 bytes). A plan is kept in memory by every Python worker that planned
    it, and the objects of a tuple plan (80,000 messages for a 20M-row dump) lay among the freed
    temporaries of the index build and kept their pages resident. Only for messages of one
    physical record and no reread hint (``planned_messages`` decides); item type, equality and
    hashing are those of the tuple it stands for, item by item."""

    __slots__ = ("sources", "rows", "_hash")

    def __init__(self, sources: Tuple[str, ...], rows: np.ndarray):
        self.sources = sources  # the paths the rows' ``source`` numbers name
        self.rows = rows  # of dtype _ROW
        self._hash: Optional[int] = None

    @classmethod
    def of(cls, messages: Sequence[PhysicalMessage], sequences: Sequence[int]) -> "PlannedMessages":
        numbers: dict = {}
        rows = np.array([(numbers.setdefault(m.source, len(numbers)), m.origin.message_index, m.origin.file_offset,
                          m.origin.file_end, *m.content_key, m.origin.header_length, k)
                         for m, k in zip(messages, sequences)], dtype=_ROW)
        return cls(tuple(numbers), rows)

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, at: int) -> PlannedMessage: ...

    @overload
    def __getitem__(self, at: slice) -> "PlannedMessages": ...

    def __getitem__(self, at: Union[int, slice]) -> Union[PlannedMessage, "PlannedMessages"]:
        if isinstance(at, slice):
            return PlannedMessages(self.sources, self.rows[at])
        return self._message(self.rows[at].tolist())

    def __iter__(self) -> Iterator[PlannedMessage]:
        return map(self._message, self.rows.tolist())

    def _message(self, row: tuple) -> PlannedMessage:
        source, index, offset, end, length, crc, header_bytes, sequence = row
        return PlannedMessage(((self.sources[source], index, offset, end),), (length, crc), header_bytes, None,
                              sequence)

    def spans(self) -> List[MessageSpan]:
        """Each message's one physical record."""
        sources = self.sources
        return [(sources[s], i, a, b) for s, i, a, b in
                zip(self.rows["source"].tolist(), self.rows["index"].tolist(), self.rows["offset"].tolist(),
                    self.rows["end"].tolist())]

    def sequence_at(self, location: Location) -> Optional[int]:
        """The sequence number of the message ``location`` names; None when none of these is there."""
        if location.source not in self.sources or location.message_index is None:
            return None
        rows = self.rows
        found = np.flatnonzero((rows["source"] == self.sources.index(location.source))
                               & (rows["index"] == location.message_index))
        return int(rows["sequence"][found[0]]) if len(found) else None

    def _key(self) -> tuple:
        # Rows name sources by number: equal parts may number them differently (and a slice
        # keeps its parent's sources), so the key names them by path.
        return (tuple(self.sources[s] for s in self.rows["source"].tolist()),
                self.rows[["index", "offset", "end", "length", "crc", "header_bytes", "sequence"]].tobytes())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PlannedMessages):
            return len(self) == len(other) and self._key() == other._key()
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(self._key())
        return self._hash

    def __reduce__(self) -> tuple:
        return PlannedMessages, (self.sources, self.rows)

    def __repr__(self) -> str:
        return f"PlannedMessages({len(self)} messages in {self.sources})"


Planned = Union[PlannedMessages, Tuple[PlannedMessage, ...]]  # the messages of one plan part


def planned_messages(messages: Sequence[PhysicalMessage], sequences: Sequence[int]) -> Planned:
    """The messages as a part plans them: columns (``PlannedMessages``) when each is one physical
    record with no reread hint (the MQ captures' messages), else a tuple of ``PlannedMessage``s
    (MQ segments joined, TIB/RV and MQTT messages, which carry hints)."""
    if all(m.reread_hint is None and len(m.spans) == 1 and m.spans[0] == m.origin.span for m in messages):
        return PlannedMessages.of(messages, sequences)
    return tuple(PlannedMessage(m.spans, m.content_key, m.origin.header_length, m.reread_hint, k)
                 for m, k in zip(messages, sequences))


class BulkColumns(NamedTuple):
    """What a format's fast path needs of each planned message of one physical record, as columns."""

    spans: List[MessageSpan]
    hints: List[Any]
    header_bytes: np.ndarray  # int64
    lengths: List[int]
    crcs: List[int]


def bulk_columns(planned: Sequence[PlannedMessage]) -> BulkColumns:
    """The columns of messages of one physical record each (from the rows, for ``PlannedMessages``)."""
    if isinstance(planned, PlannedMessages):
        rows = planned.rows
        return BulkColumns(planned.spans(), [None] * len(rows), rows["header_bytes"].astype(np.int64),
                           rows["length"].tolist(), rows["crc"].tolist())
    return BulkColumns([m.spans[0] for m in planned], [m.hint for m in planned],
                       np.asarray([m.header_bytes for m in planned], dtype=np.int64),
                       [m.content_key[0] for m in planned], [m.content_key[1] for m in planned])


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
