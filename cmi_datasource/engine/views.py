"""The views a load offers, as one table: name -> schema, planning and reading.

``option("view", name)`` picks an entry of ``VIEWS``. The Spark layer asks the entry for its
schema, for its partitions (small picklable values) and, in each partition, for its Arrow
batches; adding a view is adding one entry here (and its table to ``tables.py``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional

import pyarrow as pa

from .. import transports
from ..errors import CmiFormatError, not_one_of
from ..transports import FileView
from ..payload.sas_dataset import arrow_schema
from .capture import Capture, open_cached
from .decode import slice_batches
from .options import ReadOptions
from .paths import resolve_paths
from .plan import AttachmentPlan, partition_target
from .tables import (ATTACHMENTS_SCHEMA, FILES_SCHEMA, VARIABLES_SCHEMA, attachments_table, files_table,
                     message_batches, messages_schema, variables_table)


@dataclass(frozen=True)
class View:
    name: str
    schema: Callable[[ReadOptions], pa.Schema]
    plan: Callable[[ReadOptions], List[Any]]  # one picklable value per partition
    read: Callable[[Any, ReadOptions], Iterator[pa.RecordBatch]]  # one partition's batches


def _capture(o: ReadOptions) -> Capture:
    return open_cached(o.paths, o.charsets, o.format)


def _batches(table: pa.Table, o: ReadOptions) -> Iterator[pa.RecordBatch]:
    return iter(table.to_batches(max_chunksize=o.batch_rows))


def _whole_table(name: str, schema: pa.Schema, build: Callable[[Capture], pa.Table]) -> View:
    """A view read as one table in one partition."""
    return View(name, lambda o: schema, lambda o: [None], lambda value, o: _batches(build(_capture(o)), o))


def _dataset_schema(o: ReadOptions) -> pa.Schema:
    capture = _capture(o)
    chosen = capture.select_datasets(o.dataset, o.attachment)
    return arrow_schema(capture.layout(chosen[0]), o.temporal)


def _dataset_plan(o: ReadOptions) -> List[Any]:
    capture = _capture(o)
    chosen = capture.select_datasets(o.dataset, o.attachment)
    total = sum(capture.layout(a).observation_bytes for a in chosen)
    target = partition_target(total, o.max_partition_bytes, o.min_partitions)
    return [part for a in chosen for part in capture.dataset_slices(a, target)]


def _files_plan(o: ReadOptions) -> List[Any]:
    capture = _capture(o)
    return [capture.plan(a) for a in capture.file_attachments() if a.complete] or [None]


def _files_read(plan: Optional[AttachmentPlan], o: ReadOptions) -> Iterator[pa.RecordBatch]:
    if plan is None:
        return iter(())
    try:
        return _batches(files_table([plan]), o)
    except CmiFormatError as e:
        raise e.within(plan.key_hex, plan.sequence_of(e.location)) from None


VIEWS: Dict[str, View] = {view.name: view for view in (
    View("dataset", _dataset_schema, _dataset_plan,
         lambda part, o: slice_batches(part, o.batch_rows, o.temporal)),
    _whole_table("attachments", ATTACHMENTS_SCHEMA, attachments_table),
    _whole_table("variables", VARIABLES_SCHEMA, variables_table),
    View("files", lambda o: FILES_SCHEMA, _files_plan, _files_read),
    View("messages", lambda o: messages_schema(), lambda o: list(_capture(o).paths),
         lambda path, o: message_batches(_capture(o), path, o.batch_rows)),
)}


def _file_view(found: FileView) -> View:
    """A transport's view: one partition per file of the load, each file decoded on its own."""
    def read(path: str, o: ReadOptions) -> Iterator[pa.RecordBatch]:
        options = dict(o.transport_options, **({"format": o.format} if o.format else {}))
        return _batches(found.read(path, options), o)
    return View(found.name, lambda o: found.schema, lambda o: resolve_paths(o.paths), read)


def view(name: str) -> View:
    found = VIEWS.get(name)
    if found is not None:
        return found
    added = transports.file_view(name)
    if added is None:
        names = list(VIEWS) + [v.name for t in transports.transports() for v in t.views]
        raise not_one_of("view", name, names)
    return _file_view(added)
