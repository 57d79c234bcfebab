"""Where the first job of a fresh session goes, in two phases, for cmi found by Spark's discovery
of ``pyspark_*`` modules, cmi registered by ``cmi_datasource.register(spark)``, and the trivial
Python source (the floor of ``bench_first_job.py``, which is registered too).

    .venv/bin/python bench/bench_first_job_phases.py [--rows 1000000] [--runs 3]

Each run is a new driver process and SparkSession, as in ``bench_first_job.py``; the dump's
index is cached first. Printed: the medians of ``load`` (``spark.read.format(...).load``: Spark's
lookup of the Python sources when the format is not registered, then the schema call in a
Python worker) and ``job`` (the write to noop: the partitions call in a Python worker, then the
read tasks), and of the whole.
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
from bench.bench_first_job import SESSION  # noqa: E402

DRIVER = SESSION + """how, path = sys.argv[1], sys.argv[2]
fmt = "cmi"
if how == "floor":
    from bench.dataset import floor_source
    spark.dataSource.register(floor_source())
    fmt = "bench_arrow_floor"
elif how == "registered":
    import cmi_datasource
    cmi_datasource.register(spark)
t0 = time.perf_counter()
df = spark.read.format(fmt).load(path)
t1 = time.perf_counter()
df.write.format("noop").mode("overwrite").save()
t2 = time.perf_counter()
print(json.dumps({"load": t1 - t0, "job": t2 - t1, "whole": t2 - t0}))
spark.stop()
"""
WAYS = ("discovered", "registered", "floor")


def phases(how: str, path: str) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT, PYSPARK_PYTHON=sys.executable, SPARK_CONF_DIR=os.path.join(ROOT, "conf"))
    done = subprocess.run([sys.executable, "-c", DRIVER % {"root": ROOT}, how, path], env=env,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    from bench.dataset import BenchFiles
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cmi-first-job-") as tmp:
        files = BenchFiles(args.rows, tmp)
        phases("discovered", files.dump)  # the index cached, as in bench_first_job.py
        runs: dict = {how: [] for how in WAYS}
        for _ in range(args.runs):  # alternately, so that the machine's drift hits all three
            for how in WAYS:
                runs[how].append(phases(how, files.ipc if how == "floor" else files.dump))
    floor = statistics.median(r["whole"] for r in runs["floor"])
    for how in WAYS:
        medians = {k: statistics.median(r[k] for r in runs[how]) for k in ("load", "job", "whole")}
        print(f"{how:<10} load {medians['load']:.2f} s, job {medians['job']:.2f} s, whole {medians['whole']:.2f} s "
              f"(/ floor {medians['whole'] / floor:.2f}; medians of {args.runs})")


if __name__ == "__main__":
    main()
