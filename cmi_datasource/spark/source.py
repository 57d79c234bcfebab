"""``spark.read.format("cmi")`` and ``df.write.format("cmi")``: the thin Spark classes over the
engine. ``help(CmiDataSource)`` shows how to read and write, with every option (the options
table of ``engine/options.py`` generates that part, as it does ``docs/options.md``)."""
from __future__ import annotations

import gc
from typing import TYPE_CHECKING, Iterator, List

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from ..engine.memo import collector_paused

# Every Spark worker that runs the source imports the engine here: about 20,000 objects beside
# pyspark's, none of them garbage, which the cycle collector's passes traversed again and again
# (about 50 ms of each fresh worker's 0.2 s of imports).
with collector_paused():
    from ..engine import planned, reading
    from ..engine.load import Load
    from ..engine.options import ReadOptions
    from ..engine.selection import DatasetChoiceError
    from ..errors import CmiError, CmiOptionError
    from ..storage import PathNotFoundError
    from .reporting import reported
    from .schema import same_columns, spark_schema

if TYPE_CHECKING:
    from .stream import CmiStreamReader
    from .stream_writer import CmiStreamWriter
    from .writer import CmiWriter

_WORKER_SETTLED = False


def _settle_worker() -> None:
    """Once per Python worker, after its first partition (or plan): move the objects alive then
    (modules, numba's compiled kernels and type system, a planner's cached capture: 100,000 to
    200,000) to the garbage collector's permanent generation. PySpark's daemon runs a full
    gc.collect() after every task, which scanned them all: about 50 ms each time, with nothing
    to free. Reference counting still frees them (captures hold no reference cycles). No
    collection first: it found nothing to free after a 1M-row partition (75,000 objects) and took
    24 ms inside the task, where the first job waits for it."""
    global _WORKER_SETTLED
    if not _WORKER_SETTLED:
        gc.freeze()
        _WORKER_SETTLED = True




_DOC_READING = """SAS datasets and files in captured CMI message-queue traffic (IBM MQ dmpmqmsg dumps and
binary MQGET captures, and every other transport of ``cmi_datasource.transports``).

Reading (runnable in a notebook after ``pip install cmi-datasource``)::

    df = spark.read.format("cmi").load("sample_queues/mixed_types.dmp")
    df.show()
    spark.read.format("cmi").option("view", "attachments").load("sample_queues/").show()
    spark.read.format("cmi").option("dataset", "prod.ledger").load("sample_queues/").show()
    spark.read.format("cmi").option("mode", "PERMISSIVE").load(path) \\
        .where("_corrupt_record is not null").show(truncate=False)

``load()`` takes a capture file, a directory, a glob, or a list of them; attachments may span
files of one load. Read options (names are case-insensitive; also in docs/options.md):

"""
_DOC_WRITING = """

Any other option is an error that lists the valid ones and suggests the closest. A failure
raises a Spark exception whose text starts with the ``cmi_datasource.errors`` class and problem;
``cmi_datasource.errors.unwrap(exc)`` gives the typed error back.

Writing::

    df.write.format("cmi").mode("append").option("dataset", "WORK.CUSTOMERS").save("/data/outbound")
    df.write.format("cmi").mode("append").option("transport", "tibrv").save("/data/outbound-rv")

``mode`` must be ``append`` or ``overwrite``. A stream writes each micro-batch as one capture,
exactly once per batch id with a checkpoint (docs/writing.md)::

    df.writeStream.format("cmi").option("dataset", "WORK.EVENTS") \\
        .option("checkpointLocation", "/chk/events").start("/data/outbound")

Write options (a stream's too):

"""


class _GeneratedDoc:
    """CmiDataSource's docstring: the text above with the lists of options the options table
    generates. Made when first asked for (help(), pydoc), not at import: it imports every
    transport, which a Spark worker that reads one format should not pay for."""

    def __get__(self, instance, owner) -> str:
        from ..engine.options import READ, WRITE, docstring_list
        return _DOC_READING + docstring_list(READ) + _DOC_WRITING + docstring_list(WRITE) + "\n"


class CmiDataSource(DataSource):
    __doc__ = _GeneratedDoc()

    @classmethod
    def name(cls) -> str:
        return "cmi"

    @property
    def read_options(self) -> ReadOptions:
        """The options of a batch read, which refuses a stream's own (mqtt.broker, ...)."""
        return ReadOptions.parse(dict(self.options))

    @reported
    def schema(self) -> StructType:
        # Spark asks a batch read and a stream alike: a stream's own options are refused by reader().
        options = ReadOptions.parse(dict(self.options), streaming=True)
        try:
            return spark_schema(planned.schema(Load(options)))
        except CmiError as e:
            # Spark asks a batch read and a stream (spark.readStream) alike. A stream takes its
            # schema from the data set's first attachment, complete or not (or the view's own),
            # where the batch read of the whole folder may fail (a capture rotated mid-attachment,
            # attachments with other variables since, an empty folder): that schema, then; a batch
            # read raises e again in reader().
            from ..engine.stream import stream_schema  # a stream's (reading workers need none of it)
            found = stream_schema(options) if options.view != "dataset" or options.dataset else None
            if found is None:
                raise _said_for_streams(e, options) from None
            return spark_schema(found)

    @reported
    def reader(self, schema: StructType) -> "CmiReader":
        options = self.read_options
        own = spark_schema(planned.schema(Load(options)))
        if not same_columns(schema, own):
            # Batches are built by the capture's layout; another schema cannot be honoured.
            raise CmiOptionError(f"the schema comes from the capture; drop .schema(...) (the capture's is "
                                 f"{own.simpleString()}, the one given {schema.simpleString()})")
        return CmiReader(options, schema)

    @reported
    def streamReader(self, schema: StructType) -> "CmiStreamReader":
        from .stream import CmiStreamReader, check_stream_schema
        options = ReadOptions.parse(dict(self.options), streaming=True)
        reader = CmiStreamReader(options, schema)  # a live broker's spool folder exists from here
        check_stream_schema(options, schema)
        return reader

    @reported
    def writer(self, schema: StructType, overwrite: bool) -> "CmiWriter":
        # Imported here, as the stream's classes are: a reading worker needs none of the writer's.
        from ..engine.options import SaveOptions
        from .writer import CmiWriter
        return CmiWriter(SaveOptions.parse(dict(self.options)), schema, overwrite)

    @reported
    def streamWriter(self, schema: StructType, overwrite: bool) -> "CmiStreamWriter":
        from .stream_writer import CmiStreamWriter, stream_save_options
        return CmiStreamWriter(stream_save_options(dict(self.options)), schema, overwrite)


_STREAM_SCHEMA = ("a stream (spark.readStream) takes its schema from the data set's first attachment: give it "
                  "with .schema(...), or start the query once a capture holding one has landed")


def _said_for_streams(error: CmiError, options: ReadOptions) -> CmiError:
    """``error`` of a read that finds no capture or no such data set, saying what a stream needs
    too (the same error for a batch read: Spark asks both for the schema alike)."""
    if not options.dataset:
        return error
    if isinstance(error, PathNotFoundError):
        return PathNotFoundError(error.problem, f"{error.hint}; {_STREAM_SCHEMA}")
    if isinstance(error, DatasetChoiceError) and not error.problem.startswith("several"):
        return DatasetChoiceError(f"{error.problem} ({_STREAM_SCHEMA})", error.advice, error.candidates)
    return error


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
