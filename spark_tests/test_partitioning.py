"""One large attachment split into partitions; planning decodes no observation; the index cache."""
from __future__ import annotations

import os

import pyarrow as pa
import pytest

from cmi_datasource import Capture
from cmi_datasource.engine import index
from cmi_datasource.transports.mq.dmpmqmsg import read_dump, write_dump
from cmi_datasource.engine.decode import slice_batches
from cmi_datasource.engine.plan import partition_target
from cmi_datasource.engine.write import DatasetToWrite, WriteOptions

from cmi_datasource.transports import capture_format

from support import build_mq_messages

DMPMQMSG = capture_format("dmpmqmsg")

N = 20_000
TABLE = pa.table({
    "ID": pa.array([float(i) for i in range(N)]),
    "CODE": pa.array([f"c{i % 97:03d}-{'ü' * (i % 3)}" for i in range(N)]),
    "X": pa.array([i * 0.5 for i in range(N)]),
})


@pytest.fixture(scope="module")
def big_dump(tmp_path_factory):
    # 1000-byte messages and a 31-byte observation: records straddle nearly every message.
    path = tmp_path_factory.mktemp("big") / "big.dmp"
    with open(path, "wb") as f:
        write_dump(f, build_mq_messages([DatasetToWrite(TABLE, "LIB", "BIG")],
                                     options=WriteOptions(max_message_bytes=1000, deterministic_seed="big")))
    return str(path)


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


def test_spark_splits_one_attachment(spark, big_dump):
    # maxPartitionBytes counts observation bytes (the decoded rows), not the dump's hex text.
    cap = Capture.open(big_dump)
    observation_bytes = cap.layout(cap.attachments[0]).observation_bytes
    assert observation_bytes > 400_000
    df = spark.read.format("cmi").option("maxPartitionBytes", "100000").load(big_dump)
    # At most 100000 bytes each, as many as a multiple of the cores; slices end at message
    # ends, so the last one may be a little short or long of the others.
    cores = os.cpu_count()
    wanted = -(-(-(-observation_bytes // 100_000)) // cores) * cores
    assert abs(df.rdd.getNumPartitions() - wanted) <= 1
    assert sorted(r["ID"] for r in df.collect()) == [float(i) for i in range(N)]
    four = spark.read.format("cmi").option("minPartitions", "4").load(big_dump)
    assert four.rdd.getNumPartitions() == 4
    assert four.agg({"X": "sum"}).collect()[0][0] == sum(i * 0.5 for i in range(N))


def test_planning_decodes_no_observation(spark, tmp_path, big_dump):
    """Bytes that are no valid text in an observation: planning (schema, partitions) works, and
    only reading the partition that holds them fails, naming the message."""
    data = open(big_dump, "rb").read()
    records = data.split(b"\n\n")
    victim = len(records) // 2
    lines = records[victim].split(b"\n")
    x = [i for i, line in enumerate(lines) if line.startswith(b"X ")][3]
    lines[x] = b"X " + b"FF" * ((len(lines[x]) - 2) // 2)
    path = tmp_path / "corrupt.dmp"
    path.write_bytes(b"\n\n".join(records[:victim] + [b"\n".join(lines)] + records[victim + 1:]))
    df = spark.read.format("cmi").option("maxPartitionBytes", "50000").load(str(path))
    assert df.columns == ["ID", "CODE", "X"] and df.rdd.getNumPartitions() > 5
    with pytest.raises(Exception, match=r"CODE, observation \d+: .* is not valid UTF-8") as e:
        df.collect()
    assert f"message {victim - 1}," in str(e.value)  # records[0] is the file header
    cap = Capture.open(str(path))
    [att] = cap.attachments
    untouched = [s for s in cap.dataset_slices(att, 100_000)
                 if all(index != victim - 1 for ref in s.refs for _, index, _, _ in ref)]
    assert untouched and sum(len(b) for s in untouched for b in slice_batches(s)) > 0


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


def test_a_spark_worker_freezes_long_lived_objects_after_its_first_partition(big_dump):
    # PySpark's daemon collects garbage after every task: what the first partition left alive
    # (numba's kernels, modules) goes to the permanent generation so that it is not rescanned.
    import gc
    from pyspark.sql.types import DoubleType, StringType, StructField, StructType
    from cmi_datasource.spark import source
    from cmi_datasource.engine.options import ReadOptions
    schema = StructType([StructField("ID", DoubleType()), StructField("CODE", StringType()),
                         StructField("X", DoubleType())])
    reader = source.CmiReader(ReadOptions.parse({"path": big_dump}), schema)
    [partition] = source.CmiReader(ReadOptions.parse({"path": big_dump, "minpartitions": "1"}),
                                   schema).partitions()
    source._WORKER_SETTLED = False
    gc.unfreeze()
    try:
        assert sum(b.num_rows for b in reader.read(partition)) == N
        assert source._WORKER_SETTLED and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


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
