"""The benchmark's rows and the files that hold them, shared by the benchmark scripts.

N observations of a mixed layout (8 numerics: one DATE, one DATETIME, one TIME, one of length 4;
4 character columns of 1-40 bytes with non-ASCII text; some missing values), generated batch by
batch from a fixed seed, so that every file of N rows holds the same rows whatever its format.
"""
from __future__ import annotations

import glob
import os
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from cmi_datasource.engine.write import WriteOptions, dataset_attachment, stream_messages
from cmi_datasource.transports import capture_format

BATCH = 250_000
WORDS = np.array(["Zürich", "São Paulo", "Kraków", "Ærøskøbing", "Łódź", "Reykjavík", "Malmö", "Ōsaka",
                  "New York", "", "Ål", "Île-de-France"])
BENCH_OPTIONS = WriteOptions(deterministic_seed="bench")


def field(name, arrow_type, fmt=None, sas_length=None):
    meta = {"label": f"{name.title()} column"}
    if fmt:
        meta["format"] = fmt
    if sas_length:
        meta["sas_length"] = str(sas_length)
    return pa.field(name, arrow_type, metadata=meta)


SCHEMA = pa.schema([
    field("ID", pa.float64(), "10."), field("AMOUNT", pa.float64(), "COMMA12.2"), field("RATE", pa.float64()),
    field("QTY", pa.float64(), "5.", sas_length=4), field("SCORE", pa.float64()),
    field("DAY", pa.date32(), "DATE9."), field("STAMP", pa.timestamp("us"), "DATETIME20."),
    field("CUTOFF", pa.time64("us"), "TIME8."),
    field("FLAG", pa.string(), sas_length=1), field("CODE", pa.string(), sas_length=10),
    field("CITY", pa.string(), sas_length=20), field("NOTE", pa.string(), sas_length=40),
])


def batches(n: int):
    """The benchmark rows, generated batch by batch (seeded, so every format holds the same rows)."""
    rng = np.random.default_rng(2026)
    for start in range(0, n, BATCH):
        m = min(BATCH, n - start)
        amount = np.round(rng.normal(1000, 250, m), 2)
        missing = rng.random(m) < 0.05
        city = WORDS[rng.integers(0, len(WORDS), m)]
        note = np.char.add(np.char.add("order ", (start + np.arange(m)).astype(str)), " über Straße")
        yield pa.RecordBatch.from_arrays([
            pa.array(np.arange(start, start + m, dtype=np.float64)),
            pa.array(amount, mask=missing),
            pa.array(rng.random(m)),
            pa.array(rng.integers(0, 1000, m).astype(np.float64)),
            pa.array(rng.random(m) * 100, mask=rng.random(m) < 0.02),
            pa.array(np.datetime64("2000-01-01") + rng.integers(0, 9000, m).astype("timedelta64[D]")),
            pa.array(np.datetime64("2000-01-01T00:00:00") + rng.integers(0, 10 ** 9, m).astype("timedelta64[s]")
                     ).cast(pa.timestamp("us")),
            pa.array(rng.integers(0, 86400, m) * 1_000_000, pa.int64()).cast(pa.time64("us")),
            pa.array(np.where(rng.random(m) < 0.5, "Y", "N")),
            pa.array(np.char.add("C", rng.integers(0, 10 ** 6, m).astype(str))),
            pa.array(city, mask=city == ""),
            pa.array(note),
        ], schema=SCHEMA)


def write_capture(path: str, n: int, fmt: str = "dmpmqmsg", options: WriteOptions = BENCH_OPTIONS,
                  rows=None, library: str = "BENCH", member: str = "ROWS") -> str:
    """``path``: a capture in format ``fmt`` holding one data set attachment of the benchmark's ``n``
    rows (or ``rows``, batches holding ``n`` rows), written as the rows are generated: memory stays
    that of one batch, whatever ``n``."""
    attachment = dataset_attachment(SCHEMA, {}, n, batches(n) if rows is None else rows, library, member, options)
    with open(path, "wb") as out:
        capture_format(fmt).write(out, stream_messages([attachment], options))
    return path


def write_floor_files(n: int, directory: str, files: int) -> None:
    """The floor source's input: the rows as Arrow IPC files (one partition each), pre-built in
    exactly the Arrow schema Spark expects (time64[ns]...)."""
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
    spark_arrow = to_arrow_schema(from_arrow_schema(pa.schema([f.remove_metadata() for f in SCHEMA])),
                                  timezone="UTC")
    os.makedirs(directory)
    per_file = -(-n // files)
    sinks = []
    for b in batches(n):
        for at in range(0, b.num_rows, per_file):
            piece = pa.RecordBatch.from_arrays([c.cast(t.type) for c, t in zip(b.slice(at, per_file).columns,
                                                                              spark_arrow)], schema=spark_arrow)
            row = int(piece.column(0)[0].as_py())
            k = row // per_file
            while len(sinks) <= k:
                sinks.append(ipc.new_file(os.path.join(directory, f"part-{len(sinks)}.arrow"), spark_arrow))
            sinks[k].write_batch(piece)
    for s in sinks:
        s.close()


def floor_source():
    """A trivial Python data source (format ``bench_arrow_floor``) yielding the pre-built Arrow
    batches of ``write_floor_files``: what any Python source costs Spark at the least. Written
    to, each task writes the batches Spark hands it to an Arrow IPC file of its own and the
    commit does nothing: what any Python sink costs at the least (cmi's tasks spill so too)."""
    from pyspark.sql.datasource import (DataSource, DataSourceArrowWriter, DataSourceReader, InputPartition,
                                        WriterCommitMessage)
    from pyspark.sql.pandas.types import from_arrow_schema

    class ArrowFilesReader(DataSourceReader):
        def __init__(self, directory):
            self.directory = directory

        def partitions(self):
            return [InputPartition(p) for p in sorted(glob.glob(os.path.join(self.directory, "*.arrow")))]

        def read(self, partition):
            with pa.memory_map(partition.value) as source:
                reader = ipc.open_file(source)
                for i in range(reader.num_record_batches):
                    yield reader.get_batch(i)

    class ArrowFilesWriter(DataSourceArrowWriter):
        def __init__(self, directory):
            self.directory = directory

        def write(self, iterator):
            from pyspark import TaskContext
            os.makedirs(self.directory, exist_ok=True)
            path = os.path.join(self.directory, f"part-{TaskContext.get().partitionId()}.arrow")
            sink = None
            for batch in iterator:
                if sink is None:
                    sink = ipc.new_file(path, batch.schema)
                sink.write_batch(batch)
            if sink is not None:
                sink.close()
            return WriterCommitMessage()

    class ArrowFilesSource(DataSource):
        @classmethod
        def name(cls):
            return "bench_arrow_floor"

        def schema(self):
            return from_arrow_schema(pa.schema([f.remove_metadata() for f in SCHEMA]))

        def reader(self, schema):
            return ArrowFilesReader(self.options["path"])

        def writer(self, schema, overwrite):
            return ArrowFilesWriter(self.options["path"])

    return ArrowFilesSource


class BenchFiles:
    """The benchmark's ``n`` rows in each form the benchmarks read, under ``directory``. Each file
    is written on first use and flushed to disk (``os.sync``), so that no timed run pays for it."""

    def __init__(self, n: int, directory: str):
        self.n = n
        self.directory = directory
        self._floor_files = {}
        os.makedirs(directory, exist_ok=True)

    def _path(self, name: str) -> str:
        return os.path.join(self.directory, name)

    @cached_property
    def dump(self) -> str:
        """A dmpmqmsg dump written by the project's own writer."""
        path = write_capture(self._path("bench.dmp"), self.n)
        os.sync()
        return path

    @cached_property
    def parquet(self) -> str:
        """A directory holding the rows as one Parquet file."""
        directory = self._path("parquet")
        os.makedirs(directory)
        with pq.ParquetWriter(os.path.join(directory, "part-0.parquet"), SCHEMA) as writer:
            for b in batches(self.n):
                writer.write_batch(b)
        os.sync()
        return directory

    @cached_property
    def xport(self) -> str:
        """A SAS XPORT file, what pandas.read_sas reads."""
        import pyreadstat
        path = self._path("bench.xpt")
        table = pa.Table.from_batches(list(batches(self.n)), SCHEMA)
        frame = table.to_pandas()
        # XPORT holds SAS numbers: the temporal columns as SAS days and seconds.
        frame["DAY"] = table.column("DAY").cast(pa.int32()).to_numpy().astype(np.float64) + 3653
        frame["STAMP"] = table.column("STAMP").cast(pa.int64()).to_numpy() / 1e6 + 3653 * 86400
        frame["CUTOFF"] = table.column("CUTOFF").cast(pa.int64()).to_numpy() / 1e6
        pyreadstat.write_xport(frame, path, table_name="ROWS", file_format_version=5)
        os.sync()
        return path

    def floor_files(self, partitions: int) -> str:
        """A directory of Arrow IPC files for the floor source, one per partition."""
        if partitions not in self._floor_files:
            directory = self._path(f"ipc-{partitions}")
            write_floor_files(self.n, directory, partitions)
            os.sync()
            self._floor_files[partitions] = directory
        return self._floor_files[partitions]

    @property
    def ipc(self) -> str:
        """The floor source's input, one file (one partition) per core."""
        return self.floor_files(os.cpu_count() or 1)
