"""One large attachment split into partitions; planning decodes no observation; the index cache."""
from __future__ import annotations

import os

import pytest

from cmi_datasource import Capture
from cmi_datasource.engine import index
from cmi_datasource.transports.mq.dmpmqmsg import read_dump, write_dump
from cmi_datasource.engine.decode import slice_batches
from cmi_datasource.engine.plan import partition_target
from cmi_datasource.engine.write import DatasetToWrite

from cmi_datasource.transports import capture_format

from support import STRADDLING_ROWS as N, STRADDLING_TABLE as TABLE, build_mq_messages

DMPMQMSG = capture_format("dmpmqmsg")

def test_planning_keeps_only_the_start_of_large_payloads(tmp_path):
    path = tmp_path / "wide.dmp"
    with open(path, "wb") as f:
        write_dump(f, build_mq_messages([DatasetToWrite(TABLE, "LIB", "BIG")]))  # 32 KiB messages
    cap = Capture.open(str(path))
    observation_messages = [m for m in cap.messages if m.length > index.KEEP_BYTES]
    assert observation_messages and all(m.is_partial and len(m.payload) == index.KEEP_BYTES
                                        for m in observation_messages)
    assert cap.dataset_table().to_pylist() == TABLE.to_pylist()


@pytest.mark.parametrize("target", [5_000, 20_011, 333_333, 10 ** 9])
def test_slices_cover_every_row_once_at_observation_boundaries(big_dump, target):
    cap = Capture.open(big_dump)
    [att] = cap.attachments
    slices = cap.dataset_slices(att, target)
    assert slices[0].first_row == 0 and slices[-1].last_row == N
    assert all(a.last_row == b.first_row and a.first_row < a.last_row for a, b in zip(slices, slices[1:]))
    if target < 10 ** 9:
        assert len(slices) > 1
        assert all(len(s.refs) < len(cap.dataset_slices(att, 10 ** 9)[0].refs) for s in slices)
    rows = [r for s in slices for b in slice_batches(s, batch_rows=777) for r in b.to_pylist()]
    assert rows == TABLE.to_pylist()


def test_partition_target_follows_spark_file_sources():
    assert partition_target(1000, 128 << 20, 4) == 250
    assert partition_target(10 << 30, 128 << 20, 2) == 128 << 20
    assert partition_target(0, 128, 4) == 1
    # 5 partitions' worth on 2 cores: 6 smaller ones, so that no core idles in the last wave.
    assert partition_target(5 * 1000, 1000, 2) == 834


def test_index_is_built_once_per_file_version(tmp_path, monkeypatch):
    path = tmp_path / "q.dmp"
    with open(path, "wb") as f:
        write_dump(f, build_mq_messages([DatasetToWrite(TABLE.slice(0, 10), "LIB", "SMALL")]))
    index._MEMORY.clear()
    first = index.indexed(str(path), DMPMQMSG)
    index._MEMORY.clear()  # a new Python worker: only the disk cache is left

    def no_rescan(*_):
        raise AssertionError("the file was scanned again")

    monkeypatch.setattr(index, "scan", no_rescan)
    assert index.indexed(str(path), DMPMQMSG) == first
    monkeypatch.undo()
    os.utime(path, ns=(1, 1))  # a changed file is scanned again
    assert index.indexed(str(path), DMPMQMSG) == first


@pytest.mark.parametrize("chunk", [64, 1000, 4096])
def test_dump_read_in_chunks_is_the_same(big_dump, chunk):
    whole = list(read_dump(big_dump))
    assert list(read_dump(big_dump, chunk_bytes=chunk * 10)) == whole


def test_index_cache_keeps_only_the_newest_files(tmp_path, monkeypatch):
    monkeypatch.setattr(index, "CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(index, "CACHE_FILES_KEPT", 2)
    index._MEMORY.clear()
    for n in range(3):
        path = tmp_path / f"q{n}.dmp"
        with open(path, "wb") as f:
            write_dump(f, build_mq_messages([DatasetToWrite(TABLE.slice(0, 5), "LIB", f"S{n}")]))
        index.indexed(str(path), DMPMQMSG)
        os.utime(index._cache_file(index.index_key(str(path), DMPMQMSG)), (n + 1, n + 1))  # written in order
    kept = sorted(os.listdir(tmp_path / "cache"))
    assert len(kept) == 2
    assert os.path.basename(index._cache_file(index.index_key(str(tmp_path / "q0.dmp"), DMPMQMSG))) not in kept
    index._MEMORY.clear()


def test_a_capture_is_freed_by_reference_counting_alone(samples_dir, monkeypatch):
    # Spark workers freeze what they hold (gc.freeze) after their first task, so a capture
    # evicted from a worker's cache must not need the cycle collector, even one that cached a
    # layout error (an exception's traceback would hold the capture in a cycle).
    import gc
    import weakref
    from cmi_datasource.engine import capture
    from cmi_datasource.errors import DatasetLayoutError
    gc.collect()
    gc.disable()
    try:
        cap = Capture.open(samples_dir)
        cap.attachments_table(), cap.variables_table(), cap.files_table(), cap.dataset_table("SALES.MONTHLY")
        monkeypatch.setattr(capture, "read_layout", lambda *a: (_ for _ in ()).throw(DatasetLayoutError("bad")))
        cap._layouts.clear()
        with pytest.raises(DatasetLayoutError):
            cap.layout(next(a for a in cap.attachments if a.entry.attachment_type == 1))
        assert cap._layouts
        ref = weakref.ref(cap)
        del cap
        assert ref() is None
    finally:
        gc.enable()
