"""``spark.readStream.format("cmi")``: the thin stream reader over ``engine/stream.py``, which holds
the offsets, the micro-batches and their parts (docs/streaming.md)."""
from __future__ import annotations

import os
from typing import Dict, Iterator, List, Optional

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadLimit, ReadMaxBytes, ReadMaxFiles,
                                              SupportsTriggerAvailableNow)
from pyspark.sql.types import StructType

from ..engine.options import ReadOptions
from ..engine.stream import FolderStream, Limit, stream_options, stream_schema
from ..errors import CmiOptionError
from ..option_table import named
from ..transports.mqtt.spool import SPOOL_OPTIONS, Spooler, SpoolSettings
from .reporting import reported
from .schema import same_columns, spark_schema


class CmiStreamPartition(InputPartition):
    """One partition of a micro-batch: ``value`` is its engine/stream.BatchPart."""


def check_stream_schema(options: ReadOptions, schema: StructType) -> None:
    """The schema Spark hands the stream (the user's, or the one ``CmiDataSource.schema`` gave)
    must be the one the data set's first attachment gives, when one has landed."""
    own = stream_schema(options)
    if own is None:
        return  # nothing landed yet: the user's schema stands, checked against each attachment read
    expected = spark_schema(own)
    if not same_columns(schema, expected):
        raise CmiOptionError(f"the schema given does not match the data set's first attachment: it gives "
                             f"{expected.simpleString()}, the one given is {schema.simpleString()}; drop .schema(...) "
                             f"or give that one")


# The spoolers of the live-broker streams this process runs (option mqtt.broker), by spool folder.
# Spark makes a stream's reader in more than one process; one of them, its stream runner, lives as
# long as the query and asks for the offsets: the spooler starts there, at the first offset asked,
# and stops with the query (stop()). It never travels with the pickled reader to the tasks.
_SPOOLERS: Dict[str, Spooler] = {}


def spool_settings(options: ReadOptions) -> Optional[SpoolSettings]:
    """The spooler a stream runs when it names a live broker: into the folder the stream reads."""
    given = {key: value for key, value in options.transport_options if named(SPOOL_OPTIONS, key) is not None}
    if "mqtt.broker" not in given:
        return None
    if len(options.paths) != 1:
        raise CmiOptionError("a stream of a live broker reads one spool folder: load('<spool folder>')")
    folder = given.setdefault("mqtt.spool", options.paths[0])
    if os.path.abspath(folder) != os.path.abspath(options.paths[0]):
        raise CmiOptionError(f"option mqtt.spool ({folder}) is not the folder the stream reads "
                             f"({options.paths[0]}): leave it out, load() names the spool folder")
    return SpoolSettings.from_options(given)


class CmiStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: ReadOptions, schema: StructType):
        self.options = stream_options(options)
        self.spool_settings = spool_settings(self.options)
        if self.spool_settings is not None:
            os.makedirs(self.spool_settings.folder, exist_ok=True)  # a stream of an empty folder, until it fills
        self.stream = FolderStream(self.options, to_arrow_schema(schema, timezone="UTC"))

    @property
    def spool(self) -> Optional[str]:
        return None if self.spool_settings is None else os.path.abspath(self.spool_settings.folder)

    def _spooling(self) -> None:
        """The live broker's spooler running in this process (the stream runner's)."""
        settings, folder = self.spool_settings, self.spool
        if settings is not None and folder is not None and folder not in _SPOOLERS:
            _SPOOLERS[folder] = Spooler(settings).start()

    def stop(self) -> None:
        spooler = _SPOOLERS.pop(self.spool, None) if self.spool else None
        if spooler is not None:
            spooler.stop()

    @reported
    def initialOffset(self) -> dict:
        self._spooling()
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
        self._spooling()
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
