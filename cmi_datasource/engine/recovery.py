"""Reading around damage: which observations of a dataset attachment can be trusted, and what
is lost where. The read modes PERMISSIVE and DROPMALFORMED plan from this.

The trust rule. An observation is returned as good only when the place of its bytes in the
observation stream is proven; its row number is then its place divided by the observation
length. The observation stream is the data of the observation messages (record type 3) in
sequence order, end to end; a sequenced message that is missing, damaged, duplicated with
another payload, of another record type or encoding, or made of segments that do not join is a
hole in it, whose length is unknown. A message's place is proven in two ways only:

* from the start: every observation message before it is present and trusted, so its place is
  the sum of their lengths;
* from the end: the dataset definition declares its number of observations (so the stream is
  ``nobs * obs_length`` bytes), the end of the stream is seen (the message numbered as the
  count message says is present, or a trusted index or constraint record follows), and every
  observation message after it is present and trusted, so its place is the stream's length
  less theirs.

Everything between the last place proven from the start and the first proven from the end is
one lost stretch, reported once with every fault in it: observation messages present between
two holes cannot be placed (a hole's length is unknown), so their observations are lost too.
Whether the messages happen to hold whole observations proves nothing: the length of a missing
message is not known.

Work and memory follow the messages present, never a declared count or sequence number: a run
of missing sequence numbers is one range, however long.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, List, Optional, Tuple, Union

from ..cmi.assembly import Attachment
from ..errors import CmiFormatError, DatasetLayoutError, IncompleteAttachmentError, KeptError, Location
from ..messages import PhysicalMessage
from ..payload.sas_dataset import (RECORD_DATASET, RECORD_OBSERVATIONS, RECORD_VARIABLES,
                                   DatasetLayout, RecordStream, read_definitions, read_layout, record_type_of)


@dataclass(frozen=True)
class LostRows:
    """Observations of one attachment that cannot be read, and why: one ``_corrupt_record`` row
    in PERMISSIVE mode."""

    dataset: str
    error: KeptError  # what went wrong and where (file, message, offset, attachment, sequence)
    first: Optional[int] = None  # 0-based number of the first lost observation, when known
    count: Optional[int] = None  # how many are lost, when known

    def what_is_lost(self) -> str:
        if self.count is not None and self.first is not None:
            if self.count == 1:
                return f"observation {self.first + 1} lost"
            return f"observations {self.first + 1} to {self.first + self.count} lost ({self.count})"
        if self.count is not None:
            return f"{self.count} observation{'s' if self.count != 1 else ''} lost"
        if self.first is not None:
            return f"observations from {self.first + 1} on lost (how many is not known)"
        return "an unknown number of observations lost"

    def text(self) -> str:
        """The ``_corrupt_record`` value: the data set, what happened, what is lost, and where."""
        return f"{self.dataset}: {self.error.problem}; {self.what_is_lost()} ({self.error.location.describe()})"


@dataclass(frozen=True)
class TrustedRun:
    """Consecutive observation messages whose observations [first_row, last_row) are trusted;
    the stream's offsets place row r at r * obs_length (its first message's data lies at the
    stream's ``base``)."""

    stream: RecordStream
    first_row: int
    last_row: int


@dataclass
class Recovery:
    """What can be read of a dataset attachment: its layout (None when its definitions are
    lost), its trusted runs and what is lost."""

    layout: Optional[DatasetLayout]
    runs: List[TrustedRun] = field(default_factory=list)
    lost: List[LostRows] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return sum(run.last_row - run.first_row for run in self.runs)


Full = Callable[[PhysicalMessage], PhysicalMessage]  # the message with its whole payload


@dataclass(frozen=True)
class _Hole:
    """Sequence numbers [first, last] of the observation stretch that cannot be read, and why."""

    first: int
    last: int
    error: KeptError


_Item = Union[PhysicalMessage, _Hole]  # an observation message that can be read, or a hole


def whole(att: Attachment, layout: DatasetLayout, stream: Optional[RecordStream]) -> Recovery:
    """A complete attachment whose layout reads: one run of every observation."""
    if stream is None or not layout.definition.obs_length:
        return Recovery(layout)
    return Recovery(layout, [TrustedRun(stream, 0, layout.observations)])


def recover(att: Attachment, full: Full, codepage_of) -> Recovery:
    """What can be trusted of a dataset attachment that is incomplete or whose layout does not
    read (see the module's docstring)."""
    key, name = att.key_hex, att.entry.name
    if att.complete:
        try:
            messages = [full(m) if m.is_partial and _record_type(m) != RECORD_OBSERVATIONS else m
                        for m in att.ordered_messages()]
            layout, stream = read_layout(messages, att.header.wire, codepage_of)
            return whole(att, layout, stream)
        except CmiFormatError:
            pass  # read what the stream proves below
    if att.unusable:
        error = KeptError(IncompleteAttachmentError, f"{att.unusable}: none of its messages can be told to be "
                          f"its own", att.header_message.location().within(key), IncompleteAttachmentError.hint)
        return Recovery(None, [], [LostRows(name, error, 0)])

    # The definitions: the leading run of dataset and variable records.
    k, definitions = 1, []
    while _trusted(att, k) and _record_type(att.sequenced[k]) in (RECORD_DATASET, RECORD_VARIABLES):
        definitions.append(full(att.sequenced[k]))
        k += 1
    try:
        layout, _ = read_definitions(definitions, att.header.wire, codepage_of)
    except CmiFormatError as e:
        if not _trusted(att, k) and _present_from(att, k):
            cause = _fault(att, k, _next_present(att, k), definitions[-1] if definitions else None)
        else:
            cause = KeptError.of(e).within(key)
        problem = f"the data set's definitions cannot be read: {cause.problem}; no observation can be read"
        return Recovery(None, [], [LostRows(name, KeptError(cause.kind, problem, cause.location, cause.hint), 0)])
    if not layout.definition.obs_length:
        return Recovery(layout)
    items, end_seen = _observation_items(att, k, layout, definitions[-1] if definitions else None)
    return _place(att, layout, items, end_seen)


def _observation_items(att: Attachment, start: int, layout: DatasetLayout,
                       previous: Optional[PhysicalMessage]) -> Tuple[List[_Item], bool]:
    """The observation messages from sequence number ``start`` on, in order, with a ``_Hole`` for
    each run of missing numbers and for each message that cannot be read as one of them; and
    whether the end of the observation stream is seen. Walks the messages present only."""
    key = att.key_hex
    numbers = sorted(n for n in {*att.sequenced, *att.untrusted} if n >= start)
    expected = att.expected if att.expected is not None and att.expected >= 0 else None
    items: List[_Item] = []
    at, end_seen = start, False
    for n in numbers:
        if n > at:
            items.append(_Hole(at, n - 1, _fault(att, at, n, previous)))
        at = n + 1
        m = att.sequenced.get(n)
        record_type = _record_type(m) if _trusted(att, n) else None
        if record_type is not None and record_type > RECORD_OBSERVATIONS:
            end_seen = True  # index and constraint records follow the observations
            break
        if record_type == RECORD_OBSERVATIONS and (m.descriptor.encoding, m.descriptor.ccsid) == (
                layout.encoding, layout.ccsid):
            items.append(m)
            previous = m
            continue
        if record_type is None:
            error = _fault(att, n, n + 1, previous)
        else:
            what = (f"has record type {record_type} among the observations" if record_type != RECORD_OBSERVATIONS
                    else f"has Encoding {m.descriptor.encoding} and CCSID {m.descriptor.ccsid}, the data set "
                         f"{layout.encoding} and {layout.ccsid}")
            error = KeptError(IncompleteAttachmentError, f"sequenced message {n} {what}",
                              m.location().within(key, n), IncompleteAttachmentError.hint)
        items.append(_Hole(n, n, error))
    else:
        if expected is not None and at <= expected:
            items.append(_Hole(at, expected, _fault(att, at, expected + 1, previous)))
        # The message the count message names last ends the stream; one numbered past the count
        # leaves it open (which of the two is wrong cannot be told).
        end_seen = (expected is not None and bool(items) and not isinstance(items[-1], _Hole)
                    and (not numbers or numbers[-1] == expected))
    return items, end_seen


def _place(att: Attachment, layout: DatasetLayout, items: List[_Item], end_seen: bool) -> Recovery:
    """The trusted runs and the lost stretch of the observation items (the module's rule)."""
    key, name = att.key_hex, att.entry.name
    obslen, declared = layout.definition.obs_length, layout.definition.nobs
    holes = [i for i, item in enumerate(items) if isinstance(item, _Hole)]
    prefix = items[:holes[0]] if holes else items
    suffix = items[holes[-1] + 1:] if holes and end_seen and declared >= 0 else []
    unplaced = sum(1 for item in items[len(prefix):len(items) - len(suffix)] if not isinstance(item, _Hole))

    head = RecordStream(RECORD_OBSERVATIONS, prefix)
    head_rows = head.length // obslen
    if declared >= 0 and head_rows > declared or not holes and end_seen and (
            head.length % obslen or declared >= 0 and head_rows != declared):
        # The whole stream is seen and does not fit the definitions: they do not describe it.
        held = f"{head.length} bytes" if head.length % obslen else f"{head_rows} observations"
        error = KeptError(DatasetLayoutError, f"the dataset definition declares "
                          f"{declared if declared >= 0 else 'an unknown number of'} observations of {obslen} bytes "
                          f"but the observation messages hold {held}: the definitions do not describe them",
                          att.header_message.location().within(key), DatasetLayoutError.hint)
        return Recovery(layout, [], [LostRows(name, error, 0)])
    runs = [TrustedRun(head, 0, head_rows)] if head_rows else []

    total = declared * obslen if declared >= 0 else None
    tail = RecordStream(RECORD_OBSERVATIONS, suffix) if suffix else None
    if tail is not None and total - tail.length < head.length:
        unplaced += len(suffix)  # more than the declared observations leave room for: not placed
        tail = None
    lost_from, lost_to = head_rows, None  # rows [lost_from, lost_to) are lost; lost_to None: unknown
    if tail is not None:
        tail = RecordStream(RECORD_OBSERVATIONS, suffix, base=total - tail.length)
        tail_first = -(-tail.starts[0] // obslen)
        if tail_first < declared:
            runs.append(TrustedRun(tail, tail_first, declared))
        lost_to = tail_first
    elif declared >= 0:
        lost_to = max(declared, head_rows)
    if not holes:
        if lost_to is not None and lost_to > lost_from:
            end = prefix[-1] if prefix else None
            where = (end.location(end.length) if end is not None else att.header_message.location()).within(key)
            error = KeptError(IncompleteAttachmentError, f"the dataset definition declares {declared} observations "
                              f"and {head_rows} can be read: the observation stream ends early", where,
                              IncompleteAttachmentError.hint)
            return Recovery(layout, runs, [LostRows(name, error, lost_from, lost_to - lost_from)])
        if declared < 0 and head.length % obslen:
            where = (prefix[-1].location(prefix[-1].length) if prefix else att.header_message.location()).within(key)
            error = KeptError(IncompleteAttachmentError, "the observation stream ends inside an observation", where,
                              IncompleteAttachmentError.hint)
            return Recovery(layout, runs, [LostRows(name, error, head_rows)])
        return Recovery(layout, runs)
    if lost_to is not None and lost_to <= lost_from:
        return Recovery(layout, runs)  # the holes held no observation (index records, say)
    faults = [items[i].error for i in holes]
    first_fault = faults[0]
    problem = first_fault.problem
    if len(faults) > 1:
        problem += f", and {len(faults) - 1} more fault{'s' if len(faults) > 2 else ''} after it"
    if unplaced:
        problem += (f"; the {unplaced} observation message{'s' if unplaced > 1 else ''} present after it cannot be "
                    f"placed in the observation stream (the length of what is missing is unknown), so "
                    f"{'their' if unplaced > 1 else 'its'} observations are lost too")
    count = None if lost_to is None else lost_to - lost_from
    error = KeptError(first_fault.kind, problem, first_fault.location, first_fault.hint)
    return Recovery(layout, runs, [LostRows(name, error, lost_from, count)])


def _trusted(att: Attachment, k: int) -> bool:
    return k in att.sequenced and k not in att.untrusted


def _present_from(att: Attachment, k: int) -> bool:
    return k in att.sequenced or k in att.untrusted or att.expected is not None and k <= att.expected


def _next_present(att: Attachment, k: int) -> int:
    """The first sequence number after k that the capture holds (or past the count): bounded by
    the messages present, never by the numbers between."""
    later = [n for n in (*att.sequenced, *att.untrusted) if n > k]
    return min(later) if later else max(k + 1, (att.expected or 0) + 1)


def _fault(att: Attachment, first: int, stop: int, after: Optional[PhysicalMessage]) -> KeptError:
    """Why sequence numbers [first, stop) cannot be read: the message's damage or problem, or
    that they are missing (one range, however long)."""
    key = att.key_hex
    m = att.sequenced.get(first)
    if m is not None:
        if m.damage is not None:
            return m.damage.within(key, first)
        why = att.untrusted.get(first, "has no record type")
        return KeptError(IncompleteAttachmentError, f"sequenced message {first} {why}",
                         m.location().within(key, first), IncompleteAttachmentError.hint)
    where = (Location(after.source, None, after.file_end) if after is not None
             else att.header_message.location()).within(key, first)
    if first in att.untrusted:  # in the capture, but its segments do not join, say
        what = f"sequenced message {first} {att.untrusted[first]}"
    elif stop - first == 1:
        what = f"sequenced message {first} is missing from the capture"
    else:
        what = f"sequenced messages {first} to {stop - 1} are missing from the capture"
    return KeptError(IncompleteAttachmentError, what, where, IncompleteAttachmentError.hint)


def _record_type(message: PhysicalMessage) -> Optional[int]:
    try:
        return record_type_of(message)
    except CmiFormatError:
        return None
