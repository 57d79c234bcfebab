"""Reading around damage: which observations of a dataset attachment can be trusted, and what
is lost where. The read modes PERMISSIVE and DROPMALFORMED (``modes.py``) plan from this.

Trust is strict. The observation stream is the sequenced messages after the definitions, end
to end; a message that is missing, damaged, duplicated with another payload or made of
segments that do not join is a hole in it. Before the first hole every byte's place is known,
so every whole observation there is trusted. After a hole the place of the next byte is
unknown: its observations are trusted only when the layout proves where they start, that is
when every observation message of the attachment (the last excepted) holds whole
observations, so that each message starts on an observation boundary. Otherwise everything
after the first hole is lost. What is lost is counted from the dataset definition's number
of observations when it declares one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence, Tuple

from ..cmi.assembly import Attachment
from ..errors import CmiFormatError, DatasetLayoutError, IncompleteAttachmentError, KeptError, Location
from ..messages import PhysicalMessage
from ..payload.sas_dataset import (RECORD_DATASET, RECORD_OBSERVATIONS, RECORD_TYPE_SIZE, RECORD_VARIABLES,
                                   DatasetLayout, RecordStream, read_definitions, read_layout, record_type_of)


@dataclass(frozen=True)
class LostRows:
    """Observations of one attachment that cannot be read, and why: one ``_corrupt_record`` row
    in PERMISSIVE mode."""

    dataset: str
    error: KeptError  # what went wrong and where (file, message, offset, attachment, sequence)
    first: Optional[int] = None  # 0-based number of the first lost observation, when known
    count: Optional[int] = None  # how many are lost, when known
    # One of several gaps of an attachment whose sizes are not known apart: (which, of how many,
    # the observations all of them cost when known).
    gap: Optional[Tuple[int, int, Optional[int]]] = None

    def what_is_lost(self) -> str:
        if self.gap is not None:
            which, gaps, in_all = self.gap
            cost = f"{in_all} observations" if in_all is not None else "an unknown number of observations"
            start = f"observations from {self.first + 1} lost" if self.first is not None else "observations lost"
            return f"{start} in gap {which} of {gaps}, which cost {cost} in all"
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
    the stream's offsets place row r at r * obs_length (``base`` is where its first message's
    data lies)."""

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
            pass  # read what the stream allows below
    if att.unusable:
        error = KeptError(IncompleteAttachmentError, f"{att.unusable}: none of its messages can be told to be "
                          f"its own", att.header_message.location().within(key), IncompleteAttachmentError.hint)
        return Recovery(None, [], [LostRows(name, error, 0)])
    sequenced = att.sequenced
    last = max([att.expected or 0, *sequenced])

    def trusted(k: int) -> bool:
        return k in sequenced and k not in att.untrusted

    def hole_error(k: int, after: Optional[PhysicalMessage]) -> KeptError:
        if k in sequenced:
            m = sequenced[k]
            if m.damage is not None:
                return m.damage.within(key, k)
            why = att.untrusted.get(k, "has no record type")
            return KeptError(IncompleteAttachmentError, f"sequenced message {k} {why}",
                             m.location().within(key, k), IncompleteAttachmentError.hint)
        where = (Location(after.source, None, after.file_end) if after is not None
                 else att.header_message.location()).within(key, k)
        why = att.untrusted.get(k, "is missing from the capture")  # segments that do not join, say
        return KeptError(IncompleteAttachmentError, f"sequenced message {k} {why}", where,
                         IncompleteAttachmentError.hint)

    # The definitions: the leading run of dataset and variable records.
    k, definitions = 1, []
    while k <= last and trusted(k) and _record_type(sequenced[k]) in (RECORD_DATASET, RECORD_VARIABLES):
        definitions.append(full(sequenced[k]))
        k += 1
    try:
        layout, _ = read_definitions(definitions, att.header.wire, codepage_of)
    except CmiFormatError as e:
        cause = (hole_error(k, definitions[-1] if definitions else None) if k <= last and not trusted(k)
                 else KeptError.of(e).within(key))
        problem = f"the data set's definitions cannot be read: {cause.problem}; no observation can be read"
        return Recovery(None, [], [LostRows(name, KeptError(cause.kind, problem, cause.location, cause.hint), 0)])
    obslen, declared = layout.definition.obs_length, layout.definition.nobs

    # Runs of trusted observation messages and the holes between them, in sequence order.
    pieces: List[Tuple[str, list]] = []
    previous: Optional[PhysicalMessage] = definitions[-1] if definitions else None
    for k in range(k, last + 1):
        record_type = _record_type(sequenced[k]) if trusted(k) else None
        if record_type is not None and record_type > RECORD_OBSERVATIONS:
            break  # index and constraint records follow the observations
        m = sequenced.get(k)
        if record_type == RECORD_OBSERVATIONS and (m.descriptor.encoding, m.descriptor.ccsid) == (
                layout.encoding, layout.ccsid):
            if not pieces or pieces[-1][0] != "run":
                pieces.append(("run", []))
            pieces[-1][1].append(m)
            previous = m
            continue
        if record_type is None:
            error = hole_error(k, previous)
        else:
            what = (f"has record type {record_type} among the observations" if record_type != RECORD_OBSERVATIONS
                    else f"has Encoding {m.descriptor.encoding} and CCSID {m.descriptor.ccsid}, the data set "
                         f"{layout.encoding} and {layout.ccsid}")
            error = KeptError(IncompleteAttachmentError, f"sequenced message {k} {what}",
                              m.location().within(key, k), IncompleteAttachmentError.hint)
        if not pieces or pieces[-1][0] != "hole":
            pieces.append(("hole", []))
        pieces[-1][1].append(error)
    if not obslen:
        return Recovery(layout)

    observation_messages = [m for kind, items in pieces if kind == "run" for m in items]
    aligned = all((m.length - RECORD_TYPE_SIZE) % obslen == 0 for m in observation_messages[:-1])
    runs: List[TrustedRun] = []
    holes: List[Tuple[List[KeptError], Optional[int], List[PhysicalMessage]]] = []  # errors, first row, unusable
    at: Optional[int] = 0  # stream offset of the next byte, while known
    for kind, items in pieces:
        if kind == "hole" and at is None and not aligned:
            holes[-1][0].extend(items)  # everything after the first gap is lost already: one stretch
            continue
        if kind == "hole":
            holes.append((items, None if at is None else at // obslen, []))
            at = None
            continue
        if at is None and not aligned:
            holes[-1][2].extend(items)
            continue
        base = 0 if at is None else at
        stream = RecordStream(RECORD_OBSERVATIONS, items, base=base)
        first, stop = -(-base // obslen), stream.length // obslen
        if stop > first:
            runs.append(TrustedRun(stream, first, stop))
        if at is not None:
            at = stream.length

    recovered = sum(run.last_row - run.first_row for run in runs)
    lost_in_all = declared - recovered if declared >= 0 else None
    if lost_in_all is not None and lost_in_all < 0:
        # More observations than the definition declares: it does not describe these messages.
        where = att.header_message.location().within(key)
        error = KeptError(DatasetLayoutError, f"the dataset definition declares {declared} observations of "
                          f"{obslen} bytes but the observation messages hold {recovered} or more: the "
                          f"definitions do not describe them", where, DatasetLayoutError.hint)
        return Recovery(layout, [], [LostRows(name, error, 0)])
    lost: List[LostRows] = []
    for errors, first, unusable in holes:
        first_error = errors[0]
        problem = first_error.problem
        if len(errors) > 1:
            problem += f", and {len(errors) - 1} more sequenced message{'s' if len(errors) > 2 else ''} after it"
        if unusable:
            problem += (f"; the {len(unusable)} messages present after the gap cannot be placed on observation "
                        f"boundaries (observations straddle messages), so their observations are lost too")
        count = lost_in_all if len(holes) == 1 else None
        lost.append(LostRows(name, KeptError(first_error.kind, problem, first_error.location, first_error.hint),
                             first, count, (len(lost) + 1, len(holes), lost_in_all) if len(holes) > 1 else None))
    if lost_in_all == 0:
        return Recovery(layout, runs, [])  # the gaps held no observation (index records, say)
    partial = bool(runs) and runs[-1].stream.length % obslen != 0
    if not holes and (lost_in_all or partial):
        end = observation_messages[-1] if observation_messages else previous
        where = (end.location(end.length) if end is not None else att.header_message.location()).within(key)
        problem = (f"the dataset definition declares {declared} observations and {recovered} can be read: the "
                   f"observation stream ends early" if lost_in_all else
                   "the observation stream ends inside an observation")
        lost.append(LostRows(name, KeptError(IncompleteAttachmentError, problem, where, IncompleteAttachmentError.hint),
                             recovered, lost_in_all))
    return Recovery(layout, runs, lost)


def _record_type(message: PhysicalMessage) -> Optional[int]:
    try:
        return record_type_of(message)
    except CmiFormatError:
        return None
