"""What a load sees: the capture files, their messages, the attachments, and views over them.

This is the Spark-free API: ``Capture.open(paths).dataset_table()`` gives the same rows
as ``spark.read.format("cmi").load(paths)``, and the Spark layer plans its partitions
from the ``AttachmentPlan`` objects made here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa

from .capture.paths import resolve_paths
from .capture.dump_spans import read_dump_spans
from .capture.readers import is_binary_capture, read_spans
from .index import indexed, scan, slim
from .charsets import CharsetPolicy
from .cmi.assembly import ROLE_OTHER, Assembly, Attachment, assemble, message_code_page
from .cmi.header import ATTACHMENT_DATASET
from .cmi.wire import WireFormat
from .errors import AttachmentError, CmiFormatError, CmiOptionError, Location
from .messages import MessageSpan, PhysicalMessage
from .mq.envelope import unwrap
from .mq.segments import IncompleteSegments, is_segment, join_segments
from .payload.external_file import read_external_file
from .cmi.stream import OnePassStream, StreamOrigins
from .payload.sas_dataset import (DEFAULT_BATCH_ROWS, RECORD_OBSERVATIONS, RECORD_TYPE_SIZE, DatasetLayout,
                                  ObservationChunk, arrow_schema, chunks_of_parts, observation_batches,
                                  observation_messages, read_layout, record_type_of)


@dataclass(frozen=True)
class AttachmentPlan:
    """Everything read() needs to decode one attachment, small enough to pickle."""

    key_hex: str
    kind: str
    name: str
    wire: WireFormat
    refs: Tuple[Tuple[MessageSpan, ...], ...]  # sequenced messages 1..N, each its physical records
    charsets: CharsetPolicy
    checks: Tuple[ContentKey, ...] = ()

    def messages(self) -> List[PhysicalMessage]:
        return load_logical(self.refs, self.checks or None)


@dataclass(frozen=True)
class DatasetSlice:
    """Observations [first_row, last_row) of one dataset attachment: one Spark partition.

    It carries the decoded definitions, so read() re-reads only the observation messages
    that hold its rows (``refs``, whose data starts at ``base`` in the observation stream).
    """

    key_hex: str
    name: str
    layout: DatasetLayout
    charsets: CharsetPolicy
    refs: Tuple[Tuple[MessageSpan, ...], ...]
    base: int
    first_row: int
    last_row: int
    checks: Tuple[ContentKey, ...] = ()
    header_bytes: Tuple[int, ...] = ()  # MQ header bytes in front of each message's data, as captured


ContentKey = Tuple[int, int]  # (payload length, CRC-32): PhysicalMessage.content_key


def load_logical(refs: Sequence[Tuple[MessageSpan, ...]],
                 checks: Optional[Sequence[ContentKey]] = None) -> List[PhysicalMessage]:
    """Re-read logical messages from their physical records (in read(), far from planning)."""
    return list(iter_logical(refs, checks))


def iter_logical(refs: Sequence[Tuple[MessageSpan, ...]],
                 checks: Optional[Sequence[ContentKey]] = None) -> Iterator[PhysicalMessage]:
    """``load_logical`` one message at a time, so a partition never holds all of its messages.

    ``checks`` are the content keys seen at planning: a file rewritten since then with the same
    size and mtime (``cp -p``, ``rsync -t``) is caught here instead of mixing old and new data.
    """
    physical = read_spans([span for ref in refs for span in ref])
    for number, ref in enumerate(refs):
        pieces = [unwrap(next(physical)) for _ in ref]
        if len(pieces) == 1 and not is_segment(pieces[0]):
            message = pieces[0]
        else:
            joined, incomplete = join_segments(pieces)
            if incomplete or len(joined) != 1:
                raise CmiFormatError(f"segments of a planned message no longer join: "
                                     f"{incomplete[0].reason if incomplete else 'changed file'}",
                                     pieces[0].location())
            message = joined[0]
        if checks is not None and message.content_key != checks[number]:
            raise CmiFormatError("the message differs from the one planned: the file changed while "
                                 "it was being read", message.location())
        yield message


def _codepage_reader(charsets: CharsetPolicy):
    return lambda message: message_code_page(message, charsets)


def slice_batches(part: DatasetSlice, batch_rows: int = DEFAULT_BATCH_ROWS, temporal: bool = True,
                  messages: Optional[Sequence[PhysicalMessage]] = None) -> Iterator[pa.RecordBatch]:
    """Record batches of a slice's observations; ``messages`` saves re-reading them from disk."""
    if part.first_row >= part.last_row:
        return
    codepage = part.charsets.code_page_for(part.layout.ccsid)
    if messages is None and _dump_spans_apply(part):
        observations = _DumpObservations(part)
        chunks, locate = iter(observations), observations.locate
    else:
        stream = OnePassStream(iter_logical(part.refs, part.checks or None) if messages is None else messages,
                               skip=RECORD_TYPE_SIZE, base=part.base)
        obslen = part.layout.definition.obs_length
        chunks, locate = chunks_of_parts(stream.parts(), obslen, max(batch_rows, 1) * obslen), stream.locate
    yield from observation_batches(part.layout, chunks, locate, codepage, batch_rows, temporal,
                                   part.first_row, part.last_row)


def _dump_spans_apply(part: DatasetSlice) -> bool:
    """Whether the slice's messages can be decoded straight from dump text (``read_dump_spans``):
    each is one physical record of a text dump, with its header bytes and content key planned."""
    if not part.checks or len(part.header_bytes) != len(part.refs) or any(len(ref) != 1 for ref in part.refs):
        return False
    return not any(is_binary_capture(source) for source in {ref[0][0] for ref in part.refs})


class _DumpObservations:
    """The observation chunks of a slice, decoded from dump text a file piece at a time; each
    message is checked against its planned length and CRC-32 before its bytes are used."""

    def __init__(self, part: DatasetSlice):
        self.part = part
        self.origins = StreamOrigins(RECORD_TYPE_SIZE)
        self.locate = self.origins.locate

    def __iter__(self) -> Iterator[ObservationChunk]:
        part = self.part
        room = part.layout.definition.obs_length
        strips = np.asarray(part.header_bytes, dtype=np.int64)
        at, number = part.base, 0
        for piece in read_dump_spans([ref[0] for ref in part.refs], strips + RECORD_TYPE_SIZE, room):
            count = len(piece.spans)
            lengths, crcs = piece.content_keys(strips[number:number + count])
            planned = part.checks[number:number + count]
            if list(zip(lengths, crcs)) != list(planned):
                bad = next(i for i, key in enumerate(zip(lengths, crcs)) if key != planned[i])
                source, index, offset, _ = piece.spans[bad]
                raise CmiFormatError("the message differs from the one planned: the file changed since "
                                     "it was planned", Location(source, index, offset))
            self.origins.extend((at + piece.data_starts[:-1]).tolist(), (span[:3] for span in piece.spans))
            number += count
            yield ObservationChunk(at, piece.buffer, piece.room, piece.room + int(piece.data_starts[-1]))
            at += int(piece.data_starts[-1])


def _header_bytes(message: PhysicalMessage) -> int:
    """Bytes of MQ headers removed from the front of the captured payload (``mq.envelope.unwrap``)."""
    captured = message.envelope.captured_length if message.envelope is not None else None
    return 0 if captured is None else captured - message.length


def partition_target(total_bytes: int, max_partition_bytes: int, min_partitions: int) -> int:
    """Bytes per partition, as Spark's file sources size them: at most max_partition_bytes and
    small enough that there are at least min_partitions. The count is then rounded up to a
    multiple of min_partitions (by default the cores), so that the last wave of tasks leaves
    no core idle: 5M rows of the benchmark in 6 partitions took 1.25 s, in 5 partitions 1.30 s."""
    slots = max(min_partitions, 1)
    count = max(-(-total_bytes // max(max_partition_bytes, 1)), 1)
    count = -(-count // slots) * slots
    return max(1, -(-total_bytes // count))


# ------------------------------------------------------------------------------------------
# View schemas: one place; the Spark layer derives its StructTypes from these.

ATTACHMENTS_SCHEMA = pa.schema([
    ("attachment", pa.string()), ("kind", pa.string()), ("name", pa.string()),
    ("description", pa.string()), ("complete", pa.bool_()), ("expected_messages", pa.int64()),
    ("found_messages", pa.int64()), ("observations", pa.int64()), ("variables", pa.int64()),
    ("label", pa.string()), ("message", pa.binary()), ("problem", pa.string()), ("source", pa.string()),
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
MESSAGES_SCHEMA = pa.schema([
    ("source", pa.string()), ("index", pa.int64()), ("offset", pa.int64()), ("msg_type", pa.int32()),
    ("msg_id", pa.string()), ("correl_id", pa.string()), ("encoding", pa.int32()), ("ccsid", pa.int32()),
    ("format", pa.string()), ("put_date", pa.string()), ("put_time", pa.string()),
    ("headers", pa.list_(pa.string())), ("remote_queue", pa.string()), ("remote_qmgr", pa.string()),
    ("dead_letter_reason", pa.int32()), ("dead_letter_queue", pa.string()), ("properties", pa.list_(pa.string())),
    ("envelope_problem", pa.string()), ("data_encoding", pa.int32()), ("data_ccsid", pa.int32()),
    ("data_format", pa.string()), ("group_id", pa.string()), ("msg_seq_number", pa.int32()),
    ("msg_offset", pa.int32()), ("msg_flags", pa.int32()), ("role", pa.string()), ("attachment", pa.string()),
    ("sequence", pa.int64()), ("record_type", pa.int32()), ("length", pa.int64()), ("in_attachment", pa.bool_()),
])
VIEW_SCHEMAS = {"attachments": ATTACHMENTS_SCHEMA, "variables": VARIABLES_SCHEMA, "files": FILES_SCHEMA,
                "messages": MESSAGES_SCHEMA}


def _hex(raw: Optional[bytes]) -> Optional[str]:
    return raw.hex().upper() if raw is not None else None


@dataclass(frozen=True)
class _LayoutFailure:
    """Why an attachment's layout could not be read, kept to raise again: not the exception
    itself, whose traceback's frames would hold the capture in a reference cycle."""

    kind: type
    problem: str
    location: Location


@dataclass
class Capture:
    paths: List[str]
    messages: List[PhysicalMessage]  # one per captured record, MQ headers removed (see index.py)
    assembly: Assembly
    charsets: CharsetPolicy = field(default_factory=CharsetPolicy)
    incomplete_segments: List[IncompleteSegments] = field(default_factory=list)
    _layouts: Dict[bytes, object] = field(default_factory=dict)

    @classmethod
    def open(cls, paths: Iterable[str], charsets: CharsetPolicy = CharsetPolicy(),
             use_index_cache: bool = True) -> "Capture":
        """The capture files under ``paths``, through their cached message indexes."""
        if isinstance(paths, str):
            paths = [paths]
        files = resolve_paths(paths)
        messages = [m for path in files for m in (indexed(path) if use_index_cache else scan(path))]
        logical, incomplete = join_segments(messages)
        logical = [slim(m) if m.parts else m for m in logical]
        return cls(files, messages, assemble(logical, charsets, incomplete), charsets, incomplete)

    @property
    def attachments(self) -> List[Attachment]:
        return self.assembly.attachments

    @staticmethod
    def _held_whole(messages: Sequence[PhysicalMessage]) -> Optional[List[PhysicalMessage]]:
        """The messages when all are held whole (a capture built in memory), else None: the caller
        then re-reads them from their files in one pass."""
        return None if any(m.is_partial for m in messages) else list(messages)

    def full(self, message: PhysicalMessage) -> PhysicalMessage:
        """The message with its whole payload (re-read when planning kept only its start)."""
        return load_logical([message.spans], [message.content_key])[0] if message.is_partial else message

    # -- plans ------------------------------------------------------------------------------

    def plan(self, att: Attachment) -> AttachmentPlan:
        messages = att.ordered_messages()
        return AttachmentPlan(att.key_hex, att.entry.kind, att.entry.name, att.header.wire,
                              tuple(m.spans for m in messages), self.charsets,
                              tuple(m.content_key for m in messages))

    def _layout_and_stream(self, att: Attachment):
        cached = self._layouts.get(att.key)
        if isinstance(cached, _LayoutFailure):
            raise cached.kind(cached.problem, cached.location)
        if cached is None:
            try:
                # Definitions are decoded whole; observations are only measured.
                messages = [self.full(m) if m.is_partial and record_type_of(m) != RECORD_OBSERVATIONS else m
                            for m in att.ordered_messages()]
                cached = read_layout(messages, att.header.wire, _codepage_reader(self.charsets))
            except CmiFormatError as e:
                self._layouts[att.key] = _LayoutFailure(type(e), e.problem, e.location)
                raise
            self._layouts[att.key] = cached
        return cached

    def layout(self, att: Attachment) -> DatasetLayout:
        """Dataset definitions of a complete dataset attachment (cached); raises on bad layouts."""
        return self._layout_and_stream(att)[0]

    def dataset_slices(self, att: Attachment, target_bytes: int) -> List[DatasetSlice]:
        """The attachment's observations cut into slices of about ``target_bytes`` of observation
        stream, at the observation boundary nearest the end of a message (records may straddle
        messages), so that no slice is smaller than a message. Decodes no observation.

        Sizes count the decoded observation bytes, not the capture file's: a hex dump holds more
        than twice as many bytes as the binary capture of the same rows, and the work and memory
        of a partition follow the rows it produces."""
        layout, stream = self._layout_and_stream(att)
        obslen, nobs = layout.definition.obs_length, layout.observations

        def make(first: int, last: int) -> DatasetSlice:
            if stream is None or first >= last:
                return DatasetSlice(att.key_hex, att.entry.name, layout, self.charsets, (), 0, first, last)
            lo, hi = observation_messages(stream, obslen, first, last)
            chosen = stream.messages[lo:hi]
            return DatasetSlice(att.key_hex, att.entry.name, layout, self.charsets,
                                tuple(m.spans for m in chosen), stream.starts[lo] if lo < hi else 0, first, last,
                                tuple(m.content_key for m in chosen), tuple(_header_bytes(m) for m in chosen))

        if stream is None or not obslen or not nobs:
            return [make(0, 0)]
        cuts, held = [0], 0
        for m, start in zip(stream.messages, stream.starts):
            held += m.length - stream.skip
            if held >= target_bytes:
                row = (start + m.length - stream.skip) // obslen
                if cuts[-1] < row < nobs:
                    cuts.append(row)
                    held = 0
        cuts.append(nobs)
        return [make(a, b) for a, b in zip(cuts, cuts[1:])]

    # -- selection --------------------------------------------------------------------------

    def _describe(self, atts: Sequence[Attachment]) -> str:
        return "; ".join(f"{a.entry.name} (attachment {a.key_hex}, "
                         f"{'complete' if a.complete else 'incomplete'})" for a in atts)

    def select_datasets(self, dataset: Optional[str] = None, attachment: Optional[str] = None) -> List[Attachment]:
        """The dataset attachments a default-view read returns (several only when unionable)."""
        datasets = [a for a in self.attachments if a.entry.attachment_type == ATTACHMENT_DATASET]
        undescribed = sum(1 for m in self.messages if m.descriptor is None)
        if undescribed and not self.attachments:
            raise AttachmentError(
                f"{undescribed} of {len(self.messages)} messages in {self.paths} have no message descriptor "
                f"(the queue was dumped with dmpmqmsg -dN): CMI attachments are found by MsgType and "
                f"CorrelId, so none can be assembled; option('view', 'messages') still lists the messages")
        if attachment:
            wanted = attachment.strip().upper()
            chosen = [a for a in self.attachments if a.key_hex == wanted]
            if not chosen:
                raise CmiOptionError(f"no attachment {wanted} in {self.paths}; attachments: "
                                     f"{self._describe(self.attachments)}")
            if chosen[0].entry.attachment_type != ATTACHMENT_DATASET:
                raise CmiOptionError(f"attachment {wanted} is an external file; read it with "
                                     f"option('view', 'files')")
        elif dataset:
            wanted = dataset.strip().upper()
            chosen = [a for a in datasets if a.entry.name == wanted
                      or ("." not in wanted and a.entry.name.split(".", 1)[-1] == wanted)]
            if not chosen:
                raise CmiOptionError(f"no dataset {wanted} in {self.paths}; datasets: {self._describe(datasets)}")
        else:
            if not datasets:
                broken = self.assembly.broken_headers
                raise CmiOptionError(
                    f"no SAS dataset attachments in {self.paths} ({len(self.attachments)} attachments, "
                    f"{len(self.messages)} messages"
                    + (f", {len(broken)} unreadable headers: {broken[0].problem}" if broken else "")
                    + "); see option('view', 'attachments') or option('view', 'messages')")
            chosen = [a for a in datasets if a.complete] or datasets
        for a in chosen:
            a.ordered_messages()  # IncompleteAttachmentError for an incomplete selection
        schemas = [arrow_schema(self.layout(a)) for a in chosen]
        if any(not s.equals(schemas[0], check_metadata=True) for s in schemas[1:]):
            raise CmiOptionError(
                "several datasets with different variables; choose one with option('dataset', 'LIB.MEMBER') "
                f"or option('attachment', '<key>'): {self._describe(chosen)}")
        return chosen

    # -- reading ----------------------------------------------------------------------------

    def dataset_table(self, dataset: Optional[str] = None, attachment: Optional[str] = None,
                      temporal: bool = True) -> pa.Table:
        chosen = self.select_datasets(dataset, attachment)
        schema = arrow_schema(self.layout(chosen[0]), temporal)
        batches = []
        for att in chosen:
            [whole] = self.dataset_slices(att, target_bytes=1 << 62)
            batches.extend(slice_batches(whole, temporal=temporal,
                                         messages=self._held_whole(self._layout_and_stream(att)[1].messages)
                                         if whole.refs else []))
        return pa.Table.from_batches(batches, schema=schema)

    def attachments_table(self) -> pa.Table:
        rows = []
        for a in self.attachments:
            observations = variables = label = None
            problem = None if a.complete else a.why_incomplete()
            if a.complete and a.entry.attachment_type == ATTACHMENT_DATASET:
                try:
                    layout = self.layout(a)
                    observations, variables = layout.observations, len(layout.variables)
                    label = layout.definition.label
                except CmiFormatError as e:
                    problem = str(e)
            rows.append({
                "attachment": a.key_hex, "kind": a.entry.kind, "name": a.entry.name,
                "description": a.entry.description, "complete": a.complete, "expected_messages": a.expected,
                "found_messages": len(a.sequenced), "observations": observations, "variables": variables,
                "label": label, "message": self.full(a.application).payload if a.application else None,
                "problem": problem, "source": a.header_message.source,
            })
        for broken in self.assembly.broken_headers:
            rows.append({"attachment": _hex(broken.message.descriptor.correl_id[:16]), "kind": "header",
                         "name": "", "description": "", "complete": False, "expected_messages": None,
                         "found_messages": 0, "observations": None, "variables": None, "label": None,
                         "message": None, "problem": broken.problem, "source": broken.message.source})
        return pa.Table.from_pylist(rows, schema=ATTACHMENTS_SCHEMA)

    def variables_table(self) -> pa.Table:
        rows = []
        for a in self.attachments:
            if a.entry.attachment_type != ATTACHMENT_DATASET or not a.complete:
                continue
            for position, v in enumerate(self.layout(a).variables, start=1):
                rows.append({"dataset": a.entry.name, "attachment": a.key_hex, "position": position,
                             "name": v.name, "type": v.sas_type, "length": v.length, "format": v.format,
                             "informat": v.informat, "label": v.label})
        return pa.Table.from_pylist(rows, schema=VARIABLES_SCHEMA)

    def file_attachments(self) -> List[Attachment]:
        return [a for a in self.attachments if a.entry.attachment_type != ATTACHMENT_DATASET]

    def files_table(self) -> pa.Table:
        """The complete external files (incomplete ones are listed by attachments_table)."""
        chosen = [a for a in self.file_attachments() if a.complete]
        return files_table([self.plan(a) for a in chosen],
                           [self._held_whole(a.ordered_messages()) for a in chosen])


def files_table(plans: Sequence[AttachmentPlan],
                messages: Optional[Sequence[Sequence[PhysicalMessage]]] = None) -> pa.Table:
    """One row per external file; ``messages`` (per plan; None for a plan whose messages must be
    re-read from disk) saves re-reading them."""
    rows = []
    for i, plan in enumerate(plans):
        held = None if messages is None else messages[i]
        sequenced = plan.messages() if held is None else held
        f = read_external_file(sequenced, plan.wire, plan.kind == "text")
        codepage = message_code_page(sequenced[0], plan.charsets)
        rows.append({"attachment": plan.key_hex, "name": plan.name, "kind": plan.kind, "lrecl": f.lrecl,
                     "size": f.declared_size, "content": f.content,
                     "text": f.text(codepage, sequenced[0].location())})
    return pa.Table.from_pylist(rows, schema=FILES_SCHEMA)


def messages_table(capture: "Capture", source: Optional[str] = None) -> pa.Table:
    """One row per physical message (of one file, or all): the descriptor as captured, the MQ
    headers found in front of the data, what the data is in, and the message's CMI role."""
    dataset_keys = {a.key for a in capture.attachments if a.entry.attachment_type == ATTACHMENT_DATASET}
    roles = capture.assembly.roles
    rows = []
    for m in capture.messages:
        if source is not None and m.source != source:
            continue
        e, envelope = m.descriptor, m.envelope
        d = envelope.outer if envelope else e
        role, key, sequence = roles.get((m.source, m.index), (ROLE_OTHER, None, None))
        record_type = None
        if key in dataset_keys and sequence and m.length >= 4 and not is_segment(m):
            record_type = record_type_of(m)
        row = {"source": m.source, "index": m.index, "offset": m.file_offset, "role": role,
               "attachment": _hex(key), "sequence": sequence, "record_type": record_type,
               "length": envelope.captured_length if envelope and envelope.captured_length is not None
               else m.length,
               "in_attachment": role != ROLE_OTHER,
               "headers": list(envelope.headers) if envelope else [],
               "envelope_problem": envelope.problem if envelope else None}
        if d is not None:
            row.update({"msg_type": d.msg_type, "msg_id": _hex(d.msg_id), "correl_id": _hex(d.correl_id),
                        "encoding": d.encoding, "ccsid": d.ccsid, "format": d.format,
                        "put_date": d.put_date, "put_time": d.put_time,
                        "data_encoding": e.encoding, "data_ccsid": e.ccsid, "data_format": e.format,
                        "group_id": _hex(e.group_id), "msg_seq_number": e.msg_seq_number,
                        "msg_offset": e.offset, "msg_flags": e.msg_flags})
        if envelope is not None:
            row.update({"remote_queue": envelope.remote_queue, "remote_qmgr": envelope.remote_qmgr,
                        "dead_letter_reason": envelope.dead_letter_reason,
                        "dead_letter_queue": envelope.dead_letter_queue,
                        "properties": list(envelope.properties)})
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=MESSAGES_SCHEMA)
