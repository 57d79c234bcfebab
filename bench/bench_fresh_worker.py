"""What a fresh Spark Python worker pays before its first batch (issue 18's first-job target).

    .venv/bin/python bench/bench_fresh_worker.py [runs]

Each run starts new Python processes, as Spark does for a fresh session's workers, and times in
them what a worker does for its first partition, after the imports every Spark worker has done
(``pyspark.worker``, timed as ``worker``: the part of the whole that both pay):

- **floor**: what the trivial Python source's worker does at the least: import PySpark's data
  source API and pyarrow, build one record batch from a numpy buffer;
- **cmi**: import the ``pyspark_cmi`` module Spark discovers and the Spark layer a worker
  unpickles the reader from (``cmi_datasource.spark.source``), open a capture through its message
  index (cached on disk, as after planning) and decode its first data set (the numba kernels
  loaded from their cache).

- **cmi numba**: cmi with ``CMI_NATIVE=0``, running the numba kernels instead of their C twins
  (issue 30): what a worker paid before them.

Printed: the median of each phase over the runs and the ratio of cmi's whole to the floor's,
both measured in this run (absolute times move with the machine), plus which of pandas and
numba each process imported (pandas costs 0.4 s in a process that imports it), and how many of
cmi's modules it compiled from source (none once ``make`` has compiled the tree's bytecode).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "sample_queues", "mixed_types.dmp")

FLOOR = """
import json, sys, time
t_worker = time.perf_counter()
import pyspark.worker, pyspark.sql.worker.plan_data_source_read  # what every Spark worker has imported
t0 = time.perf_counter()
import numpy as np, pyarrow as pa, pyspark.sql.datasource
t1 = time.perf_counter()
# From buffers: pa.array and from_pydict would import pandas (0.4 s), which a floor does not need.
values = pa.Array.from_buffers(pa.float64(), 2, [None, pa.py_buffer(np.arange(2.0))])
pa.RecordBatch.from_arrays([values], names=["x"])
t2 = time.perf_counter()
print(json.dumps({"worker": t0 - t_worker, "imports": t1 - t0, "first batch": t2 - t1, "whole": t2 - t_worker,
                  "pandas": "pandas" in sys.modules, "numba": "numba" in sys.modules}))
"""

CMI = """
import json, sys, time
t_worker = time.perf_counter()
import pyspark.worker, pyspark.sql.worker.plan_data_source_read  # what every Spark worker has imported
t0 = time.perf_counter()
import pyarrow, pyspark.sql.datasource, pyspark_cmi
import cmi_datasource.spark.source  # what a worker unpickling cmi's reader imports
t1 = time.perf_counter()
from cmi_datasource import Capture, read
capture = Capture.open([%r])
t2 = time.perf_counter()
read(capture)
t3 = time.perf_counter()
import os
from_source = sum(1 for name, m in list(sys.modules.items()) if name.startswith("cmi_datasource")
                  and getattr(m, "__cached__", None) and not os.path.exists(m.__cached__))
print(json.dumps({"worker": t0 - t_worker, "imports": t1 - t0, "index": t2 - t1, "first batch": t3 - t2,
                  "whole": t3 - t_worker,
                  "pandas": "pandas" in sys.modules, "numba": "numba" in sys.modules,
                  "from source": from_source}))
""" % SAMPLE


def run(code: str, **environment: str) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT, **environment)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(runs: int) -> None:
    run(CMI, CMI_NATIVE="0")  # kernels compiled and the index cached: what every later worker finds
    floor, cmi, cmi_numba = [], [], []
    for _ in range(runs):  # alternated, so that the machine's drift touches all alike
        floor.append(run(FLOOR))
        cmi.append(run(CMI))
        cmi_numba.append(run(CMI, CMI_NATIVE="0"))

    def median(results, phase):
        return statistics.median(r[phase] for r in results)

    print(f"fresh Python worker, median of {runs} runs (s):")
    for name, results, phases in (("floor", floor, ("worker", "imports", "first batch")),
                                  ("cmi", cmi, ("worker", "imports", "index", "first batch")),
                                  ("cmi numba", cmi_numba, ("worker", "imports", "index", "first batch"))):
        parts = ", ".join(f"{p} {median(results, p):.3f}" for p in phases)
        print(f"  {name:9} whole {median(results, 'whole'):.3f} ({parts}); imports pandas: "
              f"{results[0]['pandas']}, numba: {results[0]['numba']}")
    if cmi[0]["from source"]:  # no bytecode and none written (PYTHONDONTWRITEBYTECODE=1): make compiles it
        print(f"  cmi compiled {cmi[0]['from source']} of its modules from source in each process: "
              "run `make .venv/.installed` (compileall) for what an installed package costs")
    # The worker's own imports swing by 0.3 s between runs on a busy machine: the sources' shares
    # (whole - worker) are compared, and the ratio is of wholes with the floor's worker share.
    def own(results):
        return statistics.median(r["whole"] - r["worker"] for r in results)

    base = median(floor, "worker")
    for name, results in (("cmi", cmi), ("cmi numba", cmi_numba)):
        extra, ratio = own(results) - own(floor), (base + own(results)) / (base + own(floor))
        print(f"  {name} - floor: {extra:.3f} s per worker; {name} / floor: {ratio:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
