"""Join segmented MQ messages into logical messages (docs/spec/mq.md#segmented-messages).

Physical messages with MQMF_SEGMENT / MQMF_LAST_SEGMENT that share (GroupId,
MsgSeqNumber) are one logical message: ordered by Offset, contiguous from 0, ending
with the LAST_SEGMENT piece. Order in the capture does not matter; exact duplicates
are dropped. A gap, an overlap, a conflicting duplicate or a missing last segment makes
the logical message incomplete: it is reported, never guessed.
"""
from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import Dict, List, Sequence, Tuple

from ...messages import PhysicalMessage, UnjoinedMessage
from .message import MqDetails, mqmd_of
from .mqmd import MQMF_LAST_SEGMENT, MQMF_SEGMENT

SEGMENT_FLAGS = MQMF_SEGMENT | MQMF_LAST_SEGMENT


def is_segment(message: PhysicalMessage) -> bool:
    """A segment to join; a damaged one (its data unknown) stands alone, a gap in its group."""
    if message.damage is not None:
        return False
    mqmd = mqmd_of(message)
    return mqmd is not None and bool(mqmd.msg_flags & SEGMENT_FLAGS)


def _join(pieces: List[PhysicalMessage]):
    """A joined logical message, or the reason it cannot be joined."""
    by_offset: Dict[int, PhysicalMessage] = {}
    repeated = []
    for p in pieces:
        offset = mqmd_of(p).offset
        other = by_offset.get(offset)
        if other is not None and other.payload != p.payload:
            return f"two different segments at offset {offset}"
        if other is not None:
            repeated.append((p.span, other.span))
        by_offset.setdefault(offset, p)
    ordered = [by_offset[o] for o in sorted(by_offset)]
    expected = 0
    for p in ordered:
        offset = mqmd_of(p).offset
        if offset > expected:
            return f"gap: bytes {expected} to {offset} are missing"
        if offset < expected:
            return f"segments overlap at offset {offset}"
        expected += len(p.payload)
    last = [p for p in ordered if mqmd_of(p).msg_flags & MQMF_LAST_SEGMENT]
    if not last:
        return f"the last segment is missing (have {expected} bytes in {len(ordered)} segments)"
    if last[0] is not ordered[-1]:
        return "a segment follows the one marked last"
    first = ordered[0]
    mqmd = dataclasses.replace(first.details.mqmd, offset=0, msg_flags=first.details.mqmd.msg_flags & ~SEGMENT_FLAGS)
    # Exact duplicates stay among the parts: they are the same logical message, and the messages
    # view gives them its role; ``repeated_parts`` names the piece each repeats.
    every_piece = sorted(pieces, key=lambda p: (mqmd_of(p).offset, p.source, p.index))
    origin = first.origin._replace(parts=tuple(p.span for p in every_piece), repeated_parts=tuple(repeated))
    return dataclasses.replace(first, details=MqDetails(mqmd, first.details.envelope),
                               payload=b"".join(p.payload for p in ordered), origin=origin)


def join_segments(messages: Sequence[PhysicalMessage]) -> Tuple[List[PhysicalMessage], List[UnjoinedMessage]]:
    """Logical messages in capture order (a joined one where its first piece stood), and the
    segment groups that could not be joined."""
    groups: "OrderedDict[tuple, List[PhysicalMessage]]" = OrderedDict()
    slots: List[object] = []
    for m in messages:
        if is_segment(m):
            mqmd = mqmd_of(m)
            key = (mqmd.group_id, mqmd.msg_seq_number)
            if key not in groups:
                groups[key] = []
                slots.append(key)
            groups[key].append(m)
        else:
            slots.append(m)
    logical: List[PhysicalMessage] = []
    incomplete: List[UnjoinedMessage] = []
    for slot in slots:
        if isinstance(slot, PhysicalMessage):
            logical.append(slot)
            continue
        pieces = groups[slot]
        joined = _join(pieces)
        if isinstance(joined, str):
            incomplete.append(UnjoinedMessage(pieces[0].descriptor.correl_id,
                                              f"was segmented and cannot be joined: {joined}",
                                              tuple(p.span for p in pieces)))
        else:
            logical.append(joined)
    return logical, incomplete
