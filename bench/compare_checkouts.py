"""Two checkouts of the project read the same dump, alternately: is a change faster or slower?

    .venv/bin/python bench/compare_checkouts.py OLD_DIR NEW_DIR [--rows 5000000] [--rounds 3]

(make a checkout of an earlier commit with ``git worktree add /tmp/old <commit>``.) Writes one
dump of the benchmark's rows (bench.py's layout) with NEW_DIR's writer, then, for ``--rounds``
rounds, runs in turn for OLD_DIR and NEW_DIR, each in a fresh process importing that checkout:

  spark  spark.read.format("cmi").load(dump) -> noop on local[*], best of 3 after a warm-up;
  core   the decode core on one core with the index cached (what a partition does), best of 5.

The machine's speed drifts; alternating the two and comparing round by round is what makes the
comparison hold. Prints each round's figures and the NEW/OLD ratio of the medians.
"""
from __future__ import annotations

import argparse
import os
import statistics
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
    spark.read.format("cmi").load(dump).write.format("noop").mode("overwrite").save()
run()
best = 1e9
for _ in range(3):
    t = time.perf_counter(); run(); best = min(best, time.perf_counter() - t)
print(best)
spark.stop()
'''

CORE = r'''
import sys, time
root, dump = sys.argv[1], sys.argv[2]
sys.path.insert(0, root)
from cmi_datasource import Capture
try:
    from cmi_datasource.engine.decode import slice_batches
except ImportError:  # checkouts from before the transport seam
    from cmi_datasource.catalog import slice_batches
try:
    from cmi_datasource.engine.plan import dataset_slices, whole_run
    def slices(cap, att):
        return dataset_slices(cap, att, whole_run(cap, att), 1 << 62)
except ImportError:  # checkouts from before issue 27: planning was the Capture's
    def slices(cap, att):
        return cap.dataset_slices(att, 1 << 62)
cap = Capture.open(dump)
def decode():
    [att] = cap.attachments
    for part in slices(cap, att):
        for _ in slice_batches(part):
            pass
decode()
best = 1e9
for _ in range(5):
    t = time.perf_counter(); decode(); best = min(best, time.perf_counter() - t)
print(best)
'''


def run(code: str, root: str, dump: str) -> float:
    root, dump = os.path.abspath(root), os.path.abspath(dump)
    env = dict(os.environ, PYTHONPATH=root, PYSPARK_PYTHON=sys.executable, SPARK_CONF_DIR=os.path.join(root, "conf"))
    # Started outside any checkout: ``python -c`` and Spark's ``python -m pyspark.daemon`` put
    # their working directory first on sys.path, so inside one they imported it, whatever ``root``.
    with tempfile.TemporaryDirectory() as elsewhere:
        out = subprocess.run([sys.executable, "-c", code, root, dump], env=env, check=True, capture_output=True,
                             text=True, cwd=elsewhere)
    return float(out.stdout.strip().splitlines()[-1])


def write_dump(root: str, rows: int, path: str) -> None:
    code = r'''
import sys
sys.path.insert(0, sys.argv[1])
from bench.bench import SCHEMA, batches
from cmi_datasource.engine.write import WriteOptions, dataset_attachment, stream_messages
from cmi_datasource.transports import capture_format
n = int(sys.argv[2])
options = WriteOptions(deterministic_seed="bench")
att = dataset_attachment(SCHEMA, {}, n, batches(n), "BENCH", "ROWS", options)
with open(sys.argv[3], "wb") as out:
    capture_format("dmpmqmsg").write(out, stream_messages([att], options))
'''
    subprocess.run([sys.executable, "-c", code, root, str(rows), path], check=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "bench.dmp")
        write_dump(os.path.abspath(args.new), args.rows, dump)
        results = {name: {"old": [], "new": []} for name in ("spark", "core")}
        for round_ in range(1, args.rounds + 1):
            for name, code in (("spark", SPARK), ("core", CORE)):
                for side in ("old", "new"):
                    results[name][side].append(run(code, os.path.abspath(getattr(args, side)), dump))
            print(f"round {round_}: " + "; ".join(
                f"{name} old {r['old'][-1]:.2f} s, new {r['new'][-1]:.2f} s" for name, r in results.items()))
        for name, r in results.items():
            old, new = statistics.median(r["old"]), statistics.median(r["new"])
            print(f"{name}: median old {old:.2f} s, new {new:.2f} s, new/old {new / old:.2f}")


if __name__ == "__main__":
    main()
