"""A queue export of many small dumps: slices packed into few partitions, rows in order; the
load's schema and partitions planned once and kept for the next planning worker."""
from __future__ import annotations

import pyarrow as pa
import pytest

from cmi_datasource import cache
from cmi_datasource.arrow.batches import coalesced
from cmi_datasource.engine import planned, reading, views
from cmi_datasource.engine.load import Load
from cmi_datasource.engine.options import ReadOptions
from cmi_datasource.engine.plan import SLICE_OPEN_COST_BYTES, SlicePack, pack_slices, slice_bytes
from cmi_datasource.engine.write import DatasetToWrite, WriteOptions, write_attachments_dump

from support import STRADDLING_TABLE as TABLE

FILES = 12
ROWS_PER_FILE = 7


@pytest.fixture
def queue_export(tmp_path):
    """FILES dumps of one data set, each a transfer of its own rows (its own attachment key)."""
    directory = tmp_path / "export"
    directory.mkdir()
    for n in range(FILES):
        with open(directory / f"export-{n:03d}.dmp", "wb") as out:
            write_attachments_dump(out, [DatasetToWrite(TABLE.slice(n * ROWS_PER_FILE, ROWS_PER_FILE), "QUEUE",
                                                        "ORDERS")],
                                   options=WriteOptions(deterministic_seed=f"export-{n}"))
    return str(directory)


def load(**options) -> Load:
    return Load(ReadOptions.parse(options))


def parts_of(load: Load) -> list:
    return list(reading.plan(load).parts)


def read_all(load: Load, parts) -> list:
    return [row for part in parts for batch in reading.read_part(load, part) for row in batch.to_pylist()]


def test_small_attachments_are_packed_and_read_in_order(queue_export):
    o = load(path=queue_export, minpartitions="2")
    parts = parts_of(o)
    # 12 small files on 2 cores: 2 partitions, not 12 tasks of one file each.
    assert len(parts) == 2 and all(isinstance(p, SlicePack) for p in parts)
    assert sum(len(p.slices) for p in parts) == FILES
    assert read_all(o, parts) == TABLE.slice(0, FILES * ROWS_PER_FILE).to_pylist()


def test_a_packed_partition_hands_spark_whole_batches(queue_export):
    o = load(path=queue_export, minpartitions="1", batchrows="20")
    [part] = parts_of(o)
    sizes = [b.num_rows for b in reading.read_part(o, part)]
    assert sizes == [21, 21, 21, 21]  # 3 attachments of 7 rows per batch, not 12 batches of 7


def test_packing_keeps_large_slices_alone_and_the_order(queue_export):
    [pack] = parts_of(load(path=queue_export, minpartitions="1"))
    small = list(pack.slices)
    weight = slice_bytes(small[0]) + SLICE_OPEN_COST_BYTES
    # Room for three slices a partition: four packs of three, in the slices' order.
    packs = pack_slices(small, 1, 3 * weight, 1)
    assert [p.slices for p in packs] == [tuple(small[i:i + 3]) for i in range(0, FILES, 3)]
    # Partitions smaller than one slice's weight: every slice alone, never an empty partition.
    assert pack_slices(small, 1, 1, 1) == small
    # Slices cut from one large attachment at the partition size stay one per partition.
    assert pack_slices(small, slice_bytes(small[0]), 1, 1) == small


def test_coalesced_joins_small_batches_and_passes_large_ones():
    schema = pa.schema([("x", pa.int64())])

    def batch(*values):
        return pa.RecordBatch.from_arrays([pa.array(values, pa.int64())], schema=schema)

    large = batch(*range(10))
    out = list(coalesced([batch(1, 2), batch(), batch(3), large, batch(4), batch(5, 6, 7)], 3))
    assert [b.to_pydict()["x"] for b in out] == [[1, 2, 3], list(range(10)), [4, 5, 6, 7]]
    assert out[1] is large


def test_the_next_planning_worker_gets_the_kept_plan(queue_export, tmp_path, monkeypatch):
    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, str(tmp_path / "cache"))
    o = load(path=queue_export, minpartitions="2")
    schema = planned.schema(o)
    parts = parts_of(o)
    planned._MEMORY.clear()  # a fresh Python worker: only the disk is left

    def no_planning(*_):
        raise AssertionError("the capture was planned again")

    monkeypatch.setattr(Load, "capture", no_planning)
    assert planned.schema(o).equals(schema) and parts_of(o) == parts
    # A file added to the directory is a new load: planned again.
    monkeypatch.undo()
    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, str(tmp_path / "cache"))
    with open(f"{queue_export}/export-999.dmp", "wb") as out:
        write_attachments_dump(out, [DatasetToWrite(TABLE.slice(0, ROWS_PER_FILE), "QUEUE", "ORDERS")],
                               options=WriteOptions(deterministic_seed="late"))
    assert sum(len(p.slices) for p in parts_of(o)) == FILES + 1


def test_a_plan_that_fails_is_not_kept_and_fails_where_spark_plans(queue_export, tmp_path, monkeypatch):
    from cmi_datasource.errors import CmiFormatError
    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, str(tmp_path / "cache"))
    o = load(path=queue_export, dataset="QUEUE.ORDERS")

    class FailingPlan(views.DatasetView):
        def plan(self, load):
            raise CmiFormatError("cannot plan")

    monkeypatch.setitem(views.VIEWS, "dataset", FailingPlan())
    assert planned.schema(o).names == TABLE.schema.names
    with pytest.raises(CmiFormatError, match="cannot plan"):
        reading.plan(o)


def test_one_planning_step_opens_a_heavy_load_once(queue_export, tmp_path, monkeypatch):
    # Heavier than what a worker keeps in memory between loads, the load is still opened once
    # while its schema and partitions are planned.
    from cmi_datasource.engine import capture
    from cmi_datasource.engine.memo import KeptInMemory
    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, str(tmp_path / "cache"))
    monkeypatch.setattr(capture, "_OPEN", KeptInMemory(4, 1, lambda c: len(c.messages)))
    opened = []
    real_open = capture.Capture.of_files
    monkeypatch.setattr(capture.Capture, "of_files", lambda *a, **k: opened.append(1) or real_open(*a, **k))
    planned.schema(load(path=queue_export))
    assert len(opened) == 1 and len(capture._OPEN) == 0  # and not kept after
