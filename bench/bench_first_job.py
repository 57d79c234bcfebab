"""The first job of a fresh Spark session (new JVM, new Python workers) reading a dump, against
the same first job reading the same rows through a trivial Python source (issue 18).

    .venv/bin/python bench/bench_first_job.py [--rows 1000000] [--runs 3]

Each measurement is a new driver process with a new SparkSession (``local[*]``): its first job
is ``spark.read.format(...).load(...)`` written to Spark's ``noop`` sink, timed from the call to
its end (the session's start is left out: it is the same for both). The dump's message index is
cached before the runs (as after the planning of an earlier job), so what is compared is what
fresh Python workers pay: imports, kernel loading, index loading, and the decoding itself.
The floor is ``bench/dataset.py``'s source yielding pre-built Arrow batches, one file per core,
registered with ``spark.dataSource.register``; cmi is measured registered the same way
(``cmi_datasource.register(spark)``: the like-for-like ratio, the target's) and found by Spark's
discovery of ``pyspark_*`` modules, which costs any discovered source a Python worker of its own
once per session (1.4-1.7 s here, ``bench_first_job_phases.py``). Runs take the three in turn;
the medians and ratios are printed. ``bench.py`` runs the same
measurement (``first_job_times``) as its first-job section.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# A fresh driver's session, as a user's notebook starts one (bench_first_job_phases.py starts it too).
SESSION = """
import json, os, sys, time
sys.path.insert(0, %(root)r)
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[*]").config("spark.ui.enabled", "false")
         .config("spark.sql.timeType.enabled", "true").getOrCreate())
"""
DRIVER = SESSION + """source, path = sys.argv[1], sys.argv[2]
if source == "bench_arrow_floor":
    from bench.dataset import floor_source
    spark.dataSource.register(floor_source())
elif source == "cmi registered":
    import cmi_datasource
    cmi_datasource.register(spark)
    source = "cmi"
t0 = time.perf_counter()
spark.read.format(source).load(path).write.format("noop").mode("overwrite").save()
print(json.dumps({"first_job": time.perf_counter() - t0}))
spark.stop()
"""


def first_job(source: str, path: str) -> float:
    """Seconds of the first job of a new driver process reading ``path`` with format ``source``."""
    env = dict(os.environ, PYTHONPATH=ROOT, PYSPARK_PYTHON=sys.executable,
               SPARK_CONF_DIR=os.path.join(ROOT, "conf"))
    done = subprocess.run([sys.executable, "-c", DRIVER % {"root": ROOT}, source, path], env=env,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])["first_job"]


def first_job_times(dump: str, floor_files: str, runs: int) -> Tuple[List[float], List[float], List[float]]:
    """The first-job seconds of ``runs`` fresh sessions reading the dump with cmi registered
    (``cmi_datasource.register(spark)``, as the floor source is), of as many reading it with cmi
    found by Spark's discovery of ``pyspark_*`` modules, and of as many reading the floor source's
    files, in turn (so that the machine's drift hits all three)."""
    first_job("cmi", dump)  # the index cached and the kernels compiled, as on a used machine
    registered, discovered, floor = [], [], []
    for _ in range(runs):
        registered.append(first_job("cmi registered", dump))
        discovered.append(first_job("cmi", dump))
        floor.append(first_job("bench_arrow_floor", floor_files))
    return registered, discovered, floor


def main() -> None:
    from bench.dataset import BenchFiles
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cmi-first-job-") as tmp:
        files = BenchFiles(args.rows, tmp)
        cmi, discovered, floor = first_job_times(files.dump, files.ipc, args.runs)
    c, d, f = statistics.median(cmi), statistics.median(discovered), statistics.median(floor)
    print(f"first job of a fresh session, {args.rows:,} rows, median of {args.runs} (s): cmi registered {c:.2f} "
          f"({', '.join(f'{x:.2f}' for x in cmi)}), cmi discovered {d:.2f}, floor {f:.2f} "
          f"({', '.join(f'{x:.2f}' for x in floor)}); cmi/floor {c / f:.2f}, discovered/floor {d / f:.2f}")


if __name__ == "__main__":
    main()
