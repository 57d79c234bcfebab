"""Opening a capture: the files of one load, their formats, their messages and the attachments.

``Capture.open(paths)`` resolves the paths, finds each file's capture format (by its first
bytes, or the ``format`` option), reads each file's message index, lets each transport join
its pieces into logical messages and assembles the CMI attachments. This is the Spark-free
API: ``Capture.open(paths).dataset_table()`` gives the same rows as
``spark.read.format("cmi").load(paths)``.
"""
from __future__ import annotations

import contextlib
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Tuple

import pyarrow as pa

from ..charsets import CharsetPolicy
from ..containers import compression_of
from ..cmi.assembly import ROLE_OTHER, Assembly, Attachment, assemble, message_code_page
from ..cmi.header import ATTACHMENT_DATASET
from ..errors import AttachmentError, CmiFormatError, CmiOptionError, KeptError, Location
from ..messages import PhysicalMessage, UnjoinedMessage
from ..payload.sas_dataset import RECORD_OBSERVATIONS, DatasetLayout, RecordStream, arrow_schema, read_layout, \
    record_type_of
from ..transports import CaptureFormat, Transport, capture_format, detect_format
from . import plan as planning
from . import tables
from .decode import reread_logical
from .index import MESSAGES_KEPT_IN_MEMORY, file_key, indexed, scan, slim
from .memo import KeptInMemory
from .recovery import Recovery, recover
from .paths import resolve_paths


def logical_messages(messages: Sequence[PhysicalMessage], formats: Dict[str, str]
                     ) -> Tuple[List[PhysicalMessage], List[UnjoinedMessage]]:
    """Each transport's messages joined by that transport; capture order kept within each."""
    by_transport: Dict[str, List[PhysicalMessage]] = defaultdict(list)
    transports: Dict[str, Transport] = {}
    for m in messages:
        transport = capture_format(formats[m.source]).transport
        transports[transport.name] = transport
        by_transport[transport.name].append(m)
    logical: List[PhysicalMessage] = []
    unjoined: List[UnjoinedMessage] = []
    for name, group in by_transport.items():
        joined, lost = transports[name].logical_messages(group)
        logical.extend(joined)
        unjoined.extend(lost)
    return logical, unjoined


def sequence_of(att: Attachment, location: Location) -> Optional[int]:
    """The sequence number in ``att`` of the message at ``location`` (0: its count message)."""
    def at(m: Optional[PhysicalMessage]) -> bool:
        return m is not None and any(span[0] == location.source and span[1] == location.message_index
                                     for span in m.spans)
    if at(att.count_message):
        return 0
    return next((k for k, m in att.sequenced.items() if at(m)), None)


def _messages_of(path: str, fmt: CaptureFormat, use_index_cache: bool, named: bool) -> List[PhysicalMessage]:
    """The file's physical messages; when the format was named by option, not recognised, an
    error says it may be the wrong one."""
    messages = indexed(path, fmt) if use_index_cache else scan(path, fmt)
    if named and messages and all(m.damage is not None for m in messages):
        # Not a damaged capture: nothing in it reads as the format named.
        e = messages[0].damage
        raise e.kind(e.problem, e.location, f"the file may be no {fmt.name} capture: leave out option('format') "
                     f"to have its format recognised from its first bytes")
    return list(messages)


@dataclass
class Capture:
    paths: List[str]
    messages: List[PhysicalMessage]  # one per captured record, transport headers removed (index.py)
    assembly: Assembly
    charsets: CharsetPolicy = field(default_factory=CharsetPolicy)
    unjoined: List[UnjoinedMessage] = field(default_factory=list)
    formats: Dict[str, str] = field(default_factory=dict)  # capture format name of each file
    compressed: FrozenSet[str] = frozenset()  # the files that are compressed streams (containers.py)
    _layouts: Dict[bytes, object] = field(default_factory=dict)
    _recoveries: Dict[bytes, Recovery] = field(default_factory=dict)

    @classmethod
    def open(cls, paths: Iterable[str], charsets: CharsetPolicy = CharsetPolicy(),
             use_index_cache: bool = True, format: Optional[str] = None,
             options: Iterable[Tuple[str, str]] = ()) -> "Capture":
        """The capture files under ``paths``, through their cached message indexes; ``format``
        names the capture format of every file instead of recognising each by its first bytes;
        ``options``: the load's "<transport>.<name>" options, for the formats that read them."""
        if isinstance(paths, str):
            paths = [paths]
        files = resolve_paths(paths)
        given = dict(options)
        chosen: Dict[str, CaptureFormat] = {
            f: (capture_format(format) if format else detect_format(f)).configured(given) for f in files}
        messages = [m for f in files for m in _messages_of(f, chosen[f], use_index_cache, named=bool(format))]
        formats = {f: chosen[f].name for f in files}
        logical, unjoined = logical_messages(messages, formats)
        logical = [slim(m) if m.parts else m for m in logical]
        compressed = frozenset(f for f in files if compression_of(f) is not None)
        return cls(files, messages, assemble(logical, charsets, unjoined), charsets, unjoined, formats, compressed)

    @property
    def attachments(self) -> List[Attachment]:
        return self.assembly.attachments

    def transport_of(self, message: PhysicalMessage) -> Optional[Transport]:
        name = self.formats.get(message.source)
        return None if name is None else capture_format(name).transport

    def full(self, message: PhysicalMessage) -> PhysicalMessage:
        """The message with its whole payload (re-read when planning kept only its start)."""
        if not message.is_partial:
            return message
        return next(reread_logical([message.spans], self.formats, [message.content_key], [message.reread_hint]))

    def held_whole(self, messages: Sequence[PhysicalMessage]) -> Optional[List[PhysicalMessage]]:
        """The messages when all are held whole (a capture built in memory), else None: the caller
        then re-reads them from their files in one pass."""
        return None if any(m.is_partial for m in messages) else list(messages)

    # -- definitions ------------------------------------------------------------------------

    def layout_and_observations(self, att: Attachment) -> Tuple[DatasetLayout, Optional[RecordStream]]:
        """Dataset definitions of a complete dataset attachment and its observation stream
        (measured, not decoded); cached, and raises on bad layouts."""
        cached = self._layouts.get(att.key)
        if isinstance(cached, KeptError):
            raise cached.error()
        if cached is None:
            try:
                # Definitions are decoded whole; observations are only measured.
                messages = [self.full(m) if m.is_partial and record_type_of(m) != RECORD_OBSERVATIONS else m
                            for m in att.ordered_messages()]
                cached = read_layout(messages, att.header.wire,
                                     lambda message: message_code_page(message, self.charsets))
            except CmiFormatError as e:
                failure = KeptError.of(e).within(att.key_hex, sequence_of(att, e.location))
                self._layouts[att.key] = failure
                raise failure.error() from None
            self._layouts[att.key] = cached
        return cached

    def layout(self, att: Attachment) -> DatasetLayout:
        """Dataset definitions of a complete dataset attachment (cached); raises on bad layouts."""
        return self.layout_and_observations(att)[0]

    # -- plans ------------------------------------------------------------------------------

    def plan(self, att: Attachment) -> planning.AttachmentPlan:
        return planning.attachment_plan(att, self.charsets, self.formats)

    def dataset_slices(self, att: Attachment, target_bytes: int) -> List[planning.DatasetSlice]:
        layout, stream = self.layout_and_observations(att)
        return planning.dataset_slices(att, layout, stream, self.charsets, self.formats,
                                       self._target(layout, stream, target_bytes))

    @cached_property
    def read_whole(self) -> FrozenSet[str]:
        """The files a partition cannot read a byte range of: compressed streams, and formats
        whose planned spans are no byte ranges (pcap)."""
        return self.compressed | {f for f, name in self.formats.items() if not capture_format(name).splittable}

    def _target(self, layout: DatasetLayout, stream: Optional[RecordStream], target_bytes: int) -> int:
        whole = self.read_whole
        if stream is not None and whole and any(span[0] in whole for m in stream.messages for span in m.spans):
            # Each partition would decompress (or reassemble) the file from its start: one reads it, once.
            return max(target_bytes, layout.observation_bytes, stream.length)
        return target_bytes

    # -- selection --------------------------------------------------------------------------

    def _describe(self, atts: Sequence[Attachment]) -> str:
        return "; ".join(f"{a.entry.name} (attachment {a.key_hex}, "
                         f"{'complete' if a.complete else 'incomplete'})" for a in atts)

    def select_datasets(self, dataset: Optional[str] = None, attachment: Optional[str] = None,
                        tolerant: bool = False) -> List[Attachment]:
        """The dataset attachments a default-view read returns (several only when unionable).
        Not ``tolerant`` (FAILFAST), damage in them or anywhere it cannot be placed raises."""
        if not tolerant:
            self.check_unplaced_damage()
        datasets = [a for a in self.attachments if a.entry.attachment_type == ATTACHMENT_DATASET]
        undescribed = sum(1 for m in self.messages if m.descriptor is None and m.damage is None)
        if undescribed and not self.attachments:
            own_views = sorted({v.name for t in map(self.transport_of, self.messages) if t for v in t.views})
            raise AttachmentError(
                f"{undescribed} of {len(self.messages)} messages in {self.paths} have no message descriptor "
                f"(an MQ queue dumped with dmpmqmsg -dN, or traffic that carries no CMI): CMI attachments are "
                f"found by MsgType and CorrelId, so none can be assembled", hint=(
                    f"read the traffic with option('view', '{own_views[0]}')" if own_views else
                    "option('view', 'messages') still lists the messages"))
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
                counted = (f"no SAS dataset attachments in {self.paths} ({len(self.attachments)} attachments, "
                           f"{len(self.messages)} messages")
                if broken:
                    raise AttachmentError(
                        f"{counted}, {len(broken)} unreadable headers); the first: {broken[0].problem}",
                        broken[0].message.location(), hint="option('view', 'attachments') lists every header "
                        "with why it cannot be read; option('view', 'messages') shows their bytes")
                raise CmiOptionError(counted + "); " + (
                    "its attachments are external files: read them with option('view', 'files')"
                    if self.attachments else "see option('view', 'attachments') or option('view', 'messages')"))
            chosen = [a for a in datasets if a.complete] or datasets
        if tolerant:
            layouts = [r.layout for r in map(self.recovery, chosen) if r.layout is not None]
            schemas = [arrow_schema(layout) for layout in layouts]
        else:
            self.check_undamaged(chosen)
            for a in chosen:
                a.ordered_messages()  # IncompleteAttachmentError for an incomplete selection
            schemas = [arrow_schema(self.layout(a)) for a in chosen]
        if any(not s.equals(schemas[0], check_metadata=True) for s in schemas[1:]):
            raise CmiOptionError(
                "several datasets with different variables; choose one with option('dataset', 'LIB.MEMBER') "
                f"or option('attachment', '<key>'): {self._describe(chosen)}")
        return chosen

    def check_undamaged(self, chosen: Sequence[Attachment]) -> None:
        """Raise the error of the first damaged message of a chosen attachment, named by its
        attachment and sequence number."""
        for att in chosen:
            for k, m in sorted(att.sequenced.items()):
                if m.damage is not None:
                    raise m.damage.within(att.key_hex, k).error()
            for m in (att.count_message, att.application):
                if m is not None and m.damage is not None:
                    raise m.damage.within(att.key_hex, 0 if m is att.count_message else None).error()

    def check_unplaced_damage(self) -> None:
        """Raise the error of the first damaged stretch no attachment claims: what it held is
        unknown, so it may have been part of any of them."""
        for m in self.messages:
            if m.damage is not None and self.assembly.role_of(m)[0] == ROLE_OTHER:
                raise m.damage.error()

    def damaged(self) -> List[PhysicalMessage]:
        """The damaged stretches of the capture's files, one message each."""
        return [m for m in self.messages if m.damage is not None]

    def recovery(self, att: Attachment) -> Recovery:
        """What can be trusted of a dataset attachment and what is lost (cached)."""
        found = self._recoveries.get(att.key)
        if found is None:
            found = self._recoveries[att.key] = recover(
                att, self.full, lambda message: message_code_page(message, self.charsets))
        return found

    def run_slices(self, att: Attachment, recovery: Recovery, target_bytes: int) -> List[planning.DatasetSlice]:
        """The slices of the trusted runs of an attachment read around its damage."""
        return [part for run in recovery.runs for part in planning.dataset_slices(
            att, recovery.layout, run.stream, self.charsets, self.formats, self._target(recovery.layout, run.stream,
                                                                                         target_bytes),
            (run.first_row, run.last_row))]

    def file_attachments(self) -> List[Attachment]:
        return [a for a in self.attachments if a.entry.attachment_type != ATTACHMENT_DATASET]

    # -- the views as whole tables (tables.py builds them) ---------------------------------

    def dataset_table(self, dataset: Optional[str] = None, attachment: Optional[str] = None,
                      temporal: bool = True) -> pa.Table:
        return tables.dataset_table(self, dataset, attachment, temporal)

    def attachments_table(self) -> pa.Table:
        return tables.attachments_table(self)

    def variables_table(self) -> pa.Table:
        return tables.variables_table(self)

    def files_table(self) -> pa.Table:
        return tables.capture_files_table(self)

    def messages_table(self, source: Optional[str] = None) -> pa.Table:
        return tables.messages_table(self, source)


_OPEN: KeptInMemory[Capture] = KeptInMemory(4, MESSAGES_KEPT_IN_MEMORY, lambda capture: len(capture.messages))
_HELD: Optional[Dict[tuple, Capture]] = None


@contextlib.contextmanager
def held_open() -> Iterator[None]:
    """Captures opened inside the block stay open until it ends, whatever their size: one
    planning step asks for its capture several times (schema, selection, slices), and a queue
    export of 10,000 small dumps is heavier than ``_OPEN`` keeps (opening it twice doubled the
    planning)."""
    global _HELD
    outer = _HELD
    _HELD = {} if outer is None else outer
    try:
        yield
    finally:
        _HELD = outer


def open_cached(paths: Sequence[str], charsets: CharsetPolicy, format: Optional[str] = None,
                options: Tuple[Tuple[str, str], ...] = (), **file_filters: Any) -> Capture:
    """``Capture.open``, reused within one process (a Spark Python worker plans and reads many
    times). The key holds each file's identity (size, mtime, a CRC of its ends), so a changed
    file is read again. ``file_filters``: which files under ``paths`` are read
    (``paths.file_filters``)."""
    files = resolve_paths(paths, **file_filters)
    key = (tuple(file_key(f) for f in files), charsets, format, tuple(options))
    capture = _OPEN.get(key) or (_HELD or {}).get(key)
    if capture is None:
        capture = _OPEN.put(key, Capture.open(files, charsets, format=format, options=options))
    if _HELD is not None:
        _HELD[key] = capture
    return capture
