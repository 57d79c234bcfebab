"""Which dataset attachments a read of the dataset view returns, and the damage that stops a
FAILFAST read before it starts: option ``dataset`` or ``attachment``, or the only complete data
set (several when their variables are identical: they are unioned), with errors that list the
candidates and say what to read instead."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, List, Optional, Sequence, Tuple

from ..cmi.assembly import ROLE_OTHER, Attachment
from ..cmi.header import ATTACHMENT_DATASET
from ..errors import AttachmentError, CmiOptionError, Location
from ..messages import PhysicalMessage
from ..payload.sas_dataset import DatasetLayout, arrow_schema
from .capture import Capture


@dataclass(frozen=True)
class Candidate:
    """An attachment a read could have chosen, as a choice error lists it."""

    name: str
    attachment: str  # the key, 32 hex digits
    kind: str
    complete: bool

    @classmethod
    def of(cls, a: Attachment) -> "Candidate":
        return cls(a.entry.name, a.key_hex, a.entry.kind, a.complete)

    def describe(self) -> str:
        return f"{self.name} (attachment {self.attachment}, {'complete' if self.complete else 'incomplete'})"


class DatasetChoiceError(CmiOptionError):
    """The options choose no data set, or several that cannot be read together. ``candidates``
    are the attachments there are to choose from, for a caller to show its own way (the ``cmi``
    command lists them one a line and says how to name one there)."""

    def __init__(self, problem: str, advice: str = "", candidates: Iterable[Candidate] = ()):
        self.problem, self.advice, self.candidates = problem, advice, tuple(candidates)
        listed = "; ".join(c.describe() for c in self.candidates)
        super().__init__(problem + (f"; {advice}" if advice else "") + (f": {listed}" if listed else ""))

    def __reduce__(self):  # pickled with its fields, not only its text
        return type(self), (self.problem, self.advice, self.candidates)


CHOOSE_ONE = "choose one with option('dataset', 'LIB.MEMBER') or option('attachment', '<key>')"


def select_datasets(capture: Capture, dataset: Optional[str] = None, attachment: Optional[str] = None,
                    tolerant: bool = False, keys: Optional[Sequence[str]] = None) -> List[Attachment]:
    """The dataset attachments a read returns (several only when unionable): those ``keys``
    name when given (a stream's micro-batch: engine/stream.py), else those the options choose.
    Not ``tolerant`` (FAILFAST), damage in them or anywhere it cannot be placed raises."""
    if not tolerant:
        check_unplaced_damage(capture)
    if keys is not None:
        wanted = set(keys)
        chosen = [a for a in capture.dataset_attachments() if a.key_hex in wanted]
    else:
        chosen = _named(capture, dataset, attachment)
    if tolerant:
        layouts: List[DatasetLayout] = [r.layout for r in map(capture.recovery, chosen) if r.layout is not None]
    else:
        check_undamaged(chosen)
        for a in chosen:
            a.ordered_messages()  # IncompleteAttachmentError for an incomplete selection
        layouts = [capture.layout(a) for a in chosen]
    schemas = [arrow_schema(layout) for layout in layouts]
    if keys is None and any(not s.equals(schemas[0], check_metadata=True) for s in schemas[1:]):
        raise DatasetChoiceError(f"several datasets with different variables in {capture.paths}", CHOOSE_ONE,
                                 map(Candidate.of, chosen))
    return chosen


def _named(capture: Capture, dataset: Optional[str], attachment: Optional[str]) -> List[Attachment]:
    """The attachments the options name, or the complete data sets when they name none."""
    attachments, paths = capture.attachments, capture.paths
    datasets = capture.dataset_attachments()
    undescribed = sum(1 for m in capture.messages if m.descriptor is None and m.damage is None)
    if undescribed and not attachments:
        own_views = sorted({v.name for t in map(capture.transport_of, capture.messages) if t for v in t.views})
        raise AttachmentError(
            f"{undescribed} of {len(capture.messages)} messages in {paths} have no message descriptor "
            f"(an MQ queue dumped with dmpmqmsg -dN, or traffic that carries no CMI): CMI attachments are "
            f"found by MsgType and CorrelId, so none can be assembled", hint=(
                f"read the traffic with option('view', '{own_views[0]}')" if own_views else
                "option('view', 'messages') still lists the messages"))
    if attachment:
        wanted = attachment.strip().upper()
        chosen = [a for a in attachments if a.key_hex == wanted]
        if not chosen:
            raise DatasetChoiceError(f"no attachment {wanted} in {paths}", "the attachments are",
                                     map(Candidate.of, attachments))
        if chosen[0].entry.attachment_type != ATTACHMENT_DATASET:
            raise CmiOptionError(f"attachment {wanted} is an external file; read it with option('view', 'files')")
        return chosen
    if dataset:
        wanted = dataset.strip().upper()
        chosen = [a for a in datasets if names_dataset(dataset, a)]
        if not chosen:
            check_damage_hiding(capture, wanted, datasets)
            raise DatasetChoiceError(f"no dataset {wanted} in {paths}", "the datasets are",
                                     map(Candidate.of, datasets))
        return chosen
    if not datasets:
        broken = capture.assembly.broken_headers
        counted = (f"no SAS dataset attachments in {paths} ({len(attachments)} attachments, "
                   f"{len(capture.messages)} messages")
        if broken:
            raise AttachmentError(
                f"{counted}, {len(broken)} unreadable headers); the first: {broken[0].problem}",
                broken[0].message.location(), hint="option('view', 'attachments') lists every header "
                "with why it cannot be read; option('view', 'messages') shows their bytes")
        raise CmiOptionError(counted + "); " + (
            "its attachments are external files: read them with option('view', 'files')"
            if attachments else "see option('view', 'attachments') or option('view', 'messages')"))
    return [a for a in datasets if a.complete] or datasets


def names_dataset(dataset: str, att: Attachment) -> bool:
    """Whether option ``dataset`` (``LIB.MEMBER`` or ``MEMBER``, any case) names the attachment."""
    wanted = dataset.strip().upper()
    return att.entry.name == wanted or ("." not in wanted and att.entry.name.split(".", 1)[-1] == wanted)


def check_undamaged(chosen: Sequence[Attachment]) -> None:
    """Raise the error of the first damaged message of a chosen attachment, named by its
    attachment and sequence number."""
    for att in chosen:
        for k, m in sorted(att.sequenced.items()):
            if m.damage is not None:
                raise m.damage.within(att.key_hex, k).error()
        for unsequenced in (att.count_message, att.application):
            if unsequenced is not None and unsequenced.damage is not None:
                sequence = 0 if unsequenced is att.count_message else None
                raise unsequenced.damage.within(att.key_hex, sequence).error()


def unplaced_damage(capture: Capture) -> List[PhysicalMessage]:
    """The damaged stretches no attachment claims: what they held is unknown, so each may have
    been part of any attachment."""
    return [m for m in capture.damaged() if capture.assembly.role_of(m)[0] == ROLE_OTHER]


def check_unplaced_damage(capture: Capture) -> None:
    """Raise the error of the first damaged stretch no attachment claims."""
    for m in unplaced_damage(capture)[:1]:
        raise m.damage.error()  # type: ignore[union-attr]  # unplaced_damage keeps damaged messages only


def hiding_places(capture: Capture) -> List[Tuple[str, str, Location]]:
    """What may hide an attachment from the readable headers, with where it lies: each header
    that cannot be read (the attachment's name is in it), then each damaged stretch no
    attachment claims (its header may have been in it)."""
    return ([("a damaged attachment header", b.problem,
              b.message.damage.location if b.message.damage is not None else b.message.location())
             for b in capture.assembly.broken_headers]
            + [("a damaged stretch", m.damage.problem, m.damage.location)  # type: ignore[union-attr]
               for m in unplaced_damage(capture)])


def check_damage_hiding(capture: Capture, wanted: str, datasets: Sequence[Attachment]) -> None:
    """A data set the options name is in no readable header: when damage may hide its header,
    raise that (with where the first damage lies) rather than say the capture has no such data
    set."""
    places = hiding_places(capture)
    if not places:
        return
    broken = len(capture.assembly.broken_headers)
    counted = [f"{n} {one if n == 1 else several}" for n, one, several in (
        (broken, "damaged attachment header", "damaged attachment headers"),
        (len(places) - broken, "damaged stretch no attachment claims", "damaged stretches no attachment claims"))
        if n]
    readable = "; ".join(c.describe() for c in map(Candidate.of, datasets)) or "none"
    kind, problem, location = places[0]
    raise AttachmentError(
        f"no readable header names dataset {wanted} in {capture.paths}: {' and '.join(counted)} may hide "
        f"its header; the first is {kind}: {problem}; the readable datasets: {readable}", location,
        hint="option('view', 'attachments') lists every header with why it cannot be read; "
             "option('view', 'messages') shows the damaged messages and their bytes")
