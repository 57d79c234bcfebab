"""The CMI roles of a TIB/RV capture's messages: attachment keys from the capture's content, and
sequence numbers from the capture's order, with what the content lets one check of that order.

RV carries no correlation ids worth the name: SAS lets a sender leave every correlid of an
HDR blank, and the messages after it carry none. CMI assembly (``cmi/assembly.py``) groups by
CorrelId, so each message is given the one CMI over MQ would carry: the HDR's attachments run
one after another, each from the message after the HDR (and its MSG or DATA) up to its LST;
message k of an attachment gets sequenced CorrelId k, its LST the count message.

**Keys.** A correlid sent blank is replaced by a key derived from the HDR's group: the HDR, its
application message and its attachments' messages up to the last LST, each by its type, length
and CRC-32 (the message index's ``content_key``), plus how many groups of the same file came
before with the same content (the occurrence). So the same bytes give the same keys wherever
the file is stored or however it is named; an attachment sent twice in one capture gets two
keys (occurrence 1 and 2). The same group in two files of one load (a capture copied twice)
gets the same keys: its messages are identical copies of each other, read once, as MQ reads a
message delivered twice. A correlid sent non-blank is the key, as over MQ.

**Order.** Nothing in an RV attachment numbers its messages: no sequence number, offset or time
(docs/spec/tibrv.md#order; the capture holds each message as the RV API serializes it, without the daemon's
packet sequence). An ATO message says how many observations it holds (field 1), the DAT how
many the data set has (field 7), the LST how many messages the attachment has. RV delivers the
messages of one sender on one subject in the order sent, so capture order is the order the
sender defines, and it is taken as message k's place when the content agrees with it:

- the LST counts the messages found (or is lost) and the ATO messages hold the observations the
  DAT declares (no more than it, while the LST is not seen): each message's place is its place
  in the capture;
- the capture holds more messages than the LST counts, exactly as many more as messages that
  repeat the message before them byte for byte, and without those the ATO messages add up to
  the DAT's observations and no two are identical: each repeat is a copy of the message before
  it (read once, named by the messages view's ``duplicate_of``), and the attachment reports the
  miscount;
- any other miscount whose ATO messages still add up, none identical to another, lost or added
  a message that held no observations: their places stand, and the attachment reports it;
- otherwise the place of every ATO message is unproven (a message lost or added before it may
  have moved it): each is marked so, and reading around damage trusts none of their rows.

A message that does not read (``transport.py``) keeps its place, as a damaged one: observations
before it and, as the DAT's count places them, after it can be trusted (``engine/recovery.py``).
An ATO message before its DAT and VAR, or after its LST, is found out, and so is one ATO message
lost, repeated or damaged. What leaves every count right cannot be told from the order the
sender sent: two messages of the same type exchanging places (two ATO messages, say), or one
message lost and another repeated that holds as many observations; they are read in capture
order.
"""
from __future__ import annotations

import dataclasses
import hashlib
import struct
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from ...cmi.correl import CORREL_ID_SIZE, KEY_SIZE, MSGTYPE_CMI_SUBORDINATE, count_correl_id, sequence_correl_id
from ...cmi.header import CmiHeader
from ...messages import Descriptor, PhysicalMessage
from . import records
from .records import ENCODING, RvDetails, is_blank

_COUNT = records.WIRE.structs()[0]


@dataclass
class _Attachment:
    members: List[PhysicalMessage] = field(default_factory=list)  # between its start and its LST
    lst: Optional[PhysicalMessage] = None


@dataclass
class _Group:
    """An HDR and the messages it heads."""

    header: PhysicalMessage
    applications: List[PhysicalMessage] = field(default_factory=list)
    attachments: List[_Attachment] = field(default_factory=list)

    @property
    def messages(self) -> List[PhysicalMessage]:
        found = [self.header, *self.applications]
        for att in self.attachments:
            found += att.members + ([att.lst] if att.lst is not None else [])
        return found


def kind(message: PhysicalMessage) -> str:
    details = message.details
    return details.kind if isinstance(details, RvDetails) else ""


def cmi_messages(messages: Sequence[PhysicalMessage]) -> List[PhysicalMessage]:
    """The messages of a load, each with the descriptor CMI assembly groups it by; a message no
    attachment claims keeps none, with a problem saying so."""
    by_file: Dict[str, List[PhysicalMessage]] = {}
    for m in messages:
        by_file.setdefault(m.source, []).append(m)
    return [out for run in by_file.values() for out in _file(run)]


def _file(messages: Sequence[PhysicalMessage]) -> List[PhysicalMessage]:
    out: List[PhysicalMessage] = []
    occurrences: Counter = Counter()
    pending: List[object] = []  # groups and stray messages, in capture order
    group: Optional[_Group] = None
    att: Optional[_Attachment] = None
    for m in messages:
        what = kind(m)
        if what == "HDR":
            group, att = (_Group(m), None) if m.damage is None else (None, None)
            pending.append(group or m)
            continue
        if group is not None and att is None and not group.attachments and what in ("MSG", "DATA") \
                and m.damage is None:
            group.applications.append(m)
            continue
        if att is None:
            if group is None or len(group.attachments) == group.header.details.count:
                pending.append(m)
                continue
            att = _Attachment()
            group.attachments.append(att)
        if what == "LST":
            att.lst, att = m, None
        else:
            att.members.append(m)
    for item in pending:
        if isinstance(item, _Group):
            digest = _digest(item)
            occurrences[digest] += 1
            out += _numbered(item, digest, occurrences[digest])
        else:
            out.append(_stray(item))
    return out


def _stray(m: PhysicalMessage) -> PhysicalMessage:
    if m.damage is not None:
        return m
    return dataclasses.replace(m, descriptor=None, problem=f"{kind(m) or 'an RV'} message outside any attachment "
                                                            f"(no HDR lists one still open)")


def _fingerprint(m: PhysicalMessage) -> bytes:
    """What a message adds to its group's digest: its type, length and CRC-32 (for a damaged
    one, the bytes it spans in the file)."""
    length, crc = m.content_key if m.damage is None else (m.file_end - m.file_offset, 0)
    return kind(m).encode() + b"\0" + struct.pack(">QI", length, crc)


def _digest(group: _Group) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for m in group.messages:
        h.update(_fingerprint(m))
    return h.digest()


def derived_correl_id(digest: bytes, occurrence: int, role: str) -> bytes:
    """A 24-byte correlid for one sent blank: the first 16 bytes derived from the group's digest,
    its occurrence in the file and the role ("header", "message", "attachment 1", ...)."""
    derived = hashlib.blake2b(digest + struct.pack(">I", occurrence) + role.encode(), digest_size=KEY_SIZE)
    return derived.digest() + bytes(CORREL_ID_SIZE - KEY_SIZE)


def _keyed(header: CmiHeader, digest: bytes, occurrence: int) -> CmiHeader:
    def correl(sent: bytes, role: str) -> bytes:
        return derived_correl_id(digest, occurrence, role) if is_blank(sent) else sent

    return dataclasses.replace(
        header, header_correl_id=correl(header.header_correl_id, "header"),
        message_correl_id=correl(header.message_correl_id, "message"),
        attachments=tuple(dataclasses.replace(e, correl_id=correl(e.correl_id, f"attachment {n + 1}"))
                          for n, e in enumerate(header.attachments)))


def _with_correl(m: PhysicalMessage, correl_id: bytes) -> PhysicalMessage:
    return dataclasses.replace(m, descriptor=Descriptor(MSGTYPE_CMI_SUBORDINATE, correl_id, ENCODING, 0))


def _numbered(group: _Group, digest: bytes, occurrence: int) -> List[PhysicalMessage]:
    hm = group.header
    header = _keyed(hm.details.header, digest, occurrence)
    out = [dataclasses.replace(hm, payload=records.header_bytes(header),
                               descriptor=dataclasses.replace(hm.descriptor, correl_id=header.header_correl_id))]
    out += [_with_correl(m, header.message_correl_id) for m in group.applications]
    for entry, att in zip(header.attachments, group.attachments):
        out += _attachment(entry.key, att)
    return out


def _attachment(key: bytes, att: _Attachment) -> List[PhysicalMessage]:
    """The attachment's messages with their CorrelIds: sequence numbers in capture order, copies
    given the number of the message they repeat, and ATO messages whose place is unproven
    marked so (see the module's docstring)."""
    members = att.members
    places, problem, unproven = _places(members, att.lst)
    out = []
    for m, k in zip(members, places):
        if unproven is not None and kind(m) == "ATO" and m.damage is None:
            m = dataclasses.replace(m, problem=unproven)
        out.append(_with_correl(m, sequence_correl_id(key, k)))
    if att.lst is not None:
        count = _with_correl(att.lst, count_correl_id(key))
        if att.lst.damage is None:
            count = dataclasses.replace(count, payload=_COUNT.pack(places[-1] if places else 0), problem=problem)
        out.append(count)
    return out


def _places(members: Sequence[PhysicalMessage], lst: Optional[PhysicalMessage]
            ) -> Tuple[List[int], Optional[str], Optional[str]]:
    """Each member's sequence number, the LST's problem and, when the ATO messages' places are
    unproven, why (see the module's docstring)."""
    found = len(members)
    in_order = list(range(1, found + 1))
    counted = lst.details.count if lst is not None and lst.damage is None else None
    if counted is None or counted == found:  # no message lost or added, as far as the LST tells
        agree, why = _observations(members, end_seen=counted is not None)
        return in_order, None, None if agree is not False else f"cannot be placed: {why}{_MOVED}"
    problem = f"its LST counts {counted} messages, {found} were found between the header and it"
    repeats = {i for i in range(1, found) if _repeats(members[i], members[i - 1])}
    if found > counted and len(repeats) == found - counted:
        kept = [m for i, m in enumerate(members) if i not in repeats]
        if _observations(kept)[0] and not _identical_observations(kept):
            places, k = [], 0
            for i in range(found):
                k += i not in repeats
                places.append(k)
            return places, (f"{problem}; the messages that repeat the one before them byte for byte "
                            f"({len(repeats)}) are read as copies of it"), None
    agree, why = _observations(members)
    if agree and _identical_observations(members):
        agree, why = False, "two of its ATO messages are identical, as a copy would be"
    if agree:  # the message lost or added held no observations
        return in_order, f"{problem}; the ATO messages hold the observations the DAT declares", None
    return in_order, problem, (f"cannot be placed: its attachment's LST counts {counted} messages, {found} were "
                               f"found, and {why}{_MOVED}")


_MOVED = ", so a message lost or added before it may have moved it"


def _repeats(m: PhysicalMessage, before: PhysicalMessage) -> bool:
    return (m.damage is None and before.damage is None and kind(m) == kind(before)
            and m.content_key == before.content_key)


def _identical_observations(members: Sequence[PhysicalMessage]) -> bool:
    atos = [m.content_key for m in members if kind(m) == "ATO" and m.damage is None]
    return len(set(atos)) != len(atos)


def _observations(members: Sequence[PhysicalMessage], end_seen: bool = True) -> Tuple[Optional[bool], str]:
    """Whether the ATO messages hold the observations the DAT declares: True; False, and why; or
    None when it cannot be told (no DAT count, a damaged message that may have held some, or,
    before the LST is seen, fewer than declared), and why."""
    definitions = [m for m in members if kind(m) == "DAT" and m.damage is None]
    if len(definitions) != 1 or definitions[0].details.count is None or definitions[0].details.count < 0:
        return None, "no DAT declares how many observations the data set has"
    declared = definitions[0].details.count
    held = sum(m.details.count or 0 for m in members if kind(m) == "ATO" and m.damage is None)
    if held > declared:
        return False, f"the ATO messages hold {held} observations, more than the {declared} the DAT declares"
    if any(m.damage is not None and kind(m) in ("ATO", "") for m in members):
        return None, "a damaged message hides how many observations the messages hold"
    if held < declared:
        return (False if end_seen else None), f"the ATO messages hold {held} observations, the DAT declares {declared}"
    return True, ""
