"""Reading a load, the one way: the Spark classes, the ``cmi`` command and the Spark-free API
(``cmi_datasource.read``) all plan with ``plan`` and read each part with ``read_part``, so a
table and an error are the same whichever asked.

Spark-free (runnable as it stands, in the repository)::

    import cmi_datasource as cmi
    cmi.read("sample_queues/mixed_types.dmp")                        # the dataset view, a pyarrow Table
    cmi.read("sample_queues/", view="attachments")
    cmi.read("sample_queues/nightly_batch.dmp", dataset="FIN.RETURNS", mode="PERMISSIVE")
    for batch in cmi.read_batches("sample_queues/nightly_batch.dmp", dataset="FIN.DAILY_SALES"):
        ...

Options are the read options of ``spark.read.format("cmi")`` (docs/options.md), by the same
names (any case); values may be strings, numbers or booleans.
"""
from __future__ import annotations

import json
from typing import Any, Iterable, Iterator, Mapping, Optional, Tuple, Union

import pyarrow as pa

from .. import cache
from .capture import Capture
from .load import Load
from .options import ReadOptions
from .plan import NoRows, Part
from .planned import Plan, planned
from .views import view

Paths = Union[str, Iterable[str]]


def plan(load: Load) -> Plan:
    """The load's schema and partitions (kept for the next asker: planned.py)."""
    return planned(load)


def read_part(load: Load, part: Part) -> Iterator[pa.RecordBatch]:
    """One partition's batches, read with the disk cache the load's option cacheDir chooses."""
    if isinstance(part, NoRows):
        return iter(())
    return cache.within(load.options.cache_dir, lambda: view(load.options.view).read(part, load))


def batches(load: Load, chosen: Optional[Plan] = None) -> Iterator[pa.RecordBatch]:
    """The view's batches, partition after partition, as Spark's tasks read them; lazy, so a
    caller that stops early decodes no further."""
    for part in (chosen or plan(load)).parts or ():
        yield from read_part(load, part)


def first_rows(load: Load, limit: int) -> Tuple[pa.Table, Plan]:
    """The first ``limit`` rows of the view, decoding only the batches that hold them, and the plan."""
    chosen = plan(load)
    kept, held = [], 0
    for batch in batches(load, chosen):
        kept.append(batch)
        held += batch.num_rows
        if held >= limit:
            break  # nothing past the rows shown is decoded
    return pa.Table.from_batches(kept, schema=chosen.schema).slice(0, limit), chosen


def table(load: Load) -> pa.Table:
    chosen = plan(load)
    return pa.Table.from_batches(list(batches(load, chosen)), schema=chosen.schema)


def load_of(source: Union[Paths, Capture], view: str = "dataset", options: Mapping[str, Any] = {}) -> Load:
    """The load of ``source`` (paths, or a capture built in memory) with read options given as
    ``spark.read.format("cmi").options(...)`` takes them."""
    given = {str(k): _text(v) for k, v in options.items() if v is not None}
    capture = source if isinstance(source, Capture) else None
    if isinstance(source, Capture):
        paths = list(source.paths)
    else:
        paths = [source] if isinstance(source, str) else list(source)
    given["view"] = view
    given["paths"] = json.dumps([str(p) for p in paths])
    return Load(ReadOptions.parse(given), capture)


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def read(source: Union[Paths, Capture], view: str = "dataset", **options: Any) -> pa.Table:
    """A view of a capture as one pyarrow Table: what ``spark.read.format("cmi")
    .option("view", view).options(**options).load(source)`` gives, without Spark."""
    return table(load_of(source, view, options))


def read_batches(source: Union[Paths, Capture], view: str = "dataset", **options: Any) -> pa.RecordBatchReader:
    """A view of a capture batch by batch (memory follows a batch, not the view)."""
    load = load_of(source, view, options)
    chosen = plan(load)
    return pa.RecordBatchReader.from_batches(chosen.schema, batches(load, chosen))
