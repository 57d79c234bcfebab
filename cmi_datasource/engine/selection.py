"""Which dataset attachments a read of the dataset view returns, and the damage that stops a
FAILFAST read before it starts: option ``dataset`` or ``attachment``, or the only complete data
set (several when their variables are identical: they are unioned), with errors that list the
candidates and say what to read instead."""
from __future__ import annotations

from typing import List, Optional, Sequence

from ..cmi.assembly import ROLE_OTHER, Attachment
from ..cmi.header import ATTACHMENT_DATASET
from ..errors import AttachmentError, CmiOptionError
from ..payload.sas_dataset import DatasetLayout, arrow_schema
from .capture import Capture


def _describe(atts: Sequence[Attachment]) -> str:
    return "; ".join(f"{a.entry.name} (attachment {a.key_hex}, "
                     f"{'complete' if a.complete else 'incomplete'})" for a in atts)


def select_datasets(capture: Capture, dataset: Optional[str] = None, attachment: Optional[str] = None,
                    tolerant: bool = False) -> List[Attachment]:
    """The dataset attachments a read returns (several only when unionable). Not ``tolerant``
    (FAILFAST), damage in them or anywhere it cannot be placed raises."""
    if not tolerant:
        check_unplaced_damage(capture)
    chosen = _named(capture, dataset, attachment)
    if tolerant:
        layouts: List[DatasetLayout] = [r.layout for r in map(capture.recovery, chosen) if r.layout is not None]
    else:
        check_undamaged(chosen)
        for a in chosen:
            a.ordered_messages()  # IncompleteAttachmentError for an incomplete selection
        layouts = [capture.layout(a) for a in chosen]
    schemas = [arrow_schema(layout) for layout in layouts]
    if any(not s.equals(schemas[0], check_metadata=True) for s in schemas[1:]):
        raise CmiOptionError(
            "several datasets with different variables; choose one with option('dataset', 'LIB.MEMBER') "
            f"or option('attachment', '<key>'): {_describe(chosen)}")
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
            raise CmiOptionError(f"no attachment {wanted} in {paths}; attachments: {_describe(attachments)}")
        if chosen[0].entry.attachment_type != ATTACHMENT_DATASET:
            raise CmiOptionError(f"attachment {wanted} is an external file; read it with option('view', 'files')")
        return chosen
    if dataset:
        wanted = dataset.strip().upper()
        chosen = [a for a in datasets if a.entry.name == wanted
                  or ("." not in wanted and a.entry.name.split(".", 1)[-1] == wanted)]
        if not chosen:
            raise CmiOptionError(f"no dataset {wanted} in {paths}; datasets: {_describe(datasets)}")
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


def check_unplaced_damage(capture: Capture) -> None:
    """Raise the error of the first damaged stretch no attachment claims: what it held is
    unknown, so it may have been part of any of them."""
    for m in capture.messages:
        if m.damage is not None and capture.assembly.role_of(m)[0] == ROLE_OTHER:
            raise m.damage.error()
