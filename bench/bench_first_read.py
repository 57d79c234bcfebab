"""Target 2 of ``make bench`` for two checkouts, alternately: the first read of a dump never seen
(its message index built inside the job) against its warm read, in one Spark session each.

    .venv/bin/python bench/bench_first_read.py DUMP OLD_DIR NEW_DIR [--rounds 2]

Each round runs OLD_DIR then NEW_DIR, each in a fresh process importing that checkout with a disk
cache of its own: a warm-up read (workers started, index cached), the warm read (best of 2), then
the dump is ``touch``ed (a new ctime: a new index and plan key) and read again: the first read.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

SPARK = r'''
import os, sys, time
root, dump = sys.argv[1], sys.argv[2]
sys.path.insert(0, root)
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[*]").config("spark.driver.memory", "8g")
         .config("spark.sql.timeType.enabled", "true").getOrCreate())
def run():
    t = time.perf_counter()
    spark.read.format("cmi").load(dump).write.format("noop").mode("overwrite").save()
    return time.perf_counter() - t
run()
warm = min(run(), run())
os.utime(dump)
first = run()
print(first, warm)
spark.stop()
'''


def run(root: str, dump: str) -> tuple:
    root, dump = os.path.abspath(root), os.path.abspath(dump)
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, PYTHONPATH=root, PYSPARK_PYTHON=sys.executable,
                   SPARK_CONF_DIR=os.path.join(root, "conf"), CMI_DATASOURCE_CACHE=cache)
        # Started in the empty cache directory: ``python -c`` and Spark's ``python -m pyspark.daemon``
        # put their working directory first on sys.path, so inside a checkout they imported it.
        out = subprocess.run([sys.executable, "-c", SPARK, root, dump], env=env, check=True,
                             capture_output=True, text=True, cwd=cache)
    first, warm = map(float, out.stdout.strip().splitlines()[-1].split())
    return first, warm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dump")
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    for round_ in range(1, args.rounds + 1):
        for side in ("old", "new"):
            first, warm = run(os.path.abspath(getattr(args, side)), args.dump)
            print(f"round {round_} {side}: first {first:.2f} s, warm {warm:.2f} s, first/warm {first / warm:.2f}",
                  flush=True)


if __name__ == "__main__":
    main()
