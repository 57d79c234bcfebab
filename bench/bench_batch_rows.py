"""Whether the size of the Arrow batches a read yields moves its time in Spark (issue 30, target 4).

    PYTHONPATH=CHECKOUT SPARK_CONF_DIR=conf PYSPARK_PYTHON=.venv/bin/python \\
        .venv/bin/python bench/bench_batch_rows.py [--rows 5000000] [--rounds 5] [--batch-rows 65536 30000 16384]

Why: a binary MQGET capture costs cmi 40% less CPU to decode than the hex dump of the same rows
(``bench_read_cpu.py``), yet its warm read in Spark takes as long; its batches hold 63,000 rows
(``batchRows`` is 65,536 by default) where the dump's stop at about 30,000 (a dump's pieces of
text end them first). Here one session reads a binary MQGET capture of the benchmark's rows
(written into a temporary folder, as section 4 of ``make bench`` writes it) into the noop sink
with each ``batchRows`` in turn, round after round, its file made resident before each run;
printed: each setting's times and best. Nothing else differs between the settings.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0]) == HERE:
    del sys.path[0]
sys.path.append(os.path.dirname(HERE))

from bench.common import make_resident  # noqa: E402
from bench.dataset import write_capture  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch-rows", type=int, nargs="+", default=[65536, 30000, 16384])
    parser.add_argument("--format", default="mqget", help="the capture written (mqget, dmpmqmsg)")
    args = parser.parse_args()

    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[*]").appName("cmi-bench").config("spark.driver.memory", "8g")
             .config("spark.sql.timeType.enabled", "true").getOrCreate())
    import cmi_datasource
    cmi_datasource.register(spark)
    tmp = tempfile.mkdtemp(prefix="cmi-batch-rows-")
    try:
        capture = write_capture(os.path.join(tmp, f"bench.{args.format}"), args.rows, args.format)

        def read(batch_rows: int) -> float:
            make_resident([capture])
            started = time.perf_counter()
            (spark.read.format("cmi").option("batchRows", str(batch_rows)).load(capture)
             .write.format("noop").mode("overwrite").save())
            return time.perf_counter() - started

        times: Dict[int, List[float]] = {n: [] for n in args.batch_rows}
        for n in args.batch_rows:  # warm-up: the index cached, the workers started
            read(n)
        for _ in range(args.rounds):
            for n in args.batch_rows:
                times[n].append(read(n))
        for n, seen in times.items():
            print(f"batchRows {n:>7,}: best {min(seen):.2f} s; runs {', '.join(f'{t:.2f}' for t in seen)}", flush=True)
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
