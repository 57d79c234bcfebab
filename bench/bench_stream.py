"""Issue 29: a folder of captures read as a stream (docs/streaming.md) against a batch read of the
same files: throughput, and the latency from a file landing to its rows in the sink.

    .venv/bin/python bench/bench_stream.py [--stream-files 40] [--stream-file-rows 25000]
        [--latency-samples 20] [--max-files-per-trigger 1 10] [--trigger-ms 100] [--repeat 3]

The files: dmpmqmsg dumps of the benchmark's rows (bench/dataset.py, data set BENCH.ROWS), written
by the project's writer, each with an attachment key of its own and its rows numbered on from the
previous file's, landed as a capture should land (written under a hidden name, then moved in).

  throughput  --stream-files dumps of --stream-file-rows rows in a folder:
              ``spark.readStream.format("cmi").option("dataset", ...).load(folder)`` into Spark's
              noop sink with ``trigger(availableNow=True)`` (a fresh checkpoint each run), without a
              read limit and with each --max-files-per-trigger, against
              ``spark.read.format("cmi")...load(folder)`` into noop. Each timed from the ``load``
              call to the end of the query or job, best of --repeat after a warm-up.
  latency     a query running on a folder (processingTime trigger of --trigger-ms, a foreachBatch
              sink noting ``time.time()`` once the micro-batch's rows are in the driver): a dump
              lands, and the wall time to its rows in the sink is taken, --latency-samples times
              (one file at a time). Baseline: a batch read of that same file in the same session
              doing what the sink does (its first ID and row count to the driver), warm.

``bench.py --sections stream`` runs both as its section 9 (results in bench/results.md); this
script runs it alone and prints the section's tables (``make bench-stream``).
"""
from __future__ import annotations

import argparse
import datetime as dt
import itertools
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_CONF_DIR", os.path.join(ROOT, "conf"))

from bench.common import TARGETS_HEADER, Outcome, Target, best_of, table  # noqa: E402
from bench.dataset import batches, write_capture  # noqa: E402
from cmi_datasource.engine.write import WriteOptions  # noqa: E402

DATASET = "BENCH.ROWS"  # what bench/dataset.write_capture writes
PAUSE_S = 0.5  # between a file's rows reaching the sink and the next file landing
WAIT_S = 300  # the longest a landed file's rows may take to reach the sink before the run fails


@dataclass
class StreamSettings:
    files: int  # dumps in the throughput folder
    file_rows: int  # rows of each dump (throughput and latency)
    latency_samples: int  # dumps landed one at a time on the running query
    max_files_per_trigger: Tuple[int, ...]  # the read limits of the throughput's extra stream runs
    trigger_ms: int  # the running query's processingTime trigger


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The stream measures' flags, shared by bench.py and this script."""
    parser.add_argument("--stream-files", type=int, default=40, help="dumps in the stream throughput folder")
    parser.add_argument("--stream-file-rows", type=int, default=25_000, help="rows of each dump a stream reads")
    parser.add_argument("--latency-samples", type=int, default=20, help="dumps landed on the running query")
    parser.add_argument("--max-files-per-trigger", type=int, nargs="*", default=[1, 10],
                        help="read limits of extra stream throughput runs (none: only the unlimited one)")
    parser.add_argument("--trigger-ms", type=int, default=100, help="the running query's processingTime trigger")


def settings_of(args: argparse.Namespace) -> StreamSettings:
    return StreamSettings(args.stream_files, args.stream_file_rows, args.latency_samples,
                          tuple(args.max_files_per_trigger), args.trigger_ms)


# -- the files -------------------------------------------------------------------------------------

def numbered(rows: Iterable[pa.RecordBatch], first: int) -> Iterator[pa.RecordBatch]:
    """The benchmark's rows with IDs from ``first``: each file's rows are told apart in the sink."""
    for b in rows:
        ids = pc.add(b.column(0), pa.scalar(float(first)))
        yield pa.RecordBatch.from_arrays([ids, *b.columns[1:]], schema=b.schema)


class Landing:
    """Dumps of ``rows`` rows landing in ``folder``, numbered 0, 1, ... in the order they land:
    dump ``i`` holds the rows numbered from ``i * rows`` in an attachment of its own key."""

    def __init__(self, folder: str, rows: int):
        self.folder = folder
        self.rows = rows
        self._rows = list(batches(rows))
        self._count = itertools.count()
        os.makedirs(folder, exist_ok=True)

    def land(self) -> Tuple[int, str, float]:
        """The next dump, written under a hidden name (never listed) and moved in whole: its
        number, its path and the ``time.time()`` of the move. A later dump is written later, so
        its modification time follows (the order a stream takes files in)."""
        i = next(self._count)
        hidden = os.path.join(self.folder, f".dump-{i:05d}.part")
        write_capture(hidden, self.rows, options=WriteOptions(deterministic_seed=f"stream-{i}"),
                      rows=numbered(self._rows, i * self.rows))
        path = os.path.join(self.folder, f"dump-{i:05d}.dmp")
        landed = time.time()
        os.replace(hidden, path)
        return i, path, landed


# -- throughput ------------------------------------------------------------------------------------

def batch_read(spark, path: str) -> None:
    """The baseline: a batch read of the data set from ``path`` (a folder or a file) into noop."""
    spark.read.format("cmi").option("dataset", DATASET).load(path).write.format("noop").mode("overwrite").save()


def stream_read(spark, folder: str, checkpoint: str, max_files: Optional[int]) -> List[dict]:
    """A stream of ``folder`` into noop with ``trigger(availableNow=True)``, to its end: the
    progress of its micro-batches that read rows."""
    reader = spark.readStream.format("cmi").option("dataset", DATASET)
    if max_files is not None:
        reader = reader.option("maxFilesPerTrigger", max_files)
    query = (reader.load(folder).writeStream.format("noop").option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination()
    return [p for p in query.recentProgress if p["numInputRows"] > 0]


def trigger_started(progress: dict) -> float:
    """When a micro-batch's trigger started, as ``time.time()`` (Spark gives it to the millisecond)."""
    return dt.datetime.fromisoformat(progress["timestamp"].replace("Z", "+00:00")).timestamp()


@dataclass
class Throughput:
    max_files: Optional[int]  # the stream's read limit; None: no limit, or the batch read
    seconds: float
    micro_batches: Optional[int] = None  # None: the batch read
    start_s: Optional[float] = None  # the stream's load() call -> its first micro-batch's trigger


def throughput(spark, directory: str, settings: StreamSettings, repeat: int) -> List[Throughput]:
    """The batch read of the folder, then the stream without a limit and with each read limit."""
    folder = os.path.join(directory, "throughput")
    landing = Landing(folder, settings.file_rows)
    for _ in range(settings.files):
        landing.land()
    os.sync()  # no timed run pays for writing the files back
    expected = settings.files * settings.file_rows
    checkpoints = itertools.count()

    def stream(max_files: Optional[int]) -> Throughput:
        checkpoint = os.path.join(directory, f"checkpoint-{next(checkpoints)}")  # a new query each run
        called = time.time()
        t0 = time.perf_counter()
        progress = stream_read(spark, folder, checkpoint, max_files)
        seconds = time.perf_counter() - t0
        rows = sum(p["numInputRows"] for p in progress)
        if rows != expected:  # a stream that loses or repeats rows is not measured
            raise RuntimeError(f"the stream (maxFilesPerTrigger {max_files}) read {rows:,} rows, not {expected:,}")
        return Throughput(max_files, seconds, len(progress), trigger_started(progress[0]) - called)

    rows = spark.read.format("cmi").option("dataset", DATASET).load(folder).count()
    if rows != expected:  # the baseline reads every row too (the dumps' keys differ: none is a duplicate)
        raise RuntimeError(f"the batch read of the folder has {rows:,} rows, not {expected:,}")
    measured = [Throughput(None, best_of(lambda: batch_read(spark, folder), repeat))]
    for max_files in (None, *settings.max_files_per_trigger):
        stream(max_files)  # the warm-up, as best_of's
        measured.append(min((stream(max_files) for _ in range(repeat)), key=lambda t: t.seconds))
    return measured


# -- latency ---------------------------------------------------------------------------------------

def first_id_and_rows(df) -> Tuple[Optional[float], int]:
    """What the latency's sink does with a micro-batch, and its baseline with a batch read: the
    rows' first ID and their number, to the driver."""
    from pyspark.sql import functions as F
    first, rows = df.agg(F.min("ID"), F.count(F.lit(1))).first()
    return first, rows


@dataclass
class Sample:
    path: str
    landed: float  # time.time() of the move into the folder
    latency_s: float  # the file moved in -> its rows in the driver
    batch_id: int
    progress: Optional[dict] = None  # Spark's progress of that micro-batch (None: not posted in time)


@dataclass
class Latency:
    samples: List[Sample]
    batch_read_s: List[float]  # a warm batch read of each sample's file, in the same order


def wait_for(arrived: Dict[float, Tuple[float, int, int]], first_id: float, query) -> Tuple[float, int, int]:
    deadline = time.monotonic() + WAIT_S
    while first_id not in arrived:
        if not query.isActive:
            raise RuntimeError(f"the stream stopped before rows from ID {first_id:.0f} arrived: {query.exception()}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"rows from ID {first_id:.0f} did not reach the sink within {WAIT_S} s")
        time.sleep(0.02)
    return arrived[first_id]


def posted(query, batch_ids: Sequence[int]) -> Dict[int, dict]:
    """Spark's progress of the query's micro-batches, once it holds those of ``batch_ids`` (a
    micro-batch's progress is posted after its sink returns)."""
    deadline = time.monotonic() + 30
    while True:
        progress = {p["batchId"]: p for p in query.recentProgress}
        if all(b in progress for b in batch_ids) or time.monotonic() > deadline:
            return progress
        time.sleep(0.1)


def latency(spark, directory: str, settings: StreamSettings) -> Latency:
    """Dumps landing one at a time in a folder a running query reads; then a batch read of each."""
    landing = Landing(os.path.join(directory, "latency"), settings.file_rows)
    arrived: Dict[float, Tuple[float, int, int]] = {}  # first ID -> (time.time(), micro-batch id, rows)

    def sink(df, batch_id: int) -> None:
        first, rows = first_id_and_rows(df)
        seen = time.time()
        if rows and first is not None:
            arrived[first] = (seen, batch_id, rows)

    landing.land()  # the first dump gives the stream its schema, and its micro-batch warms the workers
    query = (spark.readStream.format("cmi").option("dataset", DATASET).load(landing.folder).writeStream
             .foreachBatch(sink).option("checkpointLocation", os.path.join(directory, "latency-checkpoint"))
             .trigger(processingTime=f"{settings.trigger_ms} milliseconds").start())
    try:
        wait_for(arrived, 0.0, query)
        samples: List[Sample] = []
        for _ in range(settings.latency_samples):
            time.sleep(PAUSE_S)
            i, path, at = landing.land()
            seen, batch_id, rows = wait_for(arrived, float(i * settings.file_rows), query)
            if rows != settings.file_rows:
                raise RuntimeError(f"the micro-batch of dump {i} had {rows:,} rows, not {settings.file_rows:,}")
            samples.append(Sample(path, at, seen - at, batch_id))
        progress = posted(query, [s.batch_id for s in samples])
    finally:
        query.stop()
    for s in samples:
        s.progress = progress.get(s.batch_id)

    def read_file(path: str) -> None:
        first_id_and_rows(spark.read.format("cmi").option("dataset", DATASET).load(path))

    return Latency(samples, [best_of(lambda p=s.path: read_file(p), 1) for s in samples])


# -- the section -----------------------------------------------------------------------------------

def spread(values: Sequence[float]) -> List[str]:
    """Median, min and max, as table cells."""
    return [f"{statistics.median(values):.3f}", f"{min(values):.3f}", f"{max(values):.3f}"] if values else ["—"] * 3


def stream_section(spark, settings: StreamSettings, repeat: int, scratch: Callable[[], tempfile.TemporaryDirectory]
                   ) -> Outcome:
    """9. Stream against batch: throughput (availableNow) and micro-batch latency, in ``scratch()``."""
    k, n = settings.files, settings.file_rows
    # Spark keeps the progress of 100 micro-batches by default: the rows are counted from all of them.
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", str(max(100, 2 * k, 2 * settings.latency_samples)))
    with scratch() as tmp:
        measured = throughput(spark, tmp, settings, repeat)
    with scratch() as tmp:
        lat = latency(spark, tmp, settings)
    batch, unlimited = measured[0], measured[1]
    total = k * n
    rows = [["batch read", "—", "—", "—", f"{batch.seconds:.2f}", f"{total / batch.seconds:,.0f}", "1.00"]]
    rows += [["stream, availableNow", "none" if t.max_files is None else str(t.max_files), str(t.micro_batches),
              f"{t.start_s:.2f}", f"{t.seconds:.2f}", f"{total / t.seconds:,.0f}", f"{t.seconds / batch.seconds:.2f}"]
             for t in measured[1:]]
    latencies = [s.latency_s for s in lat.samples]
    median_latency, median_read = statistics.median(latencies), statistics.median(lat.batch_read_s)
    posted = [s for s in lat.samples if s.progress is not None]

    def duration_s(name: str) -> List[float]:
        return [s.progress["durationMs"].get(name, 0) / 1000 for s in posted if s.progress is not None]

    trigger = f"processingTime {settings.trigger_ms} ms"
    targets = [
        Target(f"9. stream throughput, {k} dumps of {n:,} rows, availableNow", None, "stream s / batch s",
               f"stream {total / unlimited.seconds:,.0f} rows/s ({unlimited.micro_batches} micro-batches, "
               f"{unlimited.start_s:.2f} s to the first), batch {total / batch.seconds:,.0f} rows/s",
               unlimited.seconds / batch.seconds),
        Target(f"9. micro-batch latency, a dump of {n:,} rows landed -> its rows in the sink ({trigger})", None,
               "median latency / batch read of the dump",
               f"median {median_latency:.2f} s (min {min(latencies):.2f}, max {max(latencies):.2f}; "
               f"{len(latencies)} dumps), batch read {median_read:.2f} s", median_latency / median_read),
    ]
    details = table(
        f"9. Stream throughput ({k} dumps of {n:,} rows, {total:,} rows)",
        ["read", "maxFilesPerTrigger", "micro-batches", "s to the first micro-batch", "s", "rows/s",
         "time / batch"], rows,
        "A folder of dmpmqmsg dumps, each an attachment of its own of data set BENCH.ROWS, read by "
        "`spark.readStream.format(\"cmi\").option(\"dataset\", \"BENCH.ROWS\").load(folder)` into the noop sink "
        "with `trigger(availableNow=True)` and a new checkpoint each run, against `spark.read` of the same folder "
        "into noop; each timed from `load` to the end of the query or job, best of the runs. Every run of the "
        "stream is checked to read every row once (its progress). To the first micro-batch: from `load` to the "
        "start of the query's first trigger (Spark's progress): the query's start, which includes a new Python "
        "process of Spark's for the source's offsets.")
    details += table(
        f"9. Micro-batch latency ({len(latencies)} dumps of {n:,} rows landed one at a time, {trigger})",
        ["", "median s", "min s", "max s"],
        [["dump landed -> its rows in the sink", *spread(latencies)],
         ["batch read of the same dump", *spread(lat.batch_read_s)],
         ["dump landed -> its micro-batch's trigger started",
          *spread([trigger_started(s.progress) - s.landed for s in posted if s.progress is not None])],
         ["its micro-batch: triggerExecution", *spread(duration_s("triggerExecution"))],
         ["its micro-batch: latestOffset", *spread(duration_s("latestOffset"))],
         ["its micro-batch: addBatch (the sink's job)", *spread(duration_s("addBatch"))]],
        "A query runs on a folder (`foreachBatch` sink: each micro-batch's first ID and row count collected to the "
        "driver, then `time.time()` noted). Each dump is written under a hidden name and moved in (`os.replace`), "
        f"{PAUSE_S:g} s after the previous dump's rows arrived; latency: from the move to the sink's note. Baseline: "
        "`spark.read` of the same dump doing what the sink does, after the query stopped, warm (one run after a "
        "warm-up). The last four rows are Spark's progress of the micro-batch that read the dump (trigger start to "
        f"the millisecond, `durationMs`; {len(posted)} of {len(lat.samples)} posted): the latency is the wait for "
        "that trigger and about its triggerExecution (the sink notes before the micro-batch commits).")
    return Outcome(targets, details)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    parser.add_argument("--repeat", type=int, default=3, help="timed throughput runs after a warm-up; the best counts")
    args = parser.parse_args()
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.appName("cmi-bench-stream").getOrCreate()
    print(f"{dt.datetime.now():%Y-%m-%d %H:%M}; machine: {os.cpu_count()} cores; Spark {spark.version}; "
          f"master {spark.sparkContext.master}", flush=True)
    with tempfile.TemporaryDirectory(prefix="cmi-bench-stream-") as tmp:
        outcome = stream_section(spark, settings_of(args), args.repeat,
                                 lambda: tempfile.TemporaryDirectory(prefix="stream-", dir=tmp))
    spark.stop()
    print("\n".join(TARGETS_HEADER + [t.line() for t in outcome.targets] + outcome.details))


if __name__ == "__main__":
    main()
