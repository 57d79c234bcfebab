"""Write benchmark: df.write.format("cmi") of N rows, time and peak Python-worker memory.

    .venv/bin/python bench/bench_write.py [rows ...]     (default: 1000000 2000000)

For each N, in one run: Parquet write of the same DataFrame (the baseline), then the cmi
write; the peak RSS of Spark's Python workers is sampled from /proc every 50 ms while the
cmi write runs. Memory that does not grow with N shows the write streams.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_CONF_DIR", os.path.join(ROOT, "conf"))

from bench.common import PeakWorkerRss  # noqa: E402


def main(sizes) -> None:
    from pyspark.sql import SparkSession, functions as F
    spark = SparkSession.builder.appName("cmi-bench-write").getOrCreate()
    print(f"machine: {os.cpu_count()} cores; Spark {spark.version}; master {spark.sparkContext.master}")
    print(f"{'rows':>9} {'parquet s':>10} {'cmi s':>8} {'cmi/parquet':>11} {'max worker RSS MB':>18} {'dump MB':>8}")
    for n in sizes:
        df = (spark.range(n).repartition(4)
              .select(F.col("id").cast("double").alias("id"), (F.col("id") * 1.5).alias("amount"),
                      F.expr("date_add(date'2000-01-01', cast(id % 9000 as int))").alias("day"),
                      F.expr("timestamp_ntz'2020-01-01 00:00:00' + make_interval(0,0,0,0,0,0,id % 86400)").alias("stamp"),
                      F.concat(F.lit("name-"), (F.col("id") % 1000).cast("string")).alias("name"),
                      F.when(F.col("id") % 10 == 0, None).otherwise(F.lit("Zürich")).alias("city")))
        tmp = tempfile.mkdtemp(prefix="cmi-bench-")
        try:
            t0 = time.perf_counter()
            df.write.mode("overwrite").parquet(os.path.join(tmp, "pq"))
            parquet_s = time.perf_counter() - t0
            with PeakWorkerRss() as sampler:
                t0 = time.perf_counter()
                df.write.format("cmi").mode("append").option("dataset", "bench.rows").save(os.path.join(tmp, "cmi"))
                cmi_s = time.perf_counter() - t0
            dump_mb = sum(os.path.getsize(os.path.join(tmp, "cmi", f)) for f in os.listdir(os.path.join(tmp, "cmi"))) / 1e6
            print(f"{n:>9} {parquet_s:>10.2f} {cmi_s:>8.2f} {cmi_s / parquet_s:>11.1f} {sampler.peak_mb:>18.0f} {dump_mb:>8.0f}")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1_000_000, 2_000_000])
