"""The sections of ``bench/bench.py``, one per target of issues 18 and 30 (issue 30 tightened
issue 18's limits and added the hex decode core), in issue 18's order, then the stream measures
of issue 29.

Each section is a function of the run (``Run``: the Spark session, the settings, the benchmark's
files of each size) returning an ``Outcome``: its rows of the Targets table and its own table.
A section cleans up its temporary files when it ends, failing or not; the benchmark files of each
size are shared by the sections and removed by bench.py at the end of the run.
"""
from __future__ import annotations

import itertools
import os
import re
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from functools import partial
from typing import Callable, Dict, List

from bench.bench_decode import hex_core
from bench.bench_first_job import first_job_times
from bench.bench_stream import StreamSettings, stream_section
from bench.bench_write import write_times
from bench.common import Outcome, PeakRss, Target, best_of, best_of_each, table
from bench.dataset import BenchFiles, batches, write_capture
from cmi_datasource import Capture
from cmi_datasource.engine import index
from cmi_datasource.engine.decode import slice_batches
from cmi_datasource.engine.plan import dataset_slices, whole_run
from cmi_datasource.engine.write import WriteOptions
from cmi_datasource.transports.mq.dmpmqmsg import parse_dump

FLAT = 1.2  # "memory flat": the larger run's peak within this factor of the smaller run's
GIB_MB = 1024
SMALL_DUMP_ROWS = 100


@dataclass
class Settings:
    rows: List[int]  # the sizes of the per-size sections, smallest first
    repeat: int
    first_job_runs: int
    scale_rows: int
    transport_rows: int
    small_files: int
    stream: StreamSettings


class Run:
    """What the sections of one run share: the Spark session, the settings, a temporary directory,
    the benchmark's files of each size, and the measures more than one section compares with
    (measured once, when first asked for)."""

    def __init__(self, spark, settings: Settings, tmp: str):
        self.spark = spark
        self.settings = settings
        self.tmp = tmp
        self._files: Dict[int, BenchFiles] = {}
        self._measured: Dict[tuple, object] = {}

    def files(self, n: int) -> BenchFiles:
        if n not in self._files:
            self._files[n] = BenchFiles(n, os.path.join(self.tmp, f"rows-{n}"))
        return self._files[n]

    def scratch(self, name: str) -> tempfile.TemporaryDirectory:
        """A directory of a section's own, removed when its ``with`` block ends, failing or not."""
        return tempfile.TemporaryDirectory(prefix=f"{name}-", dir=self.tmp)

    def _once(self, key: tuple, measure: Callable[[], object]):
        if key not in self._measured:
            self._measured[key] = measure()
        return self._measured[key]

    def read(self, fmt: str, path: str) -> None:
        """The read the benchmark times: all of a source's rows into Spark's noop sink."""
        noop(self.spark.read.format(fmt).load(path))

    def read_s(self, fmt: str, n: int) -> float:
        """Best time of the warm read of ``n`` rows: the dump (``cmi``) or the Parquet files, the
        two measured together, in turn."""
        files = self.files(n)
        return self._once(("read", n), lambda: best_of_each(
            {"cmi": partial(self.read, "cmi", files.dump), "parquet": partial(self.read, "parquet", files.parquet)},
            self.settings.repeat, inputs={"cmi": [files.dump], "parquet": [files.parquet]}))[fmt]

    def sampled_read(self, path: str) -> PeakRss:
        """Peak memory during a read of the dump at ``path`` (a run of its own, untimed: the
        sampler takes some CPU)."""
        with PeakRss() as rss:
            self.read("cmi", path)
        return rss

    def cmi_partitions(self, n: int) -> int:
        return self._once(("partitions", n), lambda: self.spark.read.format("cmi").load(self.files(n).dump)
                          .rdd.getNumPartitions())


def noop(df) -> None:
    df.write.format("noop").mode("overwrite").save()


def first_job(run: Run) -> Outcome:
    """1. The first job of fresh sessions (new JVM and Python workers), cmi against the floor."""
    runs = run.settings.first_job_runs
    targets, rows = [], []
    for n in run.settings.rows:
        files = run.files(n)
        cmi, discovered, floor = first_job_times(files.dump, files.ipc, runs)
        c, d, f = statistics.median(cmi), statistics.median(discovered), statistics.median(floor)
        targets.append(Target(f"1. first job of a fresh session, {n:,} rows", 1.1, "cmi / floor, both registered",
                              f"cmi {c:.2f} s, floor {f:.2f} s (medians of {runs}); cmi found by discovery "
                              f"{d:.2f} s ({d / f:.2f})", c / f))
        rows.append([f"{n:,}", f"{c:.2f}", ", ".join(f"{x:.2f}" for x in cmi), f"{d:.2f}",
                     ", ".join(f"{x:.2f}" for x in discovered), f"{f:.2f}", ", ".join(f"{x:.2f}" for x in floor),
                     f"{c / f:.2f}", f"{d / f:.2f}"])
    return Outcome(targets, table(
        "1. First job of a fresh session", ["rows", "cmi registered s (median)", "runs", "cmi discovered s (median)",
                                            "runs", "floor s (median)", "runs", "registered / floor",
                                            "discovered / floor"], rows,
        "Each run is a new driver process and SparkSession (`local[*]`) whose first job reads the rows into "
        "Spark's noop sink, timed from the `load` call to the end of the job. The dump's message index is "
        "cached beforehand (by one untimed run), as after the planning of an earlier job. Floor: the Python "
        "source yielding pre-built Arrow batches, one file per core, registered with "
        "`spark.dataSource.register`. The target compares cmi registered the same way "
        "(`cmi_datasource.register(spark)`); found by Spark's discovery of `pyspark_*` modules instead, any "
        "source also waits for a Python worker that imports them, once per session. Runs take the three in "
        "turn (`bench/bench_first_job.py`)."))


def first_read(run: Run) -> Outcome:
    """2. The first read of a dump never seen before (its index built inside the job), workers
    warm, against the warm read of the same file."""
    targets, rows = [], []
    for n in run.settings.rows:
        original = run.files(n).dump
        warm_s = run.read_s("cmi", n)
        with run.scratch("first-read") as tmp:
            copies = itertools.count()

            def unseen_copy(original: str = original, tmp: str = tmp, copies: itertools.count = copies) -> str:
                # The index is cached by the file's identity (path, size, mtime, CRC of its ends):
                # a copy under a new name is a dump the reader has never seen.
                for old in os.listdir(tmp):
                    os.remove(os.path.join(tmp, old))
                copy = shutil.copyfile(original, os.path.join(tmp, f"unseen-{next(copies)}.dmp"))
                os.sync()
                return copy

            first_s = best_of(lambda path: run.read("cmi", path), run.settings.repeat, setup=unseen_copy)
        targets.append(Target(f"2. first read of an unseen dump, {n:,} rows", 1.5, "first / warm",
                              f"first {first_s:.2f} s, warm {warm_s:.2f} s", first_s / warm_s))
        rows.append([f"{n:,}", f"{first_s:.2f}", f"{warm_s:.2f}", f"{first_s / warm_s:.2f}"])
    return Outcome(targets, table(
        "2. First read of an unseen dump", ["rows", "first read s", "warm read s", "first / warm"], rows,
        "First read: `load -> noop` of a fresh copy of the dump under a new name (copied untimed before each "
        "run), so that its message index is built inside the job; the Python workers are warm. Warm read: the "
        "original dump, its index cached. Best of the runs of each."))


def _fromhex_floor(dump: str, repeat: int) -> float:
    """Seconds for bytes.fromhex over all the dump's X-line digits, joined beforehand."""
    with open(dump, "rb") as f:
        digits = b"".join(re.findall(rb"^X ([0-9A-F]+)\r?$", f.read(), flags=re.M)).decode()
    return best_of(lambda: bytes.fromhex(digits), repeat)


def core_times(dump: str, repeat: int):
    """(cold seconds, warm seconds, fromhex floor seconds, observation bytes) on one core."""
    floor = _fromhex_floor(dump, repeat)

    def decode(cap):
        [att] = cap.attachments
        for part in dataset_slices(cap, att, whole_run(cap, att), 1 << 62):
            for _ in slice_batches(part):
                pass

    def cold():
        index._MEMORY.clear()
        decode(Capture.open(dump, use_index_cache=False))

    cold_s = best_of(cold, repeat)
    cap = Capture.open(dump)
    warm_s = best_of(lambda: decode(cap), repeat)
    obs_bytes = cap.layout(cap.attachments[0]).observation_bytes
    return cold_s, warm_s, floor, obs_bytes


def hex_core_time(dump: str, repeat: int) -> float:
    """Seconds of the partitions' hex kernel decoding the X lines of every message of the dump,
    the text in memory, on one core (``bench_decode.hex_core``)."""
    with open(dump, "rb") as f:
        text = f.read()
    spans = [(dump, m.index, m.file_offset, m.file_end) for m in parse_dump(text, dump)]
    return hex_core(text, spans, repeat)


def warm_read(run: Run) -> Outcome:
    """3. The warm read of the dump against Parquet, the floor source and the pandas route."""
    spark, repeat = run.spark, run.settings.repeat
    targets, lines = [], []
    for n in run.settings.rows:
        files = run.files(n)
        cmi_s, parquet_s = run.read_s("cmi", n), run.read_s("parquet", n)
        floor_s = best_of(partial(run.read, "bench_arrow_floor", files.ipc), repeat, inputs=[files.ipc])
        # The same floor split like cmi's partitions: Spark's cost per Python task apart.
        partitions = run.cmi_partitions(n)
        floor_as_cmi = files.floor_files(partitions)
        floor_as_cmi_s = best_of(partial(run.read, "bench_arrow_floor", floor_as_cmi), repeat, inputs=[floor_as_cmi])

        def pandas_route(files: BenchFiles = files) -> None:
            import pandas as pd
            noop(spark.createDataFrame(pd.read_sas(files.xport, format="xport")))

        pandas_s = best_of(pandas_route, repeat, inputs=[files.xport])
        cold_s, warm_s, fromhex_s, obs = core_times(files.dump, repeat)
        hex_core_s = hex_core_time(files.dump, repeat)
        mb = obs / 1e6
        lines.append(f"| {n:,} | {os.path.getsize(files.dump) / 1e6:.0f} | {cmi_s:.2f} | {parquet_s:.2f} "
                     f"| {floor_s:.2f} | {pandas_s:.2f} | {cmi_s / parquet_s:.2f} | {cmi_s / floor_s:.2f} "
                     f"| {pandas_s / cmi_s:.1f} | {partitions} | {floor_as_cmi_s:.2f} | {cmi_s / floor_as_cmi_s:.2f} "
                     f"| {mb / cold_s:.0f} | {mb / warm_s:.0f} | {mb / fromhex_s:.0f} | {fromhex_s / warm_s:.2f} "
                     f"| {run.sampled_read(files.dump).worker_mb:.0f} |")
        targets.append(Target(f"3a. hex decode core, {n:,} rows", 0.5, "kernel / bytes.fromhex",
                              f"kernel {hex_core_s:.3f} s, bytes.fromhex {fromhex_s:.3f} s over the same digits "
                              f"({fromhex_s / hex_core_s:.2f}x fromhex's speed; issue 30: at least 2x)",
                              hex_core_s / fromhex_s))
        targets.append(Target(f"3. warm read, hex dump, {n:,} rows", 1.3, "cmi / Parquet",
                              f"cmi {cmi_s:.2f} s, Parquet {parquet_s:.2f} s; floor in {partitions} partitions "
                              f"{floor_as_cmi_s:.2f} s (cmi / floor {cmi_s / floor_as_cmi_s:.2f})",
                              cmi_s / parquet_s))
    details = ["", "## 3. Warm read: cmi against Parquet, a Python-source floor and the pandas route", "",
               "| rows | dump MB | 1 cmi s | 2 parquet s | 3 floor s | 4 pandas s | 1/2 | 1/3 | 4/1 "
               "| cmi partitions | 3b floor in as many s | 1/3b "
               "| core cold MB/s | core warm MB/s | fromhex MB/s | warm/fromhex | worker RSS MB |",
               "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"] + lines
    times = {n: run.read_s("cmi", n) for n in run.settings.rows}
    if len(times) > 1:
        (n1, t1), (n2, t2) = min(times.items()), max(times.items())
        details += ["", f"Growth: {n2:,} rows / {n1:,} rows took {t2 / t1:.2f}x the time "
                        f"for {n2 / n1:.1f}x the rows."]
    details += ["", "cmi and Parquet read in turn, run after run (the best of each). Ratios: 1/2 cmi vs Parquet, "
                    "1/3 cmi vs the Python-source floor (one partition per core; lower "
                    "is better); 1/3b cmi vs the same floor cut into as many partitions as cmi's (Spark's cost per "
                    "Python task apart); "
                    "4/1 how many times the pandas route is slower than cmi; warm/fromhex the decode core's "
                    "throughput as a share of bytes.fromhex over the same hex text. Core cold = message index "
                    "built from the file plus decoding; warm = decoding with the index cached (what Spark "
                    "partitions do). Worker RSS: the largest Python worker during an extra (untimed) cmi run."]
    return Outcome(targets, details)


def mqget(run: Run) -> Outcome:
    """4. A binary MQGET capture of the same rows against Parquet."""
    targets, rows = [], []
    for n in run.settings.rows:
        with run.scratch("mqget") as tmp:
            capture = write_capture(os.path.join(tmp, "bench.mqget"), n, "mqget")
            os.sync()
            parquet = run.files(n).parquet
            times = best_of_each({"mqget": partial(run.read, "cmi", capture),
                                  "parquet": partial(run.read, "parquet", parquet)}, run.settings.repeat,
                                 inputs={"mqget": [capture], "parquet": [parquet]})
            mqget_s, parquet_s = times["mqget"], times["parquet"]
            size_mb = os.path.getsize(capture) / 1e6
        targets.append(Target(f"4. warm read, binary MQGET capture, {n:,} rows", 1.15, "cmi / Parquet",
                              f"cmi {mqget_s:.2f} s, Parquet {parquet_s:.2f} s", mqget_s / parquet_s))
        rows.append([f"{n:,}", f"{size_mb:.0f}", f"{mqget_s:.2f}", f"{parquet_s:.2f}", f"{mqget_s / parquet_s:.2f}"])
    return Outcome(targets, table(
        "4. Binary MQGET capture", ["rows", "capture MB", "cmi s", "Parquet s", "cmi / Parquet"], rows,
        "The same rows written as a binary MQGET capture by the project's writer, read by `load(path)` (format "
        "recognised from its bytes) -> noop, warm (index cached, workers started), and the Parquet files read in "
        "turn with it, run after run; best of the runs of each."))


def write(run: Run) -> Outcome:
    """5. df.write.format("cmi") against the Parquet write of the same DataFrame, worker memory flat."""
    targets, rows, peaks = [], [], {}
    for n in run.settings.rows:
        df = run.spark.read.parquet(run.files(n).parquet)
        with run.scratch("write") as tmp:
            w = write_times(df, os.path.join(tmp, "out"), run.settings.repeat)
        peaks[n] = w.worker_mb
        targets.append(Target(f"5. write, {n:,} rows", 1.25, "cmi / Parquet",
                              f"cmi {w.cmi_s:.2f} s, Parquet {w.parquet_s:.2f} s; trivial Python sink "
                              f"{w.floor_s:.2f} s (cmi / sink {w.cmi_s / w.floor_s:.2f})", w.cmi_s / w.parquet_s))
        rows.append([f"{n:,}", f"{w.cmi_s:.2f}", f"{w.parquet_s:.2f}", f"{w.floor_s:.2f}",
                     f"{w.cmi_s / w.parquet_s:.2f}", f"{w.cmi_s / w.floor_s:.2f}",
                     f"{w.dump_mb:.0f}", f"{w.worker_mb:.0f}", f"{w.driver_mb:.0f}"])
    if len(peaks) > 1:
        (n1, p1), (n2, p2) = min(peaks.items()), max(peaks.items())
        targets.append(Target(f"5. write, worker memory flat, {n1:,} -> {n2:,} rows", FLAT, "peak / peak",
                              f"largest Python worker {p1:.0f} MB -> {p2:.0f} MB", p2 / p1))
    return Outcome(targets, table(
        "5. Write", ["rows", "cmi s", "Parquet s", "Python sink s", "cmi / Parquet", "cmi / sink", "dump MB",
                     "worker RSS MB", "driver RSS MB"],
        rows,
        "The DataFrame is `spark.read.parquet` of the benchmark's Parquet files (12 mixed columns). Best of the "
        "runs of `df.write.parquet`, `df.write.format(\"cmi\")` and the trivial Python sink (each task writes the "
        "Arrow batches Spark hands it to a file, the commit does nothing: Spark's cost of any Python write), the "
        "three taken in turn run after run, each into an empty folder. RSS: peaks of the "
        "largest Python worker and of the driver (Python and JVM; the cmi commit streams the dump from the "
        f"driver) during an extra cmi write. Flat: the peak within {FLAT}x of the smaller run's."))


def scale(run: Run) -> Outcome:
    """6. A dump of --scale-rows rows (20M) against the largest of --rows (5M): time linear, memory flat."""
    big, base = run.settings.scale_rows, max(run.settings.rows)
    name = f"6. scale, {base:,} -> {big:,} rows"
    base_dump = run.files(base).dump
    base_s = run.read_s("cmi", base)
    needed = os.path.getsize(base_dump) * big / base * 1.05 + (1 << 30)
    free = shutil.disk_usage(run.tmp).free
    if free < needed:
        return Outcome([Target(name, None, "", f"not run: the dump needs about {needed / 1e9:.1f} GB, "
                                               f"{free / 1e9:.1f} GB free in {run.tmp}")])
    # Sampled here, next to the big dump's reads: the JVM's RSS follows its heap, which grows
    # with all the session has done.
    base_rss = run.sampled_read(base_dump)
    with run.scratch("scale") as tmp:
        t0 = time.perf_counter()
        dump = write_capture(os.path.join(tmp, "scale.dmp"), big)
        os.sync()
        generate_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        first_rss = run.sampled_read(dump)  # planning: the first read builds the index
        first_s = time.perf_counter() - t0
        warm_rss = run.sampled_read(dump)
        big_s = best_of(lambda: run.read("cmi", dump), 2, warmup=False, inputs=[dump])
        dump_mb = os.path.getsize(dump) / 1e6
    growth = big / base
    worker_peak = max(first_rss.worker_mb, warm_rss.worker_mb)
    targets = [
        Target(f"{name}: time", round(1.1 * growth, 2), "time / time",
               f"{base_s:.2f} s -> {big_s:.2f} s for {growth:g}x the rows", big_s / base_s),
        Target(f"6. scale, {big:,} rows: largest Python worker", 1, f"RSS / {GIB_MB} MB",
               f"{worker_peak:.0f} MB (first read {first_rss.worker_mb:.0f}, warm {warm_rss.worker_mb:.0f})",
               worker_peak / GIB_MB),
        Target(f"{name}: worker memory flat", FLAT, "peak / peak",
               f"warm reads {base_rss.worker_mb:.0f} MB -> {warm_rss.worker_mb:.0f} MB",
               warm_rss.worker_mb / base_rss.worker_mb),
        Target(f"{name}: driver memory flat", FLAT, "peak / peak",
               f"warm reads {base_rss.driver_mb:.0f} MB -> {warm_rss.driver_mb:.0f} MB",
               warm_rss.driver_mb / base_rss.driver_mb),
    ]
    rows = [[f"{base:,}", f"{os.path.getsize(base_dump) / 1e6:.0f}", "—", "—", f"{base_s:.2f}",
             f"{base / base_s:,.0f}", f"— / {base_rss.worker_mb:.0f}", f"— / {base_rss.driver_mb:.0f}"],
            [f"{big:,}", f"{dump_mb:.0f}", f"{generate_s:.0f}", f"{first_s:.2f}", f"{big_s:.2f}", f"{big / big_s:,.0f}",
             f"{first_rss.worker_mb:.0f} / {warm_rss.worker_mb:.0f}",
             f"{first_rss.driver_mb:.0f} / {warm_rss.driver_mb:.0f}"]]
    return Outcome(targets, table(
        "6. Scale", ["rows", "dump MB", "written in s", "first read s", "warm read s", "rows/s",
                     "worker RSS MB (first / warm)", "driver RSS MB (first / warm)"], rows,
        f"The {big:,}-row dump is written (streaming) into the benchmark's temporary directory and removed after. "
        f"Its first read builds the index (timed while memory is sampled, not a target); then the best of 2 warm "
        f"reads against the best warm read of {base:,} rows (as in section 3). Time target: linear growth within 10% "
        f"({1.1 * growth:.2f}x for {growth:g}x the rows). RSS: peaks of the largest Python worker and of the driver "
        "(Python and JVM) during the first and a warm read, and during a read of the smaller dump just before; flat "
        "compares the warm reads."))


TRANSPORTS = (("dmpmqmsg", "MQ dump", "bench.dmp"), ("tibrv", "TIB/RV", "bench.rv"), ("mqtt", "MQTT", "bench.mqtt"))


def transports(run: Run) -> Outcome:
    """7. The TIB/RV and MQTT captures of the same rows against the MQ dump, in rows per second."""
    n = run.settings.transport_rows
    options = WriteOptions(deterministic_seed="bench", encoding=273)  # big-endian, as TIB/RV requires
    with run.scratch("transports") as tmp:
        captures = {fmt: write_capture(os.path.join(tmp, file_name), n, fmt, options)
                    for fmt, _, file_name in TRANSPORTS}
        os.sync()
        sizes = {fmt: os.path.getsize(capture) / 1e6 for fmt, capture in captures.items()}
        times = best_of_each({fmt: partial(run.read, "cmi", capture) for fmt, capture in captures.items()},
                             run.settings.repeat, inputs={fmt: [capture] for fmt, capture in captures.items()})
    mq_s = times["dmpmqmsg"]
    targets = [Target(f"7. {label} capture, {n:,} rows", 1.1, "time / MQ dump time",
                      f"{n / times[fmt]:,.0f} rows/s, MQ dump {n / mq_s:,.0f} rows/s", times[fmt] / mq_s)
               for fmt, label, _ in TRANSPORTS[1:]]
    rows = [[label, f"{sizes[fmt]:.0f}", f"{times[fmt]:.2f}", f"{n / times[fmt]:,.0f}", f"{times[fmt] / mq_s:.2f}"]
            for fmt, label, _ in TRANSPORTS]
    return Outcome(targets, table(
        f"7. Transports ({n:,} rows, the same rows as an MQ dump, Encoding 273)",
        ["capture", "file MB", "read -> noop s", "rows/s", "time / MQ dump"], rows,
        "Each capture written by the project's writer, read by `load(path)` (format recognised from its bytes) "
        "-> noop, warm; best of the runs, which take the three captures in turn (a drift of the machine moves all "
        "three alike). All three big-endian (Encoding 273), as TIB/RV requires."))


def write_small_dumps(directory: str, count: int) -> None:
    """``count`` dmpmqmsg dumps of ``SMALL_DUMP_ROWS`` rows each, one attachment of the same data
    set each, each with a key of its own: a queue export."""
    rows = list(batches(SMALL_DUMP_ROWS))
    for i in range(count):
        write_capture(os.path.join(directory, f"orders-{i:05d}.dmp"), SMALL_DUMP_ROWS,
                      options=WriteOptions(deterministic_seed=f"small-{i}"), rows=rows,
                      library="QUEUE", member="ORDERS")


def small_files(run: Run) -> Outcome:
    """8. A directory of many small dumps: planning time and how many files a partition packs."""
    count = run.settings.small_files
    spark = run.spark

    def plan(directory):
        """(seconds, DataFrame, partitions): Spark's schema call and its partition planning."""
        t0 = time.perf_counter()
        df = spark.read.format("cmi").load(directory)
        partitions = df.rdd.getNumPartitions()
        return time.perf_counter() - t0, df, partitions

    with run.scratch("small-files") as tmp:
        t0 = time.perf_counter()
        write_small_dumps(tmp, count)
        os.sync()
        generate_s = time.perf_counter() - t0
        first_plan_s, df, partitions = plan(tmp)
        t0 = time.perf_counter()
        noop(df)
        read_s = time.perf_counter() - t0
        cached_plan_s, _, _ = plan(tmp)
    rows = count * SMALL_DUMP_ROWS
    targets = [
        Target(f"8. planning {count:,} small dumps (never seen)", 1, "s / 10 s",
               f"{first_plan_s:.2f} s; {cached_plan_s:.2f} s with the indexes cached", first_plan_s / 10),
        Target(f"8. partitions of {count:,} small dumps", 0.1, "partitions / files",
               f"{partitions:,} partitions, {count / partitions:,.1f} files each", partitions / count),
    ]
    return Outcome(targets, table(
        f"8. Planning a directory of {count:,} small dumps ({SMALL_DUMP_ROWS} rows each)",
        ["files", "written in s", "planning s (first)", "partitions", "files / partition", "read -> noop s",
         "rows/s", "planning s (cached)"],
        [[f"{count:,}", f"{generate_s:.1f}", f"{first_plan_s:.2f}", f"{partitions:,}", f"{count / partitions:,.1f}",
          f"{read_s:.2f}", f"{rows / read_s:,.0f}", f"{cached_plan_s:.2f}"]],
        "Planning: `spark.read.format(\"cmi\").load(dir)` and `df.rdd.getNumPartitions()` (Spark's schema call and "
        "its partition planning), on a directory never seen (first) and again (indexes cached); the read: once. "
        "Partitions target: at least 10 files a partition (\"partitions that pack many small files together\")."))


def stream(run: Run) -> Outcome:
    """9. A folder of dumps read as a stream against a batch read: throughput and latency (issue 29)."""
    return stream_section(run.spark, run.settings.stream, run.settings.repeat, lambda: run.scratch("stream"))


SECTIONS: Dict[str, Callable[[Run], Outcome]] = {
    "first-job": first_job, "first-read": first_read, "warm": warm_read, "mqget": mqget, "write": write,
    "scale": scale, "transports": transports, "small-files": small_files, "stream": stream,
}
