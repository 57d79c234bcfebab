"""Spark cuts one large attachment into partitions, plans without decoding observations, and its
Python workers freeze what they keep."""
from __future__ import annotations

import os

import pytest

from cmi_datasource import Capture
from cmi_datasource.engine.decode import slice_batches

from support import STRADDLING_ROWS as N, slices_of


def test_spark_splits_one_attachment(spark, big_dump):
    # maxPartitionBytes counts observation bytes (the decoded rows), not the dump's hex text.
    cap = Capture.open(big_dump)
    observation_bytes = cap.layout(cap.attachments[0]).observation_bytes
    assert observation_bytes > 400_000
    df = spark.read.format("cmi").option("maxPartitionBytes", "100000").load(big_dump)
    # At most 100000 bytes each, as many as a multiple of the cores; slices end at message
    # ends, so the last one may be a little short or long of the others.
    cores = os.cpu_count()
    slices = -(-observation_bytes // 100_000)  # ceiling divisions
    wanted = -(-slices // cores) * cores
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
    assert f"  message: {victim}\n" in str(e.value)  # records[0] is the file header; messages count from 1
    cap = Capture.open(str(path))
    [att] = cap.attachments
    untouched = [s for s in slices_of(cap, att, 100_000)
                 if all(index != victim - 1 for m in s.messages for _, index, _, _ in m.spans)]
    assert untouched and sum(len(b) for s in untouched for b in slice_batches(s)) > 0


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


