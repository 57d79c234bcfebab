"""The views a load offers, as one table: name -> schema, planning and reading.

``option("view", name)`` picks an entry of ``VIEWS``. The Spark layer asks the entry for its
schema, for its partitions (small picklable values) and, in each partition, for its Arrow
batches; adding a view is adding one entry here (and its table to ``tables.py``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa

from .. import transports
from ..arrow.batches import coalesced
from ..cmi.assembly import Attachment
from ..errors import CmiFormatError, CmiOptionError, KeptError, not_one_of
from ..transports import FileView
from ..payload.sas_dataset import arrow_schema
from .capture import Capture, open_cached
from .decode import slice_batches
from .options import DROPMALFORMED, FAILFAST, PERMISSIVE, ReadOptions
from .recovery import LostRows
from .paths import file_filters, files_to_read
from .plan import SlicePack, pack_slices, partition_target
from .tables import (ATTACHMENTS_SCHEMA, FILES_SCHEMA, VARIABLES_SCHEMA, attachments_table, files_table,
                     message_batches, messages_schema, variables_table)


@dataclass(frozen=True)
class View:
    name: str
    schema: Callable[[ReadOptions], pa.Schema]
    plan: Callable[[ReadOptions], List[Any]]  # one picklable value per partition
    read: Callable[[Any, ReadOptions], Iterator[pa.RecordBatch]]  # one partition's batches


def _capture(o: ReadOptions) -> Capture:
    return open_cached(o.paths, o.charsets, o.format, o.transport_options, **file_filters(o))


def _batches(table: pa.Table, o: ReadOptions) -> Iterator[pa.RecordBatch]:
    return iter(table.to_batches(max_chunksize=o.batch_rows))


def _whole_table(name: str, schema: pa.Schema, build: Callable[[Capture], pa.Table]) -> View:
    """A view read as one table in one partition, built while planning (the planning worker has
    the capture open; the reading one would open it again) and handed over in the partition."""
    return View(name, lambda o: schema, lambda o: [build(_capture(o))], lambda table, o: _batches(table, o))


@dataclass(frozen=True)
class CorruptRows:
    """A partition of PERMISSIVE's report: a row of nulls per damaged stretch, its
    ``_corrupt_record`` saying what was lost and where."""

    texts: Tuple[str, ...]


def _chosen(o: ReadOptions) -> Tuple[Capture, List[Attachment]]:
    capture = _capture(o)
    return capture, capture.select_datasets(o.dataset, o.attachment, tolerant=o.mode != FAILFAST)


def _dataset_schema(o: ReadOptions) -> pa.Schema:
    capture, chosen = _chosen(o)
    if o.mode == FAILFAST:
        return arrow_schema(capture.layout(chosen[0]), o.temporal)
    recoveries = [capture.recovery(a) for a in chosen]
    layouts = [r.layout for r in recoveries if r.layout is not None]
    if not layouts and o.mode == DROPMALFORMED:
        lost = recoveries[0].lost[0]
        raise lost.error.kind(f"nothing can be trusted: {lost.text()}", lost.error.location,
                              "option('mode', 'PERMISSIVE') returns a row saying what was lost and where; "
                              "option('view', 'attachments') shows every attachment's problems")
    schema = arrow_schema(layouts[0], o.temporal) if layouts else pa.schema([])
    return _with_corrupt_column(schema, o) if o.mode == PERMISSIVE else schema


def _dataset_plan(o: ReadOptions) -> List[Any]:
    """Slices of the chosen attachments, small ones packed together (plan.pack_slices)."""
    capture, chosen = _chosen(o)
    if o.mode == FAILFAST:
        total = sum(capture.layout(a).observation_bytes for a in chosen)
        target = partition_target(total, o.max_partition_bytes, o.min_partitions)
        return pack_slices([part for a in chosen for part in capture.dataset_slices(a, target)], target,
                           o.max_partition_bytes, o.min_partitions)
    recoveries = [capture.recovery(a) for a in chosen]
    total = sum(run.stream.length for r in recoveries for run in r.runs)
    target = partition_target(total, o.max_partition_bytes, o.min_partitions)
    parts: List[Any] = pack_slices([part for a, r in zip(chosen, recoveries) if r.layout is not None
                                    for part in capture.run_slices(a, r, target)], target,
                                   o.max_partition_bytes, o.min_partitions)
    texts = tuple(lost.text() for r in recoveries for lost in r.lost)
    if o.mode == PERMISSIVE and texts:
        parts.append(CorruptRows(texts))
    return parts or [CorruptRows(())]


def _dataset_read(part: Any, o: ReadOptions) -> Iterator[pa.RecordBatch]:
    if isinstance(part, SlicePack):
        return coalesced((batch for one in part.slices for batch in _slice_read(one, o)), o.batch_rows)
    return _slice_read(part, o)


def _slice_read(part: Any, o: ReadOptions) -> Iterator[pa.RecordBatch]:
    if o.mode == FAILFAST:
        return slice_batches(part, o.batch_rows, o.temporal)
    if isinstance(part, CorruptRows):
        return iter([_report(_dataset_schema(o), part.texts)] if part.texts else [])
    schema = arrow_schema(part.layout, o.temporal)

    def bad_rows(batch: pa.RecordBatch, lost: List[Tuple[int, LostRows]]) -> pa.RecordBatch:
        if o.mode == DROPMALFORMED:
            if not lost:
                return batch
            keep = np.ones(batch.num_rows, dtype=bool)
            keep[[at for at, _ in lost]] = False
            return batch.filter(pa.array(keep))
        texts = [None] * batch.num_rows
        for at, rows in lost:
            texts[at] = rows.text()
        return pa.RecordBatch.from_arrays(batch.columns + [pa.array(texts, pa.string())],
                                          schema=schema.append(pa.field(o.corrupt_column, pa.string())))
    return slice_batches(part, o.batch_rows, o.temporal, bad_rows=bad_rows)


def _report(schema: pa.Schema, texts: Sequence[str]) -> pa.RecordBatch:
    """Rows of nulls whose last column (the corrupt record's) holds ``texts``."""
    columns = [pa.nulls(len(texts), f.type) for f in schema][:-1] + [pa.array(list(texts), pa.string())]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _files_schema(o: ReadOptions) -> pa.Schema:
    return _with_corrupt_column(FILES_SCHEMA, o) if o.mode == PERMISSIVE else FILES_SCHEMA


def _with_corrupt_column(schema: pa.Schema, o: ReadOptions) -> pa.Schema:
    if o.corrupt_column in schema.names:
        raise CmiOptionError(f"columnNameOfCorruptRecord {o.corrupt_column!r} is a column of view {o.view}; "
                             f"name another column")
    return schema.append(pa.field(o.corrupt_column, pa.string()))


def _files_plan(o: ReadOptions) -> List[Any]:
    """A plan per complete external file. FAILFAST: an incomplete or damaged one raises; the
    other modes read the rest (PERMISSIVE reports each incomplete one in a row of its own)."""
    capture = _capture(o)
    chosen = capture.file_attachments()
    if o.mode == FAILFAST:
        capture.check_unplaced_damage()
        capture.check_undamaged(chosen)
        for a in chosen:
            a.ordered_messages()  # IncompleteAttachmentError
    parts: List[Any] = [capture.plan(a) if a.complete else _lost_file(a) for a in chosen]
    if o.mode != PERMISSIVE:
        parts = [p for p in parts if not isinstance(p, LostFile)]
    return parts or [None]


@dataclass(frozen=True)
class LostFile:
    """An external file that cannot be read: PERMISSIVE's row for it."""

    key_hex: str
    name: str
    kind: str
    error: KeptError

    def batch(self, o: ReadOptions) -> pa.RecordBatch:
        row = {"attachment": self.key_hex, "name": self.name, "kind": self.kind,
               o.corrupt_column: f"{self.name}: {self.error.summary()}"}
        return pa.RecordBatch.from_pylist([row], schema=_files_schema(o))


def _lost_file(att: Attachment) -> LostFile:
    try:
        att.ordered_messages()
    except CmiFormatError as e:
        return LostFile(att.key_hex, att.entry.name, att.entry.kind, KeptError.of(e))
    raise AssertionError("a complete attachment")


def _files_read(plan: Any, o: ReadOptions) -> Iterator[pa.RecordBatch]:
    if plan is None:
        return iter(())
    if isinstance(plan, LostFile):
        return iter([plan.batch(o)])
    try:
        table = files_table([plan])
    except CmiFormatError as e:
        error = e.within(plan.key_hex, plan.sequence_of(e.location))
        if o.mode == FAILFAST:
            raise error from None
        if o.mode == DROPMALFORMED:
            return iter(())
        return iter([LostFile(plan.key_hex, plan.name, plan.kind, KeptError.of(error)).batch(o)])
    if o.mode == PERMISSIVE:
        table = table.append_column(pa.field(o.corrupt_column, pa.string()), pa.nulls(table.num_rows, pa.string()))
    return _batches(table, o)


VIEWS: Dict[str, View] = {view.name: view for view in (
    View("dataset", _dataset_schema, _dataset_plan, _dataset_read),
    _whole_table("attachments", ATTACHMENTS_SCHEMA, attachments_table),
    _whole_table("variables", VARIABLES_SCHEMA, variables_table),
    View("files", _files_schema, _files_plan, _files_read),
    View("messages", lambda o: messages_schema(), lambda o: list(_capture(o).paths),
         lambda path, o: message_batches(_capture(o), path, o.batch_rows)),
)}


def _file_view(found: FileView) -> View:
    """A transport's view: one partition per file of the load, each file decoded on its own."""
    def read(path: str, o: ReadOptions) -> Iterator[pa.RecordBatch]:
        options = dict(o.transport_options, **({"format": o.format} if o.format else {}))
        return _batches(found.read(path, options), o)
    return View(found.name, lambda o: found.schema, files_to_read, read)


def view(name: str) -> View:
    found = VIEWS.get(name)
    if found is not None:
        return found
    added = transports.file_view(name)
    if added is None:
        names = list(VIEWS) + [v.name for t in transports.transports() for v in t.views]
        raise not_one_of("view", name, names)
    return _file_view(added)
