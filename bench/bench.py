"""`make bench`: every performance target of issues 18 and 30, measured in one run, written to bench/results.md.

    .venv/bin/python bench/bench.py [--sections NAME ...] [--rows 1000000 5000000] [--repeat 3]
        [--first-job-runs 5] [--scale-rows 20000000] [--transport-rows 5000000] [--small-files 10000]
        [--stream-files 40] [--stream-file-rows 25000] [--latency-samples 20] [--max-files-per-trigger 1 10]
        [--trigger-ms 100] [--out bench/results.md]

A quick smoke run: --rows 100000 --scale-rows 400000 --transport-rows 100000 --small-files 200
--first-job-runs 1 --stream-files 10 --stream-file-rows 10000 --latency-samples 5 --repeat 1
--out /tmp/bench-smoke.md

The rows (bench/dataset.py): N observations of a mixed layout (8 numerics: one DATE, one DATETIME,
one TIME, one of length 4; 4 character columns of 1-40 bytes with non-ASCII text; some missing
values), written with the project's own writer as a dmpmqmsg dump, and the same rows as Parquet,
as Arrow IPC files (the floor source's input) and as a SAS XPORT file, each when a section first
needs it. Times are the best of --repeat runs after a warm-up, on local[*], unless said otherwise.
The sections (bench/targets.py, one per target, in the issue's order, then issue 29's stream
measures; --sections picks some):

  first-job    1. the first job of fresh sessions (new JVM and Python workers) reading the dump,
                  against a trivial Python source yielding the same rows as pre-built Arrow
                  (the "floor"), medians of --first-job-runs; at each --rows
  first-read   2. the first read of a dump never seen (a fresh copy: its index built inside the job),
                  workers warm, against the warm read of the same dump; at each --rows
  warm         3. the warm read, dump -> noop, against Parquet, the floor (one partition per core,
                  and as many partitions as cmi's), the pandas route (read_sas -> createDataFrame),
                  the decode core alone on one core (cold, warm, against bytes.fromhex) and
                  the hex kernel alone against bytes.fromhex over the same digits (3a);
                  at each --rows
  mqget        4. a binary MQGET capture of the same rows against Parquet; at each --rows
  write        5. df.write.format("cmi") against df.write.parquet of the Parquet rows, and the peak
                  Python worker memory of the cmi write across the --rows sizes
  scale        6. a dump of --scale-rows rows, generated and removed, against the largest --rows:
                  time growth, largest Python worker, worker and driver memory
  transports   7. TIB/RV and MQTT captures of --transport-rows rows against the MQ dump, rows/s
  small-files  8. a directory of --small-files dumps of 100 rows: planning time (never seen, then
                  cached), partitions, the read
  stream       9. a folder of --stream-files dumps of --stream-file-rows rows read as a stream
                  (availableNow, into noop; unlimited and each --max-files-per-trigger) against a
                  batch read of the folder; and the latency from a dump landing to its rows in the
                  sink of a running query (processingTime --trigger-ms), --latency-samples times,
                  against a batch read of that dump (bench/bench_stream.py; `make bench-stream`
                  runs this section alone). Measures without a limit.

--out gets the machine, a Targets table (target, limit, measured, ratio, met), each section's
table, and then, verbatim, bench/analysis.md if it exists (the hand-made profiles of unmet targets).
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_CONF_DIR", os.path.join(ROOT, "conf"))

# compare_checkouts.py imports the rows from here.
from bench.dataset import SCHEMA, batches, floor_source  # noqa: E402,F401
from bench.common import TARGETS_HEADER, failed  # noqa: E402
from bench.bench_stream import add_arguments as add_stream_arguments, settings_of  # noqa: E402
from bench.targets import SECTIONS, Run, Settings  # noqa: E402

ANALYSIS = os.path.join(ROOT, "bench", "analysis.md")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sections", nargs="+", choices=list(SECTIONS), default=list(SECTIONS),
                        metavar="NAME", help=f"the sections to run, of: {', '.join(SECTIONS)} (default: all)")
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 5_000_000],
                        help="the sizes of sections first-job, first-read, warm, mqget and write")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs after the warm-up; the best counts")
    parser.add_argument("--first-job-runs", type=int, default=5, help="fresh sessions of each source, per size")
    parser.add_argument("--scale-rows", type=int, default=20_000_000)
    parser.add_argument("--transport-rows", type=int, default=5_000_000)
    parser.add_argument("--small-files", type=int, default=10_000, help="dumps of 100 rows in the directory")
    add_stream_arguments(parser)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results.md"))
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    started = time.perf_counter()
    settings = Settings(sorted(args.rows), args.repeat, args.first_job_runs, args.scale_rows, args.transport_rows,
                        args.small_files, settings_of(args))
    from pyspark.sql import SparkSession
    # The pandas route hands Spark a whole DataFrame from the driver: give the driver room for 5M rows.
    spark = (SparkSession.builder.master("local[*]").appName("cmi-bench").config("spark.driver.memory", "8g")
             .config("spark.sql.timeType.enabled", "true")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate())
    spark.dataSource.register(floor_source())
    spark_version = spark.version
    targets, details = [], []
    tmp = tempfile.mkdtemp(prefix="cmi-bench-")
    try:
        run = Run(spark, settings, tmp)
        for name in (n for n in SECTIONS if n in args.sections):
            print(f"== {name} ({dt.datetime.now():%H:%M:%S})", flush=True)
            try:
                outcome = SECTIONS[name](run)
            except Exception as error:  # the other sections still run and are reported
                traceback.print_exc()
                outcome = failed(name, error)
            print("\n".join(TARGETS_HEADER + [t.line() for t in outcome.targets] + outcome.details), flush=True)
            targets += outcome.targets
            details += outcome.details
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    spark.stop()
    minutes = (time.perf_counter() - started) / 60
    command = " ".join(sys.argv[1:])
    lines = [f"# cmi-datasource benchmark ({dt.datetime.now():%Y-%m-%d %H:%M})", "",
             f"Machine: {platform.machine()}, {os.cpu_count()} cores, "
             f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2 ** 30:.0f} GiB; "
             f"Python {platform.python_version()}; Spark {spark_version}; master local[*]; "
             f"best of {args.repeat} after a warm-up unless said otherwise.", "",
             f"Command: `.venv/bin/python bench/bench.py{' ' + command if command else ''}` (`make bench` runs it "
             f"without arguments); the run took {minutes:.0f} min.", "",
             "## Targets", "",
             "Issues 18 and 30's targets (issue 30 tightened some of issue 18's limits), each measured in this run "
             "against its baseline measured in the same run "
             "(absolute times move with the machine). Met when the ratio is at most the limit; a target with an "
             "absolute limit (seconds, MB) has the measure divided by that limit as its ratio. Issue 29's stream "
             "measures (9.) have no limit: their ratios are reported, neither met nor missed.", ""]
    lines += TARGETS_HEADER + [t.line() for t in targets] + details
    if os.path.exists(ANALYSIS):
        with open(ANALYSIS) as f:
            lines += ["", f.read().rstrip("\n")]
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {args.out} ({minutes:.1f} min)")


if __name__ == "__main__":
    main()
