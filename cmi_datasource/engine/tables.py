"""The listing views' schemas and tables (attachments, variables, files, messages), built from
a capture or, for external files, from plans; ``views.py`` puts them in partitions."""
from __future__ import annotations

import dataclasses
from itertools import groupby
from typing import Collection, Dict, Iterator, List, Optional, Sequence, Tuple

import pyarrow as pa

from ..cmi.assembly import ROLE_OTHER, message_code_page
from ..cmi.correl import KEY
from ..cmi.header import ATTACHMENT_DATASET
from ..errors import CmiFormatError, message_number
from ..messages import DETAILS_REREAD, PhysicalMessage
from ..payload.external_file import read_external_file
from ..payload.sas_dataset import record_type_of
from ..transports import capture_format, transports
from .capture import Capture, LeftOut
from .plan import AttachmentPlan
from .reread import reread

ATTACHMENTS_SCHEMA = pa.schema([
    ("attachment", pa.string()), ("kind", pa.string()), ("name", pa.string()),
    ("description", pa.string()), ("complete", pa.bool_()), ("expected_messages", pa.int64()),
    ("found_messages", pa.int64()), ("duplicate_messages", pa.int64()), ("observations", pa.int64()),
    ("variables", pa.int64()), ("label", pa.string()), ("message", pa.binary()),
    ("message_values", pa.list_(pa.string())), ("problem", pa.string()), ("source", pa.string()),
])
VARIABLES_SCHEMA = pa.schema([
    ("dataset", pa.string()), ("attachment", pa.string()), ("position", pa.int32()), ("name", pa.string()),
    ("type", pa.string()), ("length", pa.int32()), ("format", pa.string()), ("informat", pa.string()),
    ("label", pa.string()),
])
FILES_SCHEMA = pa.schema([
    ("attachment", pa.string()), ("name", pa.string()), ("kind", pa.string()), ("lrecl", pa.int64()),
    ("size", pa.int64()), ("content", pa.binary()), ("text", pa.string()),
])
# A message another one repeats, numbered as users number messages (from 1).
MESSAGE_REF = pa.struct([pa.field("source", pa.string()), pa.field("index", pa.int64())])
# The messages view: these columns for every transport, each transport's own between them.
_MESSAGES_FIRST = [
    pa.field("source", pa.string()), pa.field("index", pa.int64()), pa.field("offset", pa.int64()),
    pa.field("transport", pa.string()), pa.field("msg_type", pa.int32()), pa.field("correl_id", pa.string()),
    pa.field("encoding", pa.int32()), pa.field("ccsid", pa.int32()),
]
_MESSAGES_LAST = [
    pa.field("role", pa.string()), pa.field("attachment", pa.string()), pa.field("sequence", pa.int64()),
    pa.field("record_type", pa.int32()), pa.field("length", pa.int64()), pa.field("in_attachment", pa.bool_()),
    # The message this one repeats: an identical copy CMI assembly dropped, or a transport's own
    # redelivery (MQTT DUP), which the transport's row fills in.
    pa.field("duplicate_of", MESSAGE_REF),
    pa.field("problem", pa.string()), pa.field("payload", pa.binary()),
]


def messages_schema() -> pa.Schema:
    """The common columns and every known transport's own (a name two transports share must
    have one type)."""
    fields: Dict[str, pa.Field] = {f.name: f for f in _MESSAGES_FIRST}
    for transport in transports():
        for f in transport.message_columns:
            known = fields.setdefault(f.name, f)
            if not known.type.equals(f.type):
                raise TypeError(f"transport {transport.name} gives messages column {f.name} type {f.type}, "
                                f"another gives it {known.type}")
    fields.update((f.name, f) for f in _MESSAGES_LAST)
    return pa.schema(list(fields.values()))


def _hex(raw: Optional[bytes]) -> Optional[str]:
    return raw.hex().upper() if raw is not None else None


def attachments_table(capture: Capture, keys: Optional[Collection[str]] = None,
                      files: Optional[Collection[str]] = None) -> pa.Table:
    """A row per attachment (only those of ``keys``, when given), per broken header and per file
    the read left out (only those in ``files``, when given: a stream's micro-batch emits the rows
    of no attachment from the files it takes new)."""
    rows = []
    for a in capture.attachments:
        if keys is not None and a.key_hex not in keys:
            continue
        observations = variables = label = None
        problem = None if a.complete else a.why_incomplete()
        if a.complete and a.entry.attachment_type == ATTACHMENT_DATASET:
            try:
                layout = capture.layout(a)
                observations, variables = layout.observations, len(layout.variables)
                label = layout.definition.label
            except CmiFormatError as e:
                problem = e.summary()
        rows.append({
            "attachment": a.key_hex, "kind": a.entry.kind, "name": a.entry.name,
            "description": a.entry.description, "complete": a.complete, "expected_messages": a.expected,
            "found_messages": len(a.sequenced), "duplicate_messages": a.duplicate_messages,
            "observations": observations, "variables": variables,
            "label": label, "message": capture.full(a.application).payload if a.application else None,
            "message_values": _message_values(capture, a.application),
            "problem": problem, "source": a.header_message.source,
        })
    for broken in capture.assembly.broken_headers:
        if files is not None and broken.message.source not in files:
            continue
        descriptor = broken.message.descriptor  # a MsgType 100000 message: it has one
        rows.append({"attachment": _hex(descriptor.correl_id[KEY] if descriptor else None), "kind": "header",
                     "name": "", "description": "", "complete": False, "expected_messages": None,
                     "found_messages": 0, "duplicate_messages": broken.duplicate_messages,
                     "observations": None, "variables": None, "label": None, "message": None,
                     "problem": broken.problem, "source": broken.message.source})
    for lost in capture.left_out:  # files the read left out: no attachment of them is known
        if files is not None and lost.path not in files:
            continue
        rows.append({"complete": False, "found_messages": 0, "problem": lost.text(), "source": lost.path})
    return pa.Table.from_pylist(rows, schema=ATTACHMENTS_SCHEMA)


def _message_values(capture: Capture, message: Optional[PhysicalMessage]) -> Optional[List[str]]:
    if message is None:
        return None
    transport = capture.transport_of(message)
    return transport.message_values(message) if transport is not None else None


def variables_table(capture: Capture, keys: Optional[Collection[str]] = None) -> pa.Table:
    """A row per variable of each complete data set (only those of ``keys``, when given)."""
    rows = []
    for a in capture.attachments:
        if a.entry.attachment_type != ATTACHMENT_DATASET or not a.complete:
            continue
        if keys is not None and a.key_hex not in keys:
            continue
        for position, v in enumerate(capture.layout(a).variables, start=1):
            rows.append({"dataset": a.entry.name, "attachment": a.key_hex, "position": position,
                         "name": v.name, "type": v.sas_type, "length": v.length, "format": v.format,
                         "informat": v.informat, "label": v.label})
    return pa.Table.from_pylist(rows, schema=VARIABLES_SCHEMA)


def files_table(plans: Sequence[AttachmentPlan],
                messages: Optional[Sequence[Optional[Sequence[PhysicalMessage]]]] = None) -> pa.Table:
    """One row per external file; ``messages`` (per plan; None for a plan whose messages must be
    re-read from disk) saves re-reading them."""
    rows = []
    for i, plan in enumerate(plans):
        held = None if messages is None else messages[i]
        sequenced = list(reread(plan.messages, plan.formats)) if held is None else list(held)
        f = read_external_file(sequenced, plan.wire, plan.kind == "text")
        codepage = message_code_page(sequenced[0], plan.charsets)
        rows.append({"attachment": plan.key_hex, "name": plan.name, "kind": plan.kind, "lrecl": f.lrecl,
                     "size": f.declared_size, "content": f.content,
                     "text": f.text(codepage, sequenced[0].location())})
    return pa.Table.from_pylist(rows, schema=FILES_SCHEMA)


MESSAGE_BATCH_BYTES = 64 << 20  # payload bytes one batch of the messages view holds at most


def message_batches(capture: Capture, source: Optional[str] = None, batch_rows: int = 65536
                    ) -> Iterator[pa.RecordBatch]:
    """The messages view (of one file, or all) a batch at a time: one row per physical message
    with where it lies, the descriptor as captured, the transport's own columns, its CMI role,
    any problem the capture has with it, and its payload (the data after the transport's
    headers), re-read from the file for the messages planning kept only the start of."""
    schema = messages_schema()
    dataset_keys = {a.key for a in capture.attachments if a.entry.attachment_type == ATTACHMENT_DATASET}
    chosen = [m for m in capture.messages if source is None or m.source == source]
    start = 0
    while start < len(chosen):
        stop, held = start, 0
        while (stop < len(chosen) and stop - start < max(batch_rows, 1)
               and (held < MESSAGE_BATCH_BYTES or stop == start)):
            held += chosen[stop].length
            stop += 1
        group = chosen[start:stop]
        rows = [_message_row(capture, m, dataset_keys) for m in _whole(capture, group)]
        yield pa.RecordBatch.from_pylist(rows, schema=schema)
        start = stop


def left_out_messages(left_out: Sequence[LeftOut]) -> pa.Table:
    """The messages view's row for each file the read left out: its path and why."""
    return pa.Table.from_pylist([{"source": lost.path, "problem": lost.text()} for lost in left_out],
                                schema=messages_schema())


def messages_table(capture: Capture, source: Optional[str] = None) -> pa.Table:
    return pa.Table.from_batches(list(message_batches(capture, source)), schema=messages_schema())


def _whole(capture: Capture, messages: Sequence[PhysicalMessage]) -> List[PhysicalMessage]:
    """The messages with their whole payload and details: those planning kept only the start or
    the details of (``Transport.index_details``) re-read in one pass per file."""
    again: Dict[Tuple[str, int], PhysicalMessage] = {}
    wanted = [m for m in messages if m.is_partial or m.details is DETAILS_REREAD]
    for source, group in groupby(wanted, key=lambda m: m.source):
        run = list(group)
        fmt = capture_format(capture.formats[source])
        for planned, found in zip(run, fmt.reread([m.span for m in run])):
            if planned.reread_hint is not None:
                found = fmt.transport.rebuild([found], planned.reread_hint)
            if found.content_key != planned.content_key:
                raise CmiFormatError("the message differs from the one planned: the file changed while it "
                                     "was being read", found.location())
            again[(source, planned.index)] = found
    return [_reread_into(m, again.get((m.source, m.index))) for m in messages]


def _reread_into(planned: PhysicalMessage, found: Optional[PhysicalMessage]) -> PhysicalMessage:
    """The planned message with what re-reading gave of it (its payload, its details)."""
    if found is None:
        return planned
    return dataclasses.replace(planned, payload=found.payload, full_key=None,
                               details=found.details if planned.details is DETAILS_REREAD else planned.details)


def _message_ref(source: str, index: int) -> Dict[str, object]:
    """The ``duplicate_of`` value naming a message (``index`` 0-based, as PhysicalMessage.index)."""
    return {"source": source, "index": message_number(index)}


def _message_row(capture: Capture, m: PhysicalMessage, dataset_keys) -> Dict[str, object]:
    transport = capture.transport_of(m)
    role, key, sequence = capture.assembly.roles.get((m.source, m.index), (ROLE_OTHER, None, None))
    record_type = None
    whole = transport is None or not transport.is_piece(m)  # a piece's bytes start mid-message
    if key in dataset_keys and sequence and m.length >= 4 and whole:
        record_type = record_type_of(m)
    repeated = capture.assembly.duplicate_of(m)
    row = {"source": m.source, "index": message_number(m.index), "offset": m.file_offset,
           "transport": transport.name if transport else None, "role": role,
           "attachment": _hex(key), "sequence": sequence, "record_type": record_type,
           "length": m.captured_length, "in_attachment": role != ROLE_OTHER,
           "duplicate_of": _message_ref(*repeated) if repeated else None, "problem": m.problem,
           "payload": m.payload}
    d = m.descriptor
    if d is not None:
        row.update({"msg_type": d.msg_type, "correl_id": _hex(d.correl_id), "encoding": d.encoding,
                    "ccsid": d.ccsid})
    if transport is not None:
        row.update(transport.message_row(m))
    return row

