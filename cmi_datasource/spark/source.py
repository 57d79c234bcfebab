"""``spark.read.format("cmi")`` and ``df.write.format("cmi")``: SAS datasets and files in captured
CMI message-queue traffic (IBM MQ dmpmqmsg dumps and binary MQGET captures).

Reading (runnable in a notebook after ``pip install cmi-datasource``)::

    df = spark.read.format("cmi").load("sample_queues/mixed_types.dmp")
    df.show()
    spark.read.format("cmi").option("view", "attachments").load("sample_queues/").show()
    spark.read.format("cmi").option("dataset", "prod.ledger").load("sample_queues/").show()

Read options (names are case-insensitive):

- ``path`` (via ``load()``): a capture file, a directory (read recursively), a glob, or a list
  of them. Attachments may span files of one load.
- ``view``: ``dataset`` (default, the observations of one SAS dataset), ``attachments`` (one row
  per attachment), ``variables`` (one row per variable per dataset, like PROC CONTENTS),
  ``files`` (one row per external file), ``messages`` (one row per physical message).
- ``dataset``: ``LIB.MEMBER`` (or ``MEMBER``), case-insensitive. ``attachment``: 32 hex digits.
  With neither: the only complete dataset; several complete datasets with identical variables
  are unioned; otherwise an error lists the candidates.
- ``ccsid``: read characters in this CCSID whatever the messages say; ``defaultCcsid``: for
  messages whose CodedCharSetId is 0 (default 1208).
- ``temporalTypes``: ``true`` (default) gives date/timestamp_ntz/time columns for date, datetime
  and time formats; ``false`` keeps SAS numbers.
- ``batchRows`` (default 65536), ``maxPartitionBytes`` (default 128 MiB) and ``minPartitions``
  (default: the CPU count): batch and partition sizes; one large attachment is cut at
  observation boundaries into several partitions.

Writing::

    df.write.format("cmi").mode("append").option("dataset", "WORK.CUSTOMERS").save("/data/outbound")

Write options: ``dataset`` (default ``WORK.DATA``), ``encoding`` (546, 273 or 785), ``ccsid``
(default 1208), ``longSize`` (4 or 8), ``maxMessageBytes`` (at most 32768), ``message``,
``description``, ``label``, ``truncate``, ``attachmentPerPartition``, ``deterministic``, ``kind``
(``dataset``, or ``text``/``binary`` for a DataFrame of ``name`` + ``text``/``content``) and
``lrecl``. ``mode`` must be ``append`` or ``overwrite``.
"""
from __future__ import annotations

import gc
from collections import OrderedDict
from typing import Iterator, List

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructField, StructType

from ..capture.paths import resolve_paths
from ..catalog import (VIEW_SCHEMAS, Capture, DatasetSlice, files_table, messages_table, partition_target,
                       slice_batches)
from ..index import file_key
from ..payload.sas_dataset import arrow_schema
from .options import ReadOptions, SparkWriteOptions
from .writer import CmiWriter

_WORKER_SETTLED = False


def _settle_worker() -> None:
    """Once per Python worker, after its first partition (or plan): move the objects alive then
    (modules, numba's compiled kernels and type system, a planner's cached capture: 100,000 to
    200,000) to the garbage collector's permanent generation. PySpark's daemon runs a full
    gc.collect() after every task, which scanned them all: about 50 ms each time, with nothing
    to free. Reference counting still frees them (captures hold no reference cycles)."""
    global _WORKER_SETTLED
    if not _WORKER_SETTLED:
        gc.collect()
        gc.freeze()
        _WORKER_SETTLED = True


_CAPTURE_CACHE: "OrderedDict[tuple, Capture]" = OrderedDict()
_CAPTURE_CACHE_SIZE = 4


def open_capture(options: ReadOptions) -> Capture:
    """Open (or reuse, within one Python worker) the capture for these paths and charsets.

    The key is each file's index key (size, mtime and a CRC of its ends), so a changed file is read again.
    """
    files = resolve_paths(options.paths)
    key = (tuple(file_key(f) for f in files), options.charsets)
    capture = _CAPTURE_CACHE.get(key)
    if capture is None:
        capture = Capture.open(files, options.charsets)
        _CAPTURE_CACHE[key] = capture
        while len(_CAPTURE_CACHE) > _CAPTURE_CACHE_SIZE:
            _CAPTURE_CACHE.popitem(last=False)
    return capture


def spark_schema(arrow: pa.Schema) -> StructType:
    """Spark schema of an Arrow schema, carrying column metadata (label, format, ...) across."""
    converted = from_arrow_schema(pa.schema([f.remove_metadata() for f in arrow]), prefer_timestamp_ntz=True)
    fields = []
    for spark_field, arrow_field in zip(converted.fields, arrow):
        metadata = {k.decode(): v.decode() for k, v in (arrow_field.metadata or {}).items()}
        if "sas_length" in metadata:
            metadata["sas_length"] = int(metadata["sas_length"])
        fields.append(StructField(spark_field.name, spark_field.dataType, True, metadata))
    return StructType(fields)


class CmiDataSource(DataSource):
    __doc__ = __doc__

    @classmethod
    def name(cls) -> str:
        return "cmi"

    @property
    def read_options(self) -> ReadOptions:
        return ReadOptions.parse(dict(self.options))

    def _dataset_arrow_schema(self) -> pa.Schema:
        o = self.read_options
        capture = open_capture(o)
        chosen = capture.select_datasets(o.dataset, o.attachment)
        return arrow_schema(capture.layout(chosen[0]), o.temporal)

    def schema(self) -> StructType:
        o = self.read_options
        if o.view == "dataset":
            return spark_schema(self._dataset_arrow_schema())
        return spark_schema(VIEW_SCHEMAS[o.view])

    def reader(self, schema: StructType) -> "CmiReader":
        return CmiReader(self.read_options, schema)

    def writer(self, schema: StructType, overwrite: bool) -> CmiWriter:
        return CmiWriter(SparkWriteOptions.parse(dict(self.options)), schema, overwrite)


class CmiPartition(InputPartition):
    def __init__(self, kind: str, value):
        super().__init__(value)
        self.kind = kind


class CmiReader(DataSourceReader):
    def __init__(self, options: ReadOptions, schema: StructType):
        self.options = options
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")

    def partitions(self) -> List[CmiPartition]:
        o = self.options
        capture = open_capture(o)
        if o.view == "dataset":
            chosen = capture.select_datasets(o.dataset, o.attachment)
            total = sum(capture.layout(a).observation_bytes for a in chosen)
            target = partition_target(total, o.max_partition_bytes, o.min_partitions)
            parts = [CmiPartition("dataset", part) for a in chosen for part in capture.dataset_slices(a, target)]
            _settle_worker()  # the planning worker keeps the capture: 100,000 more objects
            return parts
        if o.view == "files":
            return [CmiPartition("file", capture.plan(a))
                    for a in capture.file_attachments() if a.complete] or [CmiPartition("empty", None)]
        if o.view == "messages":
            return [CmiPartition("messages", path) for path in capture.paths]
        return [CmiPartition(o.view, None)]

    def _conform(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        # Spark compares the batch schema with its own exactly (types, order, nullability).
        return pa.RecordBatch.from_arrays(batch.columns, schema=self.arrow_schema)

    def _table_batches(self, table: pa.Table) -> Iterator[pa.RecordBatch]:
        for batch in table.to_batches(max_chunksize=self.options.batch_rows):
            yield self._conform(batch)

    def read(self, partition: CmiPartition) -> Iterator[pa.RecordBatch]:
        o = self.options
        if partition.kind == "dataset":
            part: DatasetSlice = partition.value
            for batch in slice_batches(part, o.batch_rows, o.temporal):
                yield self._conform(batch)
            _settle_worker()
        elif partition.kind == "file":
            yield from self._table_batches(files_table([partition.value]))
        elif partition.kind == "messages":
            yield from self._table_batches(messages_table(open_capture(o), partition.value))
        elif partition.kind == "attachments":
            yield from self._table_batches(open_capture(o).attachments_table())
        elif partition.kind == "variables":
            yield from self._table_batches(open_capture(o).variables_table())
