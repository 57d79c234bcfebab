"""The write's commit (``StagedWrite.deliver``) on fixed rows, without Spark: the cases
``spark_tests/unit/test_write_commit_threads.py`` checks, byte for byte, against the work
threads turned off and against the captures the code before them wrote.

Run as a script with a checkout's code first on the path, it prints the SHA-256 of each case's
capture as JSON: how ``spark_tests/unit/commit_digests.json`` was made from the commit before
the work threads (bdcff4c), so that the test compares with bytes this code did not write::

    git worktree add --detach /tmp/before bdcff4c
    PYTHONPATH=/tmp/before python spark_tests/commit_cases.py > spark_tests/unit/commit_digests.json
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import hashlib
import json
import os
import sys
import tempfile
from typing import Dict, List, Tuple

import pyarrow as pa
from pyspark.sql.types import (BinaryType, BooleanType, DateType, DecimalType, DoubleType, LongType, StringType,
                               StructField, StructType, TimestampNTZType, TimestampType)

from cmi_datasource.cmi.emit import IdSource
from cmi_datasource.engine.options import SaveOptions
from cmi_datasource.spark.writer import StagedWrite

DATASET_SCHEMA = StructType([
    StructField("id", LongType()), StructField("amount", DoubleType()), StructField("price", DecimalType(12, 2)),
    StructField("flag", BooleanType()), StructField("day", DateType()), StructField("stamp", TimestampNTZType()),
    StructField("zoned", TimestampType()),
    StructField("name", StringType(), metadata={"label": "Customer name"}), StructField("city", StringType()),
])
FILE_SCHEMA = {"text": StructType([StructField("name", StringType()), StructField("text", StringType())]),
               "binary": StructType([StructField("name", StringType()), StructField("content", BinaryType())])}
CITIES = ["Zürich", "Köln", "Paris", None, "Genève"]


def _dataset_rows(partition: int, rows: int) -> List[tuple]:
    """Partition ``partition``'s rows: its strings are longer than the partition before's, so
    the widths agreed across partitions differ from each partition's own."""
    out = []
    for i in range(rows):
        n = partition * 1000 + i
        out.append((n, None if i % 7 == 0 else n * 1.25, decimal.Decimal(n) / 100, i % 3 == 0,
                    dt.date(2000, 1, 1) + dt.timedelta(days=n % 9000),
                    dt.datetime(2020, 1, 1) + dt.timedelta(seconds=n * 37, microseconds=i),
                    dt.datetime(2021, 6, 1, tzinfo=dt.timezone.utc) + dt.timedelta(minutes=n),
                    None if i % 11 == 0 else "n" * (1 + partition * 9 + i % 5) + str(i),
                    CITIES[(n + partition) % len(CITIES)]))
    return out


def _file_rows(kind: str, partition: int, rows: int) -> List[tuple]:
    body = "\n".join(f"line {partition}.{i}: " + "x" * (i % 90) + "é" for i in range(rows * 3))
    return [(f"p{partition}-{i}.txt", body[: 200 * (i + 1)] if kind == "text" else bytes(range(256)) * (i + 1))
            for i in range(rows)]


# name -> (kind, options, rows of each partition; 0 is an empty partition)
CASES: Dict[str, Tuple[str, Dict[str, str], List[int]]] = {
    "dataset": ("dataset", {}, [1800, 0, 2500, 700]),
    "dataset-per-partition": ("dataset", {"attachmentPerPartition": "true"}, [900, 0, 1300, 400]),
    "dataset-s390": ("dataset", {"encoding": "785", "ccsid": "500"}, [600, 1500]),
    "text-files": ("text", {}, [4, 0, 6]),
    "binary-files": ("binary", {"lrecl": "80"}, [3, 5]),
}
TRANSPORTS = {"mq": {}, "tibrv": {"encoding": "273"}, "mqtt": {}}


def write_case(case: str, transport: str, directory: str) -> bytes:
    """The capture the commit writes for ``case`` over ``transport`` (deterministic ids and times)."""
    kind, extra, partitions = CASES[case]
    options = {"path": os.path.join(directory, "out"), "dataset": "WORK.ROWS", "deterministic": "true",
               "maxMessageBytes": "600", "transport": transport, "kind": kind, **extra,
               **TRANSPORTS[transport]}
    schema = DATASET_SCHEMA if kind == "dataset" else FILE_SCHEMA[kind]
    write = StagedWrite(SaveOptions.parse(options), schema)
    staging = os.path.join(directory, "staging")
    os.makedirs(staging)
    messages = []
    for partition, rows in enumerate(partitions):
        table = (_dataset_rows(partition, rows) if kind == "dataset" else _file_rows(kind, partition, rows))
        columns = list(zip(*table)) if table else [[] for _ in write.arrow_schema]
        batch = pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, write.arrow_schema)],
                                           schema=write.arrow_schema)
        # Batches of 97 rows, as Spark hands a task its rows in batches.
        spilled = write.spill(iter([batch.slice(at, 97) for at in range(0, rows, 97)]), staging, "gone")
        messages.append(dataclasses.replace(spilled, partition_id=partition))
    final = os.path.join(directory, "capture")
    write.deliver(messages[::-1], staging, final, IdSource("commit-cases"))
    with open(final, "rb") as f:
        return f.read()


def digests() -> Dict[str, str]:
    found = {}
    for case in CASES:
        for transport in TRANSPORTS:
            with tempfile.TemporaryDirectory() as tmp:
                found[f"{case}/{transport}"] = hashlib.sha256(write_case(case, transport, tmp)).hexdigest()
    return found


if __name__ == "__main__":
    json.dump(digests(), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
