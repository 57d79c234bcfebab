"""``spark.readStream.format("cmi")``: the thin stream reader over ``engine/stream.py``, which holds
the offsets, the micro-batches and their parts (docs/streaming.md)."""
from __future__ import annotations

from typing import Iterator, List

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadLimit, ReadMaxBytes, ReadMaxFiles,
                                              SupportsTriggerAvailableNow)
from pyspark.sql.types import StructType

from ..engine.options import ReadOptions
from ..engine.stream import FolderStream, Limit, stream_options, stream_schema
from ..errors import CmiOptionError
from .reporting import reported


class CmiStreamPartition(InputPartition):
    """One partition of a micro-batch: ``value`` is its engine/stream.BatchPart."""


def check_stream_schema(options: ReadOptions, schema: StructType) -> None:
    """The schema Spark hands the stream (the user's, or the one ``CmiDataSource.schema`` gave)
    must be the one the data set's first attachment gives, when one has landed."""
    from .source import spark_schema
    own = stream_schema(options)
    if own is None:
        return  # nothing landed yet: the user's schema stands, checked against each attachment read
    expected = spark_schema(own)
    if [(f.name, f.dataType) for f in schema.fields] != [(f.name, f.dataType) for f in expected.fields]:
        raise CmiOptionError(f"the schema given does not match the data set's first attachment: it gives "
                             f"{expected.simpleString()}, the one given is {schema.simpleString()}; drop .schema(...) "
                             f"or give that one")


class CmiStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: ReadOptions, schema: StructType):
        self.options = stream_options(options)
        self.stream = FolderStream(self.options, to_arrow_schema(schema, timezone="UTC"))

    @reported
    def initialOffset(self) -> dict:
        return self.stream.initial_offset()

    def getDefaultReadLimit(self) -> ReadLimit:
        o = self.options
        if o.max_files_per_trigger is not None:
            return ReadMaxFiles(o.max_files_per_trigger)
        if o.max_bytes_per_trigger is not None:
            return ReadMaxBytes(o.max_bytes_per_trigger)
        return ReadAllAvailable()

    @reported
    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        chosen: Limit = None
        if isinstance(limit, ReadMaxFiles):
            chosen = ("files", limit.max_files)
        elif isinstance(limit, ReadMaxBytes):
            chosen = ("bytes", limit.max_bytes)
        return self.stream.latest_offset(start, chosen)

    @reported
    def prepareForTriggerAvailableNow(self) -> None:
        self.stream.prepare_available_now()

    @reported
    def partitions(self, start: dict, end: dict) -> List[CmiStreamPartition]:
        return [CmiStreamPartition(part) for part in self.stream.partitions(start, end)]

    @reported
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from self.stream.read(partition.value)
