"""Write benchmark: df.write.format("cmi") of N rows, time and peak memory, against Parquet.

    .venv/bin/python bench/bench_write.py [rows ...]     (default: 1000000 2000000)

For each N, in one run, a DataFrame of six columns made by Spark (``spark.range``): the Parquet
write of it (the baseline), the cmi write and the trivial Python sink's (``floor_source``: what
Spark charges any Python data source's write), best of one run after a warm-up each (``write_times``,
which bench.py's write section uses on the benchmark's own rows); the peak RSS of Spark's Python
workers and of the driver during a further cmi write. Memory that does not grow with N shows the
write streams.
"""
from __future__ import annotations

import itertools
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_CONF_DIR", os.path.join(ROOT, "conf"))

from bench.common import PeakRss, best_of_each  # noqa: E402


@dataclass
class WriteTimes:
    parquet_s: float
    cmi_s: float
    floor_s: float  # the trivial Python sink (bench/dataset.py floor_source): Spark's cost of any Python write
    worker_mb: float  # peak RSS of the largest Python worker during a cmi write
    driver_mb: float  # peak RSS of the driver (Python and JVM) during a cmi write
    dump_mb: float


def write_times(df, directory: str, repeat: int) -> WriteTimes:
    """Best of ``repeat`` writes of ``df`` as Parquet, as a cmi dump and through the trivial sink,
    taken in turn run after run (into ``directory``, each run into an empty folder, the previous
    run's output removed untimed), then the peak memory of a further cmi write."""
    runs = itertools.count()

    def fresh_output() -> str:
        shutil.rmtree(directory, ignore_errors=True)
        return os.path.join(directory, str(next(runs)))

    def write_cmi(path):
        df.write.format("cmi").mode("overwrite").option("dataset", "BENCH.ROWS").save(path)

    try:
        times = best_of_each({"parquet": lambda path: df.write.mode("overwrite").parquet(path), "cmi": write_cmi,
                              "floor": lambda path: df.write.format("bench_arrow_floor").mode("append").save(path)},
                             repeat, setup=fresh_output)
        parquet_s, cmi_s, floor_s = times["parquet"], times["cmi"], times["floor"]
        output = fresh_output()
        with PeakRss() as rss:  # a run of its own: the sampler takes some CPU
            write_cmi(output)
        dump_mb = sum(entry.stat().st_size for entry in os.scandir(output) if entry.is_file()) / 1e6
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return WriteTimes(parquet_s, cmi_s, floor_s, rss.worker_mb, rss.driver_mb, dump_mb)


def main(sizes) -> None:
    from pyspark.sql import SparkSession, functions as F
    from bench.dataset import floor_source
    spark = SparkSession.builder.appName("cmi-bench-write").getOrCreate()
    spark.dataSource.register(floor_source())
    print(f"machine: {os.cpu_count()} cores; Spark {spark.version}; master {spark.sparkContext.master}")
    print(f"{'rows':>9} {'parquet s':>10} {'floor s':>8} {'cmi s':>8} {'cmi/parquet':>11} {'cmi/floor':>9} "
          f"{'max worker RSS MB':>18} "
          f"{'driver RSS MB':>14} {'dump MB':>8}")
    with tempfile.TemporaryDirectory(prefix="cmi-bench-write-") as tmp:
        for n in sizes:
            df = (spark.range(n).repartition(4)
                  .select(F.col("id").cast("double").alias("id"), (F.col("id") * 1.5).alias("amount"),
                          F.expr("date_add(date'2000-01-01', cast(id % 9000 as int))").alias("day"),
                          F.expr("timestamp_ntz'2020-01-01 00:00:00' + make_interval(0,0,0,0,0,0,id % 86400)")
                          .alias("stamp"),
                          F.concat(F.lit("name-"), (F.col("id") % 1000).cast("string")).alias("name"),
                          F.when(F.col("id") % 10 == 0, None).otherwise(F.lit("Zürich")).alias("city")))
            w = write_times(df, os.path.join(tmp, "out"), 1)
            print(f"{n:>9} {w.parquet_s:>10.2f} {w.floor_s:>8.2f} {w.cmi_s:>8.2f} {w.cmi_s / w.parquet_s:>11.2f} "
                  f"{w.cmi_s / w.floor_s:>9.2f} {w.worker_mb:>18.0f} "
                  f"{w.driver_mb:>14.0f} {w.dump_mb:>8.0f}")
    spark.stop()


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1_000_000, 2_000_000])
