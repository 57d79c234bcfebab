"""The views a load offers: ``option("view", name)`` picks one. A view gives its schema, plans
its partitions (``plan.Part``s: small picklable values) and reads each partition's Arrow
batches; damage goes through the load's read mode (``modes.py``). Adding a view is adding a
``View`` subclass to ``VIEWS`` (and its table to ``tables.py``); a transport adds its own
through the seam (``Transport.views``).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, List, Sequence, Tuple

import pyarrow as pa

from .. import transports
from ..arrow.batches import coalesced
from ..cmi.assembly import Attachment
from ..errors import CmiFormatError, KeptError, Location, not_one_of
from ..payload.sas_dataset import arrow_schema
from ..storage import PathNotFoundError, exists
from ..transports import FileView
from .capture import Capture, LeftOut
from .decode import slice_batches
from .load import Load
from .options import ReadOptions
from .plan import (AttachmentPlan, DatasetSlice, Part, SlicePack, attachment_plan, dataset_slices, pack_slices,
                   partition_target, whole_run)
from .recovery import Recovery
from .selection import check_undamaged, check_unplaced_damage, select_datasets
from .tables import (ATTACHMENTS_SCHEMA, FILES_SCHEMA, VARIABLES_SCHEMA, attachments_table, files_table,
                     left_out_messages, message_batches, messages_schema, variables_table)

_LOG = logging.getLogger(__name__)


class View:
    name: str

    def schema(self, load: Load) -> pa.Schema:
        raise NotImplementedError

    def plan(self, load: Load) -> List[Part]:
        """One part per partition (none: the view is empty)."""
        raise NotImplementedError

    def read(self, part: Part, load: Load) -> Iterator[pa.RecordBatch]:
        """One partition's batches."""
        raise NotImplementedError

    def attachments(self, load: Load, parts: Sequence[Part]) -> Tuple[str, ...]:
        """The keys of the attachments the view reads."""
        return tuple(dict.fromkeys(key for part in parts for key in part.attachments))


def _batches(table: pa.Table, load: Load) -> Iterator[pa.RecordBatch]:
    return iter(table.to_batches(max_chunksize=load.options.batch_rows))


def _unless_gone(load: Load, batches: Callable[[], Iterator[pa.RecordBatch]],
                 instead: Callable[[str], Iterator[pa.RecordBatch]]) -> Iterator[pa.RecordBatch]:
    """A part's ``batches()``, until a file it reads turns out removed since planning: with
    option ignoreMissingFiles the part ends there (logged, as Spark logs the files it skips) with
    what ``instead`` gives for the error's problem; without it, the PathNotFoundError is raised."""
    try:
        yield from batches()
    except PathNotFoundError as e:
        if not load.options.ignore_missing_files:
            raise
        _LOG.warning("%s: the rest of the partition is not read (option ignoreMissingFiles)", e.problem)
        yield from instead(e.problem)


# -- the dataset view ------------------------------------------------------------------------

@dataclass(frozen=True)
class CorruptRows(Part):
    """A partition of PERMISSIVE's report: a row of nulls per damaged stretch, its
    corrupt-record column saying what was lost and where."""

    texts: Tuple[str, ...]

    rows = 0  # reports, not observations


class DatasetView(View):
    name = "dataset"

    def _readable(self, load: Load, after_planning: bool = False) -> List[Tuple[Attachment, Recovery]]:
        """The chosen attachments and what can be read of each: everything (FAILFAST, which
        raises on damage), or what the trust rule proves (recovery.py)."""
        o, capture = load.options, load.capture(after_planning)
        chosen = select_datasets(capture, o.dataset, o.attachment, tolerant=not load.mode.raises, keys=o.attachments)
        if load.mode.raises:
            return [(a, whole_run(capture, a)) for a in chosen]
        return [(a, capture.recovery(a)) for a in chosen]

    def schema(self, load: Load, after_planning: bool = False) -> pa.Schema:
        readable = self._readable(load, after_planning)
        layouts = [r.layout for _, r in readable if r.layout is not None]
        if not layouts:
            load.mode.nothing_trusted(readable[0][1].lost[0])
        return load.mode.schema(arrow_schema(layouts[0], load.options.temporal_types) if layouts else pa.schema([]),
                                self.name)

    def plan(self, load: Load) -> List[Part]:
        """Slices of the chosen attachments, small ones packed together (plan.pack_slices), and
        PERMISSIVE's report of what is lost."""
        o, capture = load.options, load.capture()
        readable = self._readable(load)
        total = sum((run.last_row - run.first_row) * r.layout.definition.obs_length
                    for _, r in readable if r.layout is not None for run in r.runs)
        target = partition_target(total, o.max_partition_bytes, o.min_partitions)
        parts: List[Part] = list(pack_slices([part for a, r in readable if r.layout is not None
                                              for part in dataset_slices(capture, a, r, target)],
                                             target, o.max_partition_bytes, o.min_partitions))
        texts = tuple(f.text() for f in capture.left_out) + tuple(lost.text() for _, r in readable for lost in r.lost)
        if load.mode.reports and texts:
            parts.append(CorruptRows(texts))
        return parts

    def attachments(self, load: Load, parts: Sequence[Part]) -> Tuple[str, ...]:
        return tuple(a.key_hex for a, _ in self._readable(load))

    def read(self, part: Part, load: Load) -> Iterator[pa.RecordBatch]:
        if isinstance(part, SlicePack):
            return coalesced((batch for one in part.slices for batch in self._slice(one, load)),
                             load.options.batch_rows)
        if isinstance(part, CorruptRows):
            return load.mode.report(self.schema(load, after_planning=True), part.texts)
        assert isinstance(part, DatasetSlice)
        return self._slice(part, load)

    def _slice(self, part: DatasetSlice, load: Load) -> Iterator[pa.RecordBatch]:
        o, mode = load.options, load.mode
        read = 0

        def counted(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            nonlocal read
            for batch in batches:
                read += batch.num_rows
                yield batch

        def lost(text: str) -> Iterator[pa.RecordBatch]:
            return mode.report(mode.schema(arrow_schema(part.layout, o.temporal_types), self.name),
                               [f"{part.name}: observations {part.first_row + read + 1} to {part.last_row} not "
                                f"read (option ignoreMissingFiles): {text}"])

        bad_rows = None if mode.raises else mode.lost_rows
        return _unless_gone(load, lambda: counted(slice_batches(part, o.batch_rows, o.temporal_types,
                                                                load.held(part.messages), bad_rows)), lost)


# -- listings built while planning ---------------------------------------------------------------

@dataclass(frozen=True)
class TablePart(Part):
    """A whole table built while planning (the planning worker has the capture open; the
    reading one would open it again), handed over in the partition."""

    table: pa.Table

    @property
    def rows(self) -> int:  # type: ignore[override]
        return self.table.num_rows


class ListingView(View):
    """A table of the capture (``build(capture, options)``), built while planning."""

    def __init__(self, name: str, schema: pa.Schema, build: Callable[[Capture, ReadOptions], pa.Table]):
        self.name, self._schema, self._build = name, schema, build

    def schema(self, load: Load) -> pa.Schema:
        return self._schema

    def plan(self, load: Load) -> List[Part]:
        return [TablePart(self._build(load.capture(), load.options))]

    def read(self, part: Part, load: Load) -> Iterator[pa.RecordBatch]:
        assert isinstance(part, TablePart)
        return _batches(part.table, load)


# -- external files -------------------------------------------------------------------------------

@dataclass(frozen=True)
class LostFile(Part):
    """An external file that cannot be read: PERMISSIVE's row for it."""

    key_hex: str
    name: str
    kind: str
    error: KeptError

    rows = 0

    @property
    def attachments(self) -> Tuple[str, ...]:  # type: ignore[override]
        return (self.key_hex,)

    def batch(self, load: Load) -> pa.RecordBatch:
        o = load.options
        row = {"attachment": self.key_hex, "name": self.name, "kind": self.kind,
               o.corrupt_column: f"{self.name}: {self.error.summary()}"}
        return pa.RecordBatch.from_pylist([row], schema=load.mode.schema(FILES_SCHEMA, "files"))


def _lost_file(att: Attachment) -> LostFile:
    try:
        att.ordered_messages()
    except CmiFormatError as e:
        return LostFile(att.key_hex, att.entry.name, att.entry.kind, KeptError.of(e))
    raise AssertionError("a complete attachment")


class FilesView(View):
    name = "files"

    def schema(self, load: Load) -> pa.Schema:
        return load.mode.schema(FILES_SCHEMA, self.name)

    def plan(self, load: Load) -> List[Part]:
        """A plan per complete external file. FAILFAST: an incomplete or damaged one raises; the
        other modes read the rest (PERMISSIVE reports each incomplete one in a row of its own)."""
        capture: Capture = load.capture()
        keys = load.options.attachments
        chosen = [a for a in capture.file_attachments() if keys is None or a.key_hex in keys]
        if load.mode.raises:
            check_unplaced_damage(capture)
            check_undamaged(chosen)
            for a in chosen:
                a.ordered_messages()  # IncompleteAttachmentError
        parts: List[Part] = [attachment_plan(capture, a) if a.complete else _lost_file(a) for a in chosen]
        return [p for p in parts if load.mode.reports or not isinstance(p, LostFile)]

    def read(self, part: Part, load: Load) -> Iterator[pa.RecordBatch]:
        if isinstance(part, LostFile):
            return iter([part.batch(load)])
        assert isinstance(part, AttachmentPlan)

        def read() -> Iterator[pa.RecordBatch]:
            try:
                table = files_table([part], [load.held(part.messages)])
            except CmiFormatError as e:
                error = e.within(part.key_hex, part.sequence_of(e.location))
                lost = LostFile(part.key_hex, part.name, part.kind, KeptError.of(error))
                return load.mode.failed(error, lambda: lost.batch(load))
            return (load.mode.good(batch) for batch in _batches(table, load))

        def gone(text: str) -> Iterator[pa.RecordBatch]:
            lost = LostFile(part.key_hex, part.name, part.kind,
                            KeptError(CmiFormatError, f"not read (option ignoreMissingFiles): {text}", Location(), ""))
            return iter([lost.batch(load)] if load.mode.reports else [])
        return _unless_gone(load, read, gone)


# -- one partition per capture file ---------------------------------------------------------------

@dataclass(frozen=True)
class FilePart(Part):
    """One capture file of the load, read on its own."""

    path: str


class MessagesView(View):
    name = "messages"

    def schema(self, load: Load) -> pa.Schema:
        return messages_schema()

    def plan(self, load: Load) -> List[Part]:
        """A part per file read, and the files the read left out (options ignoreCorruptFiles,
        ignoreMissingFiles) in a row each; of a stream's micro-batch, its new files alone (the
        others are read again for the attachments of their messages)."""
        capture, new = load.capture(), load.options.new_files
        lost = [f for f in capture.left_out if new is None or f.path in new]
        left_out: List[Part] = [TablePart(left_out_messages(lost))] if lost else []
        return [FilePart(path) for path in capture.paths if new is None or path in new] + left_out

    def read(self, part: Part, load: Load) -> Iterator[pa.RecordBatch]:
        if isinstance(part, TablePart):
            return _batches(part.table, load)
        assert isinstance(part, FilePart)

        def read() -> Iterator[pa.RecordBatch]:
            if not exists(part.path):  # removed since planning
                raise PathNotFoundError(f"path {part.path!r} does not exist")
            return message_batches(load.capture(after_planning=True), part.path, load.options.batch_rows)

        def lost(text: str) -> Iterator[pa.RecordBatch]:
            return iter(left_out_messages([LeftOut(part.path, "ignoreMissingFiles", text)]).to_batches())
        return _unless_gone(load, read, lost)


class TransportFileView(View):
    """A transport's view: one partition per file of the load, each file decoded on its own."""

    def __init__(self, found: FileView):
        self.name, self.found = found.name, found

    def schema(self, load: Load) -> pa.Schema:
        return self.found.schema

    def plan(self, load: Load) -> List[Part]:
        new = load.options.new_files
        return [FilePart(path) for path in (load.options.files() if new is None else new)]

    def read(self, part: Part, load: Load) -> Iterator[pa.RecordBatch]:
        assert isinstance(part, FilePart)
        o = load.options
        options = dict(o.transport_options, **({"format": o.format} if o.format else {}))
        return _batches(self.found.read(part.path, options), load)


VIEWS: Dict[str, View] = {v.name: v for v in (
    DatasetView(),
    ListingView("attachments", ATTACHMENTS_SCHEMA, lambda c, o: attachments_table(c, o.attachments, o.new_files)),
    ListingView("variables", VARIABLES_SCHEMA, lambda c, o: variables_table(c, o.attachments)),
    FilesView(),
    MessagesView(),
)}


def view(name: str) -> View:
    found = VIEWS.get(name)
    if found is not None:
        return found
    added = transports.file_view(name)
    if added is None:
        names = list(VIEWS) + [v.name for t in transports.transports() for v in t.views]
        raise not_one_of("view", name, names)
    return TransportFileView(added)
