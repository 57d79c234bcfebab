"""``spark.read.format("cmi")`` and ``df.write.format("cmi")``: SAS datasets and files in captured
CMI message-queue traffic (IBM MQ dmpmqmsg dumps and binary MQGET captures, and every other
transport of ``cmi_datasource.transports``).

Reading (runnable in a notebook after ``pip install cmi-datasource``)::

    df = spark.read.format("cmi").load("sample_queues/mixed_types.dmp")
    df.show()
    spark.read.format("cmi").option("view", "attachments").load("sample_queues/").show()
    spark.read.format("cmi").option("dataset", "prod.ledger").load("sample_queues/").show()

Read options (names are case-insensitive):

- ``path`` (via ``load()``): a capture file, a directory (read recursively), a glob, or a list
  of them. Attachments may span files of one load.
- ``format``: the capture format of every file (``dmpmqmsg``, ``amqsbcg``, ``mqget``, ``tibrv``,
  ``mqtt``, ``pcap``, ``sapdb``);
  by default each file's format is recognised from its first bytes (compressed files too).
- ``view``: ``dataset`` (default, the observations of one SAS dataset), ``attachments`` (one row
  per attachment), ``variables`` (one row per variable per dataset, like PROC CONTENTS),
  ``files`` (one row per external file), ``messages`` (one row per physical message), ``sapdb``
  (one row per part of every SAP DB / MaxDB SQL packet).
- ``dataset``: ``LIB.MEMBER`` (or ``MEMBER``), case-insensitive. ``attachment``: 32 hex digits.
  With neither: the only complete dataset; several complete datasets with identical variables
  are unioned; otherwise an error lists the candidates.
- ``mode``: ``FAILFAST`` (default: damage raises a typed error naming where), ``PERMISSIVE`` (the
  trusted rows plus a row of nulls per damaged stretch, whose ``columnNameOfCorruptRecord``
  column, default ``_corrupt_record``, says what was lost and where) or ``DROPMALFORMED`` (the
  trusted rows only)::

      spark.read.format("cmi").option("mode", "PERMISSIVE").load(path) \
          .where("_corrupt_record is not null").show(truncate=False)
- ``ccsid``: read characters in this CCSID whatever the messages say; ``defaultCcsid``: for
  messages whose CodedCharSetId is 0 (default 1208).
- ``temporalTypes``: ``true`` (default) gives date/timestamp_ntz/time columns for date, datetime
  and time formats; ``false`` keeps SAS numbers.
- ``batchRows`` (default 65536), ``maxPartitionBytes`` (default 128 MiB) and ``minPartitions``
  (default: the CPU count): batch and partition sizes; one large attachment is cut at
  observation boundaries into several partitions.
- ``sapdb.port``: with view ``sapdb``, the TCP ports of a pcap read as SAP DB (comma-separated).
- ``mqtt.port``: the TCP ports of MQTT brokers in a pcap (comma-separated; default 1883,8883).

Any other option is an error that lists the valid ones and suggests the closest. A failure
raises a Spark exception whose text starts with the ``cmi_datasource.errors`` class and problem;
``cmi_datasource.spark.errors.unwrap(exc)`` gives the typed error back.

Writing::

    df.write.format("cmi").mode("append").option("dataset", "WORK.CUSTOMERS").save("/data/outbound")

Write options: ``dataset`` (default ``WORK.DATA``), ``encoding`` (546, 273 or 785), ``ccsid``
(default 1208), ``longSize`` (4 or 8), ``maxMessageBytes`` (at most 32768), ``message``,
``description``, ``label``, ``truncate``, ``attachmentPerPartition``, ``deterministic``, ``kind``
(``dataset``, or ``text``/``binary`` for a DataFrame of ``name`` + ``text``/``content``),
``lrecl``, ``validVarName`` (``v7``, ``upcase`` or ``any``: which column names are SAS names),
``lossyNumbers`` (round decimals past 15 digits and longs past 2^53 instead of failing) and
``transport`` (``mq``, a dmpmqmsg dump; ``tibrv``, a TIB/Rendezvous capture; ``mqtt``, a raw
MQTT stream, or with ``mqtt.broker``, ``mqtt.topic``, ``mqtt.clientId``, ``mqtt.timeout`` a live
broker).
``mode`` must be ``append`` or ``overwrite``::

    df.write.format("cmi").mode("append").option("transport", "tibrv").save("/data/outbound-rv")
"""
from __future__ import annotations

import gc
from typing import Iterator, List

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructField, StructType

from ..engine import planned, reading
from ..engine.load import Load
from ..engine.options import ReadOptions, SaveOptions
from ..errors import CmiOptionError
from .reporting import reported
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

    @reported
    def schema(self) -> StructType:
        return spark_schema(planned.schema(Load(self.read_options)))

    @reported
    def reader(self, schema: StructType) -> "CmiReader":
        options = self.read_options
        own = spark_schema(planned.schema(Load(options)))
        if [(f.name, f.dataType) for f in schema.fields] != [(f.name, f.dataType) for f in own.fields]:
            # Batches are built by the capture's layout; another schema cannot be honoured.
            raise CmiOptionError(f"the schema comes from the capture; drop .schema(...) (the capture's is "
                                 f"{own.simpleString()}, the one given {schema.simpleString()})")
        return CmiReader(options, schema)

    @reported
    def writer(self, schema: StructType, overwrite: bool) -> CmiWriter:
        return CmiWriter(SaveOptions.parse(dict(self.options)), schema, overwrite)


class CmiPartition(InputPartition):
    """One partition of a view: ``value`` is the part the view planned for it (engine/plan.Part)."""


class CmiReader(DataSourceReader):
    def __init__(self, options: ReadOptions, schema: StructType):
        self.options = options
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")

    @reported
    def partitions(self) -> List[CmiPartition]:
        parts = [CmiPartition(part) for part in reading.plan(Load(self.options)).parts or ()]
        _settle_worker()  # a planning worker keeps the capture: 100,000 more objects
        return parts

    @reported
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        for batch in reading.read_part(Load(self.options), partition.value):
            # Spark compares the batch schema with its own exactly (types, order, nullability).
            yield pa.RecordBatch.from_arrays(batch.columns, schema=self.arrow_schema)
        _settle_worker()
