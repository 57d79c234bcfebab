"""The first job of a fresh Spark session (new JVM, new Python workers) reading a dump, against
the same first job reading the same rows through a trivial Python source (issue 18).

    .venv/bin/python bench/bench_first_job.py [--rows 1000000] [--runs 3]

Each measurement is a new driver process with a new SparkSession (``local[*]``): its first job
is ``spark.read.format(...).load(...)`` written to Spark's ``noop`` sink, timed from the call to
its end (the session's start is left out: it is the same for both). The dump's message index is
cached before the runs (as after the planning of an earlier job), so what is compared is what
fresh Python workers pay: imports, kernel loading, index loading, and the decoding itself.
The floor is ``bench.py``'s source yielding pre-built Arrow batches, one file per core. Runs
alternate cmi and floor; the medians and their ratio are printed.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

DRIVER = """
import json, os, sys, time
sys.path.insert(0, %(root)r)
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[*]").config("spark.ui.enabled", "false")
         .config("spark.sql.timeType.enabled", "true").getOrCreate())
source, path = sys.argv[1], sys.argv[2]
if source == "bench_arrow_floor":
    from bench.bench import floor_source
    spark.dataSource.register(floor_source())
t0 = time.perf_counter()
spark.read.format(source).load(path).write.format("noop").mode("overwrite").save()
print(json.dumps({"first_job": time.perf_counter() - t0}))
spark.stop()
"""


def prepare(n: int, tmp: str) -> dict:
    from bench.bench import SCHEMA, batches, write_floor_files
    from cmi_datasource.engine.write import WriteOptions, dataset_attachment, stream_messages
    from cmi_datasource.transports import capture_format
    paths = {"dump": os.path.join(tmp, "bench.dmp"), "ipc": os.path.join(tmp, "ipc")}
    options = WriteOptions(deterministic_seed="bench")
    attachment = dataset_attachment(SCHEMA, {}, n, batches(n), "BENCH", "ROWS", options)
    with open(paths["dump"], "wb") as out:
        capture_format("dmpmqmsg").write(out, stream_messages([attachment], options))
    write_floor_files(n, paths["ipc"], os.cpu_count() or 1)
    return paths


def first_job(source: str, path: str) -> float:
    env = dict(os.environ, PYTHONPATH=ROOT, PYSPARK_PYTHON=sys.executable,
               SPARK_CONF_DIR=os.path.join(ROOT, "conf"))
    done = subprocess.run([sys.executable, "-c", DRIVER % {"root": ROOT}, source, path], env=env,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])["first_job"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cmi-first-job-") as tmp:
        paths = prepare(args.rows, tmp)
        first_job("cmi", paths["dump"])  # the index cached and the kernels compiled, as on a used machine
        cmi, floor = [], []
        for _ in range(args.runs):
            cmi.append(first_job("cmi", paths["dump"]))
            floor.append(first_job("bench_arrow_floor", paths["ipc"]))
    c, f = statistics.median(cmi), statistics.median(floor)
    print(f"first job of a fresh session, {args.rows:,} rows, median of {args.runs} (s): cmi {c:.2f} "
          f"({', '.join(f'{x:.2f}' for x in cmi)}), floor {f:.2f} ({', '.join(f'{x:.2f}' for x in floor)}); "
          f"cmi/floor {c / f:.2f}")


if __name__ == "__main__":
    main()
