"""Group physical messages into CMI attachments (docs/spec/cmi.md#assembly-rules).

Grouping is by CorrelId only, never by message order:

* header: MsgType 100000; it lists attachments, each with a 24-byte correlid whose first
  16 bytes are the attachment key;
* application message: MsgType 100001, CorrelId = the header's message correlid;
* count message: key + 8 zero bytes, payload one ``int`` N;
* sequenced message k (1..N): key + k as 4 bytes (big-endian; little-endian accepted) + 4 zero bytes.

Exact duplicates (same CorrelId, same payload) are dropped, never silently: ``Assembly.duplicates``
names the message each dropped copy repeats, and each attachment counts the copies of its own
messages (``Attachment.duplicate_messages``). Conflicting duplicates (same CorrelId, different
payloads) make the attachment unusable and are reported on it.
"""
from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from ..charsets import CharsetPolicy, CodePage, UnknownCcsid
from ..encoding import integer_order
from ..errors import CmiFormatError, IncompleteAttachmentError, UnsupportedEncodingError, message_number
from ..messages import PhysicalMessage, UnjoinedMessage
from .correl import (KEY, ByteOrder, MSGTYPE_CMI_HEADER, MSGTYPE_CMI_SUBORDINATE, count_correl_id, is_sequenced,
                     sequence_number)
from .header import AttachmentEntry, CmiHeader, parse_header
from .wire import FieldReader, WireFormat

ROLE_HEADER = "header"
ROLE_APPLICATION = "application"
ROLE_COUNT = "count"
ROLE_SEQUENCED = "sequenced"
ROLE_OTHER = "other"


def message_code_page(message: PhysicalMessage, charsets: CharsetPolicy) -> CodePage:
    """The code page of a message's characters, or UnsupportedEncodingError naming the message."""
    try:
        return charsets.code_page_for(message.descriptor.ccsid)
    except UnknownCcsid as e:
        raise UnsupportedEncodingError(str(e), message.location()) from None


# Why a sequenced message is untrusted when copies of it differ: no message landing later mends it.
CONFLICTING_DUPLICATES = "its duplicates conflict"


@dataclass
class Attachment:
    header: CmiHeader
    entry: AttachmentEntry
    header_message: PhysicalMessage
    application: Optional[PhysicalMessage] = None
    count_message: Optional[PhysicalMessage] = None
    expected: Optional[int] = None
    sequenced: Dict[int, PhysicalMessage] = field(default_factory=dict)
    problems: List[str] = field(default_factory=list)
    # Sequence numbers whose message is in the capture but cannot be trusted (damaged, its
    # duplicates conflict, its segments do not join) -> why; reading around damage skips them.
    untrusted: Dict[int, str] = field(default_factory=dict)
    unusable: Optional[str] = None  # why none of its messages can be told to be its own
    # Identical copies dropped of its header, application, count and sequenced messages (a copy
    # of a header listing several attachments counts for each of them).
    duplicate_messages: int = 0

    @property
    def key(self) -> bytes:
        return self.entry.key

    @property
    def key_hex(self) -> str:
        return self.key.hex().upper()

    @property
    def complete(self) -> bool:
        return (not self.problems and self.expected is not None
                and len(self.sequenced) == self.expected
                and all(k in self.sequenced for k in range(1, self.expected + 1)))

    def missing_sequence_numbers(self, limit: int = 10) -> List[int]:
        # The count is untrusted: walk it lazily, never materialise 1..N.
        if self.expected is None:
            return []
        return list(itertools.islice((k for k in range(1, self.expected + 1) if k not in self.sequenced), limit))

    def why_incomplete(self) -> str:
        if self.problems:
            return "; ".join(self.problems)
        if self.expected is None:
            return f"its count message is missing ({len(self.sequenced)} sequenced messages found)"
        missing = self.missing_sequence_numbers()
        return (f"{self.expected} sequenced messages expected, {len(self.sequenced)} found"
                + (f"; missing {missing}" if missing else ""))

    def ordered_messages(self) -> List[PhysicalMessage]:
        """Sequenced messages 1..N, or IncompleteAttachmentError."""
        if not self.complete:
            raise IncompleteAttachmentError(
                f"attachment {self.key_hex} ({self.entry.kind} {self.entry.name}) is incomplete: "
                f"{self.why_incomplete()}", self.header_message.location().within(self.key_hex))
        return [self.sequenced[k] for k in range(1, self.expected + 1)]


@dataclass(frozen=True)
class BrokenHeader:
    """A MsgType 100000 message that is no CMI attachment header (the reason in ``problem``)."""

    message: PhysicalMessage
    problem: str
    duplicate_messages: int = 0  # identical copies of it that were dropped


MessageId = Tuple[str, int]  # (source, 0-based index) of a physical message


@dataclass
class Assembly:
    attachments: List[Attachment]
    roles: Dict[MessageId, Tuple[str, Optional[bytes], Optional[int]]]  # (source, index) -> role
    broken_headers: List[BrokenHeader] = field(default_factory=list)
    # Each dropped identical copy -> the kept message it repeats, by physical message; only actual
    # copies are held, so a capture of millions of distinct messages keeps this empty.
    duplicates: Dict[MessageId, MessageId] = field(default_factory=dict)

    def role_of(self, message: PhysicalMessage) -> Tuple[str, Optional[bytes], Optional[int]]:
        return self.roles.get((message.source, message.index), (ROLE_OTHER, None, None))

    def duplicate_of(self, message: PhysicalMessage) -> Optional[MessageId]:
        """The kept message this physical message is a dropped identical copy of, or None."""
        return self.duplicates.get((message.source, message.index))


def _assign(roles: Dict, message: PhysicalMessage, role: Tuple[str, Optional[bytes], Optional[int]]) -> None:
    """Give a role to a message and, for a joined segmented message, to each of its pieces."""
    for source, index, _, _ in message.spans:
        roles[(source, index)] = role


def _dedupe(messages: Iterable[PhysicalMessage], dropped: List[Tuple[PhysicalMessage, PhysicalMessage]]
            ) -> Dict[bytes, List[PhysicalMessage]]:
    """CorrelId -> distinct payloads (first occurrence of each). Each identical copy is added to
    ``dropped`` as (copy, the kept message it repeats)."""
    by_correl: Dict[bytes, List[PhysicalMessage]] = defaultdict(list)
    damaged: Dict[bytes, List[PhysicalMessage]] = defaultdict(list)
    for m in messages:
        if m.damage is not None:  # its payload is unknown: it conflicts with nothing
            damaged[m.descriptor.correl_id].append(m)
            continue
        group = by_correl[m.descriptor.correl_id]  # one payload, unless duplicates conflict
        kept = next((other for other in group if other.content_key == m.content_key), None)
        if kept is None:
            group.append(m)
        else:
            dropped.append((m, kept))
    # A damaged copy of a message the capture also holds whole is dropped as a copy of it; a
    # damaged message with no whole copy stands for the message it was, so that its attachment
    # reports the damage.
    for correl, copies in damaged.items():
        group = by_correl.get(correl)
        if not group:
            by_correl[correl] = [copies[0]]
            copies = copies[1:]
            group = by_correl[correl]
        dropped.extend((m, group[0]) for m in copies)
    return by_correl


def _record_duplicates(dropped: Sequence[Tuple[PhysicalMessage, PhysicalMessage]],
                       roles: Dict[MessageId, Tuple[str, Optional[bytes], Optional[int]]]
                       ) -> Dict[MessageId, MessageId]:
    """Each dropped copy's physical messages -> those of the message it repeats, and the role of
    that message given to them. A copy joined from as many pieces as the kept message pairs
    piece with piece; otherwise each of its pieces names the kept message's first piece."""
    duplicates: Dict[MessageId, MessageId] = {}
    for copy, kept in dropped:
        copy_spans, kept_spans = copy.spans, kept.spans
        if len(copy_spans) != len(kept_spans):
            kept_spans = kept_spans[:1] * len(copy_spans)
        for (source, index, _, _), (kept_source, kept_index, _, _) in zip(copy_spans, kept_spans):
            duplicates[(source, index)] = (kept_source, kept_index)
        role = roles.get((kept.source, kept.index))
        if role is not None:
            _assign(roles, copy, role)
    return duplicates


def _choose_sequence_order(candidates: List[Tuple[bytes, PhysicalMessage]],
                           expected: Optional[int]) -> ByteOrder:
    big = {sequence_number(c, "big") for c, _ in candidates}
    little = {sequence_number(c, "little") for c, _ in candidates}
    def is_one_to_expected(numbers) -> bool:  # without building 1..N from an untrusted N
        return len(numbers) == expected and min(numbers) == 1 and max(numbers) == expected

    if expected is not None and expected > 0:
        if is_one_to_expected(big):
            return "big"
        if is_one_to_expected(little):
            return "little"
    # Incomplete: the order whose numbers are smaller is the plausible one.
    return "little" if little and max(little) < max(big) else "big"


def _members(att: Attachment) -> List[Tuple[str, PhysicalMessage]]:
    """The attachment's messages, each with how a problem report names it."""
    named = [("the application message", att.application), ("the count message", att.count_message)]
    named += [(f"sequenced message {k}", m) for k, m in sorted(att.sequenced.items())]
    return [(what, m) for what, m in named if m is not None]


def _unjoined_problem(unjoined: UnjoinedMessage, key: bytes) -> str:
    correl = unjoined.correl_id
    if correl == count_correl_id(key):
        what = "the count message"
    elif is_sequenced(correl):
        what = f"sequenced message {sequence_number(correl, 'big')}"
    else:
        what = f"message {correl.hex().upper()}"
    return f"{what} {unjoined.reason}"


def assemble(messages: Iterable[PhysicalMessage], charsets: CharsetPolicy = CharsetPolicy(),
             unjoined: Sequence[UnjoinedMessage] = ()) -> Assembly:
    """Attachments of the logical messages; ``unjoined`` (logical messages a transport could not
    rebuild from their pieces) are named in the problems of the attachments they belong to."""
    headers: List[PhysicalMessage] = []
    subordinates: List[PhysicalMessage] = []
    for m in messages:
        if m.descriptor is None:
            continue
        if m.descriptor.msg_type == MSGTYPE_CMI_HEADER:
            headers.append(m)
        elif m.descriptor.msg_type == MSGTYPE_CMI_SUBORDINATE:
            subordinates.append(m)

    dropped: List[Tuple[PhysicalMessage, PhysicalMessage]] = []
    by_correl = _dedupe(subordinates, dropped)
    by_key: Dict[bytes, List[Tuple[bytes, PhysicalMessage]]] = defaultdict(list)
    for correl, group in by_correl.items():
        if is_sequenced(correl):
            by_key[correl[KEY]].extend((correl, m) for m in group)

    roles: Dict[MessageId, Tuple[str, Optional[bytes], Optional[int]]] = {}
    attachments: List[Attachment] = []
    broken_headers: List[BrokenHeader] = []
    seen_keys: Dict[bytes, Attachment] = {}
    header_groups = _dedupe(headers, dropped)
    copies: Dict[int, int] = {}  # id() of a kept message (alive in the groups) -> its dropped copies
    for _, kept in dropped:
        copies[id(kept)] = copies.get(id(kept), 0) + 1
    for correl, group in header_groups.items():
        for hm in group:
            _assign(roles, hm, (ROLE_HEADER, None, None))
        if len(group) > 1:
            # Which one the sender meant cannot be told: neither is trusted.
            where = ", ".join(f"message {message_number(m.index)} of {m.source}" for m in group)
            broken_headers.extend(BrokenHeader(m, f"{len(group)} different header messages share CorrelId "
                                                  f"{correl.hex().upper()} ({where})", copies.get(id(m), 0))
                                  for m in group)
            continue
        hm = group[0]
        if hm.problem:
            broken_headers.append(BrokenHeader(hm, f"the header message: {hm.problem}", copies.get(id(hm), 0)))
            continue
        try:
            header = parse_header(hm.payload, integer_order(hm.descriptor.encoding),
                                  message_code_page(hm, charsets), hm.location())
        except CmiFormatError as e:
            # One unreadable header must not hide the rest of the capture: it is listed instead.
            broken_headers.append(BrokenHeader(hm, e.summary(), copies.get(id(hm), 0)))
            continue
        app_group = by_correl.get(header.message_correl_id, [])
        for m in app_group:
            _assign(roles, m, (ROLE_APPLICATION, None, None))
        for entry in header.attachments:
            att = Attachment(header, entry, hm, application=app_group[0] if app_group else None)
            other = seen_keys.get(entry.key)
            if other is not None:
                # Their messages cannot be told apart: both attachments are unusable.
                shared = (f"attachment key {entry.key.hex().upper()} is listed by two header messages "
                          f"(message {message_number(other.header_message.index)} of "
                          f"{other.header_message.source} and message {message_number(hm.index)} of {hm.source})")
                for unusable in (other, att):
                    unusable.problems.append(shared)
                    unusable.unusable = unusable.unusable or shared
            seen_keys[entry.key] = att
            if len(app_group) > 1:
                att.problems.append(f"{len(app_group)} different application messages")
            count_group = by_correl.get(count_correl_id(entry.key), [])
            if len(count_group) > 1:
                att.problems.append(f"{len(count_group)} different count messages")
            if count_group:
                cm = att.count_message = count_group[0]
                _assign(roles, cm, (ROLE_COUNT, entry.key, 0))
                if cm.length != 4:
                    att.problems.append(f"count message has {cm.length} bytes, not 4")
                else:
                    wire = WireFormat(integer_order(cm.descriptor.encoding))
                    att.expected = FieldReader(cm.payload, wire, cm.location).int32("message count")
                    if att.expected < 0:
                        att.problems.append(f"count message holds {att.expected}")
            candidates = by_key.get(entry.key, [])
            if candidates:
                order = _choose_sequence_order(candidates, att.expected)
                for correl_id, m in candidates:
                    k = sequence_number(correl_id, order)
                    _assign(roles, m, (ROLE_SEQUENCED, entry.key, k))
                    if k in att.sequenced:
                        att.problems.append(f"sequenced message {k} has conflicting duplicates")
                        att.untrusted[k] = CONFLICTING_DUPLICATES
                    att.sequenced[k] = m
            for lost in unjoined:
                if lost.correl_id[KEY] == entry.key:
                    att.problems.append(_unjoined_problem(lost, entry.key))
                    if is_sequenced(lost.correl_id):
                        att.untrusted.setdefault(sequence_number(lost.correl_id, order if candidates else "big"),
                                                 lost.reason)
            att.problems.extend(f"{what}: {m.problem}" for what, m in _members(att) if m.problem)
            att.untrusted.update((k, m.problem) for k, m in att.sequenced.items() if m.problem)
            # Every message of its groups, conflicting ones too (``sequenced`` keeps one), and
            # the pieces a transport found repeated inside a joined message.
            att.duplicate_messages = sum(copies.get(id(m), 0) + len(m.origin.repeated_parts) for m in itertools.chain(
                (hm,), app_group, count_group, (m for _, m in candidates)))
            attachments.append(att)
    duplicates = _record_duplicates(dropped, roles)
    for m in itertools.chain(headers, subordinates):
        duplicates.update(((copy[0], copy[1]), (kept[0], kept[1])) for copy, kept in m.origin.repeated_parts)
    return Assembly(attachments, roles, broken_headers, duplicates)
