"""`make bench`: the cmi reader side by side with what users would do otherwise.

    .venv/bin/python bench/bench.py [--rows 1000000 5000000] [--repeat 3] [--out bench/results.md]

For each N it writes, with the project's own writer, a dump of N observations of a mixed layout
(8 numerics: one DATE, one DATETIME, one TIME, one of length 4; 4 character columns of 1-40 bytes
with non-ASCII text; some missing values), plus the same rows as Parquet, as Arrow IPC files and
as a SAS XPORT file. Then, on local[*], best of --repeat runs after one warm-up:

  1. cmi      spark.read.format("cmi").load(dump) -> write.format("noop")
  2. parquet  spark.read.parquet(...) -> noop
  3. floor    a trivial Python data source yielding pre-built Arrow batches of the same rows -> noop,
              one partition per core; 3b: the same, cut into as many partitions as cmi's
  4. pandas   pandas.read_sas(xport) -> spark.createDataFrame -> noop
  5. core     the decode core alone, no Spark, one core: the dump's message index built cold, and
              the observations decoded to Arrow, in MB/s of observation bytes, next to
              bytes.fromhex over the same hex text (the physical floor of the format)

It prints the times and ratios, the largest Python-worker RSS seen during an extra (untimed) cmi run, and writes
the same table with a description of the machine to --out.
"""
from __future__ import annotations

import argparse
import datetime as dt
import glob
import os
import platform
import re
import shutil
import sys
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_CONF_DIR", os.path.join(ROOT, "conf"))

from bench.common import PeakWorkerRss, best_of  # noqa: E402
from cmi_datasource import Capture  # noqa: E402
from cmi_datasource.engine import index  # noqa: E402
from cmi_datasource.engine.decode import slice_batches  # noqa: E402
from cmi_datasource.engine.write import WriteOptions, dataset_attachment, stream_messages  # noqa: E402
from cmi_datasource.transports import capture_format  # noqa: E402

BATCH = 250_000
WORDS = np.array(["Zürich", "São Paulo", "Kraków", "Ærøskøbing", "Łódź", "Reykjavík", "Malmö", "Ōsaka",
                  "New York", "", "Ål", "Île-de-France"])


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


def prepare(n: int, tmp: str, partitions: int) -> dict:
    paths = {"dump": os.path.join(tmp, "bench.dmp"), "parquet": os.path.join(tmp, "parquet"),
             "ipc": os.path.join(tmp, "ipc"), "xport": os.path.join(tmp, "bench.xpt")}
    options = WriteOptions(deterministic_seed="bench")
    attachment = dataset_attachment(SCHEMA, {}, n, batches(n), "BENCH", "ROWS", options)
    with open(paths["dump"], "wb") as out:
        capture_format("dmpmqmsg").write(out, stream_messages([attachment], options))
    os.makedirs(paths["parquet"])
    with pq.ParquetWriter(os.path.join(paths["parquet"], "part-0.parquet"), SCHEMA) as writer:
        for b in batches(n):
            writer.write_batch(b)
    write_floor_files(n, paths["ipc"], partitions)
    import pyreadstat
    table = pa.Table.from_batches(list(batches(n)), SCHEMA)
    frame = table.to_pandas()
    # XPORT holds SAS numbers: the temporal columns as SAS days and seconds.
    frame["DAY"] = table.column("DAY").cast(pa.int32()).to_numpy().astype(np.float64) + 3653
    frame["STAMP"] = table.column("STAMP").cast(pa.int64()).to_numpy() / 1e6 + 3653 * 86400
    frame["CUTOFF"] = table.column("CUTOFF").cast(pa.int64()).to_numpy() / 1e6
    pyreadstat.write_xport(frame, paths["xport"], table_name="ROWS", file_format_version=5)
    return paths


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
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
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

    class ArrowFilesSource(DataSource):
        @classmethod
        def name(cls):
            return "bench_arrow_floor"

        def schema(self):
            return from_arrow_schema(pa.schema([f.remove_metadata() for f in SCHEMA]))

        def reader(self, schema):
            return ArrowFilesReader(self.options["path"])

    return ArrowFilesSource


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
        for part in cap.dataset_slices(att, 1 << 62):
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


def rv_lines(spark, n: int, repeat: int) -> list:
    """A TIB/Rendezvous capture of the benchmark's rows read by Spark, against the MQ dump of the
    same rows (both big-endian, Encoding 273, as RV requires), in rows per second."""
    tmp = tempfile.mkdtemp(prefix="cmi-bench-rv-")
    try:
        options = WriteOptions(deterministic_seed="bench", encoding=273)
        paths = {}
        for fmt, name in (("dmpmqmsg", "bench.dmp"), ("tibrv", "bench.rv")):
            paths[fmt] = os.path.join(tmp, name)
            with open(paths[fmt], "wb") as out:
                capture_format(fmt).write(out, stream_messages(
                    [dataset_attachment(SCHEMA, {}, n, batches(n), "BENCH", "ROWS", options)], options))
        os.sync()
        times = {fmt: best_of(lambda: spark.read.format("cmi").load(path).write.format("noop").mode("overwrite")
                              .save(), repeat) for fmt, path in paths.items()}
        size = {fmt: os.path.getsize(path) / 1e6 for fmt, path in paths.items()}
        return ["", f"## TIB/Rendezvous capture ({n:,} rows, the same rows as an MQ dump, Encoding 273)", "",
                "| capture | file MB | read -> noop s | rows/s | / MQ dump |", "|---|---|---|---|---|"] + [
            f"| {fmt} | {size[fmt]:.0f} | {times[fmt]:.2f} | {n / times[fmt]:,.0f} | "
            f"{times[fmt] / times['dmpmqmsg']:.2f} |" for fmt in paths]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 5_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results.md"))
    parser.add_argument("--rv-rows", type=int, default=1_000_000, help="rows of the TIB/RV capture row (0: none)")
    args = parser.parse_args()

    from pyspark.sql import SparkSession
    # The pandas route hands Spark a whole DataFrame from the driver: give the driver room for 5M rows.
    spark = (SparkSession.builder.master("local[*]").appName("cmi-bench").config("spark.driver.memory", "8g")
             .config("spark.sql.timeType.enabled", "true")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate())
    spark.dataSource.register(floor_source())
    cores = os.cpu_count()
    lines = [f"# cmi-datasource benchmark ({dt.datetime.now():%Y-%m-%d %H:%M})", "",
             f"Machine: {platform.machine()}, {cores} cores, "
             f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2 ** 30:.0f} GiB; "
             f"Python {platform.python_version()}; Spark {spark.version}; master local[*]; "
             f"best of {args.repeat} after a warm-up.", "",
             "Command: `make bench` (`.venv/bin/python bench/bench.py`).", "",
             "| rows | dump MB | 1 cmi s | 2 parquet s | 3 floor s | 4 pandas s | 1/2 | 1/3 | 4/1 "
             "| cmi partitions | 3b floor in as many s | 1/3b "
             "| core cold MB/s | core warm MB/s | fromhex MB/s | warm/fromhex | worker RSS MB |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    results = []
    for n in args.rows:
        tmp = tempfile.mkdtemp(prefix="cmi-bench-")
        try:
            print(f"preparing {n} rows ...", flush=True)
            paths = prepare(n, tmp, cores)
            os.sync()  # the files just written are flushed now, not during the timed runs

            def noop(df):
                df.write.format("noop").mode("overwrite").save()

            def run_cmi():
                noop(spark.read.format("cmi").load(paths["dump"]))

            cmi_s = best_of(run_cmi, args.repeat)
            with PeakWorkerRss() as rss:  # a run of its own: the sampler takes some CPU
                run_cmi()
            parquet_s = best_of(lambda: noop(spark.read.parquet(paths["parquet"])), args.repeat)
            floor_s = best_of(lambda: noop(spark.read.format("bench_arrow_floor").load(paths["ipc"])), args.repeat)
            # The same floor split like cmi's partitions: Spark's cost per Python task apart.
            cmi_partitions = spark.read.format("cmi").load(paths["dump"]).rdd.getNumPartitions()
            write_floor_files(n, os.path.join(tmp, "ipc_as_cmi"), cmi_partitions)
            os.sync()
            floor_as_cmi_s = best_of(lambda: noop(spark.read.format("bench_arrow_floor")
                                                  .load(os.path.join(tmp, "ipc_as_cmi"))), args.repeat)

            def run_pandas():
                import pandas as pd
                noop(spark.createDataFrame(pd.read_sas(paths["xport"], format="xport")))

            pandas_s = best_of(run_pandas, args.repeat)
            cold_s, warm_s, fromhex_s, obs = core_times(paths["dump"], args.repeat)
            dump_mb = os.path.getsize(paths["dump"]) / 1e6
            mb = obs / 1e6
            row = (f"| {n:,} | {dump_mb:.0f} | {cmi_s:.2f} | {parquet_s:.2f} | {floor_s:.2f} | {pandas_s:.2f} "
                   f"| {cmi_s / parquet_s:.2f} | {cmi_s / floor_s:.2f} | {pandas_s / cmi_s:.1f} "
                   f"| {cmi_partitions} | {floor_as_cmi_s:.2f} | {cmi_s / floor_as_cmi_s:.2f} "
                   f"| {mb / cold_s:.0f} | {mb / warm_s:.0f} | {mb / fromhex_s:.0f} | {fromhex_s / warm_s:.2f} "
                   f"| {rss.peak_mb:.0f} |")
            print(row, flush=True)
            lines.append(row)
            results.append((n, cmi_s))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    if len(results) > 1:
        (n1, t1), (n2, t2) = results[0], results[-1]
        lines += ["", f"Growth: {n2:,} rows / {n1:,} rows took {t2 / t1:.2f}x the time "
                      f"for {n2 / n1:.1f}x the rows."]
    lines += ["", "Ratios: 1/2 cmi vs Parquet, 1/3 cmi vs the Python-source floor (one partition per core; lower "
                  "is better); 1/3b cmi vs the same floor cut into as many partitions as cmi's (Spark's cost per "
                  "Python task apart); "
                  "4/1 how many times the pandas route is slower than cmi; warm/fromhex the decode core's "
                  "throughput as a share of bytes.fromhex over the same hex text. Core cold = message index "
                  "built from the file plus decoding; warm = decoding with the index cached (what Spark "
                  "partitions do)."]
    if args.rv_rows:
        rv = rv_lines(spark, args.rv_rows, args.repeat)
        print("\n".join(rv), flush=True)
        lines += rv
    spark.stop()
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
