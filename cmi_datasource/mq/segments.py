"""Join segmented MQ messages into logical messages (formats.md section 2).

Physical messages with MQMF_SEGMENT / MQMF_LAST_SEGMENT that share (GroupId,
MsgSeqNumber) are one logical message: ordered by Offset, contiguous from 0, ending
with the LAST_SEGMENT piece. Order in the capture does not matter; exact duplicates
are dropped. A gap, an overlap, a conflicting duplicate or a missing last segment makes
the logical message incomplete: it is reported, never guessed.
"""
from __future__ import annotations

import dataclasses
from collections import OrderedDict
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

from ..messages import MessageSpan, PhysicalMessage
from .mqmd import MQMF_LAST_SEGMENT, MQMF_SEGMENT

SEGMENT_FLAGS = MQMF_SEGMENT | MQMF_LAST_SEGMENT


@dataclass(frozen=True)
class IncompleteSegments:
    correl_id: bytes
    group_id: bytes
    msg_seq_number: int
    reason: str
    parts: Tuple[MessageSpan, ...]


def is_segment(message: PhysicalMessage) -> bool:
    return message.descriptor is not None and bool(message.descriptor.msg_flags & SEGMENT_FLAGS)


def _join(pieces: List[PhysicalMessage]):
    """A joined logical message, or the reason it cannot be joined."""
    by_offset: Dict[int, PhysicalMessage] = {}
    for p in pieces:
        other = by_offset.get(p.descriptor.offset)
        if other is not None and other.payload != p.payload:
            return f"two different segments at offset {p.descriptor.offset}"
        by_offset.setdefault(p.descriptor.offset, p)
    ordered = [by_offset[o] for o in sorted(by_offset)]
    expected = 0
    for p in ordered:
        if p.descriptor.offset > expected:
            return f"gap: bytes {expected} to {p.descriptor.offset} are missing"
        if p.descriptor.offset < expected:
            return f"segments overlap at offset {p.descriptor.offset}"
        expected += len(p.payload)
    last = [p for p in ordered if p.descriptor.msg_flags & MQMF_LAST_SEGMENT]
    if not last:
        return f"the last segment is missing (have {expected} bytes in {len(ordered)} segments)"
    if last[0] is not ordered[-1]:
        return "a segment follows the one marked last"
    first = ordered[0]
    descriptor = dataclasses.replace(first.descriptor, offset=0,
                                     msg_flags=first.descriptor.msg_flags & ~SEGMENT_FLAGS)
    # Exact duplicates stay among the parts: they are the same logical message, and the messages
    # view gives them its role.
    every_piece = sorted(pieces, key=lambda p: (p.descriptor.offset, p.source, p.index))
    return dataclasses.replace(first, descriptor=descriptor, payload=b"".join(p.payload for p in ordered),
                               parts=tuple(p.span for p in every_piece))


def join_segments(messages: Sequence[PhysicalMessage]) -> Tuple[List[PhysicalMessage], List[IncompleteSegments]]:
    """Logical messages in capture order (a joined one where its first piece stood), and the
    segment groups that could not be joined."""
    groups: "OrderedDict[tuple, List[PhysicalMessage]]" = OrderedDict()
    slots: List[object] = []
    for m in messages:
        if is_segment(m):
            key = (m.descriptor.group_id, m.descriptor.msg_seq_number)
            if key not in groups:
                groups[key] = []
                slots.append(key)
            groups[key].append(m)
        else:
            slots.append(m)
    logical: List[PhysicalMessage] = []
    incomplete: List[IncompleteSegments] = []
    for slot in slots:
        if isinstance(slot, PhysicalMessage):
            logical.append(slot)
            continue
        pieces = groups[slot]
        joined = _join(pieces)
        if isinstance(joined, str):
            incomplete.append(IncompleteSegments(pieces[0].descriptor.correl_id, slot[0], slot[1], joined,
                                                 tuple(p.span for p in pieces)))
        else:
            logical.append(joined)
    return logical, incomplete
