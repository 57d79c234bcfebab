"""Is cmi's warm read slower when it alternates with Parquet (or the floor source) than with itself?

    .venv/bin/python bench/bench_warm_alternation.py [--dump /work/benchdata/bench5m.dmp] [--rows 5000000]
        [--rounds 4] [--files /tmp/warmread-files] [--hygiene off on] [--json out.json]

One SparkSession configured like bench.py's. Each round runs the sources in an order that has every
ordered pair of cmi (C), Parquet (P) and the floor (F) once: C C P P F F C F P C, so each run has a
predecessor, and the same source's times can be compared by what ran just before it. Rounds take
each ``--hygiene`` mode in turn, which runs before each run, untimed: ``off`` nothing, ``resident``
``bench.common.make_resident`` of the run's files (as ``best_of_each`` does), ``gc`` ``System.gc()``
in the JVM.

For each run: the share of its files in the page cache before it, and the MB its JVM and Python
workers had read from storage during it (/proc/<pid>/io); wall seconds of ``load -> noop``; the
JVM's GC time and count (young / old collectors, from the GarbageCollectorMXBeans: in local mode
the executors run in the driver's JVM); the CPU seconds of the JVM, of the Python workers (their
daemon and its children, with exited children's CPU), and of this driver process; the Python
worker pids alive at the end (reused or restarted?).

Printed: every run, then per source and predecessor the median and best of each measure.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from functools import partial

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_CONF_DIR", os.path.join(ROOT, "conf"))

from bench.common import _command_line, _descendants, _processes, make_resident  # noqa: E402
from bench.dataset import BenchFiles, floor_source  # noqa: E402

ORDER = "CCPPFFCFPC"  # every ordered pair of C, P, F once (and C after C again across rounds)
TICK = os.sysconf("SC_CLK_TCK")
# What runs, untimed, before each run of a round in each mode.
HYGIENE = {"off": lambda spark, path: None,
           "resident": lambda spark, path: make_resident([path]),  # what best_of_each does
           "gc": lambda spark, path: spark._jvm.java.lang.System.gc()}  # a full collection of the JVM's heap


def read_bytes_of(pid: int) -> int:
    """Bytes ``pid`` has had fetched from storage (``read_bytes`` of /proc/<pid>/io): reads the page
    cache served cost none."""
    try:
        with open(f"/proc/{pid}/io") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("read_bytes:"))
    except (OSError, StopIteration):
        return 0


def resident_share(path: str) -> float:
    """The share of the file(s) at ``path`` in the page cache now (util-linux ``fincore``)."""
    paths = [os.path.join(path, name) for name in os.listdir(path)] if os.path.isdir(path) else [path]
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--raw", "-o", "RES,SIZE", *paths],
                         capture_output=True, text=True, check=True).stdout.split()
    return sum(map(int, out[0::2])) / max(sum(map(int, out[1::2])), 1)


def cpu_of(pid: int, children: bool = False) -> float:
    """User + system CPU seconds of ``pid`` (with its reaped children's when ``children``)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12]) + (int(fields[13]) + int(fields[14]) if children else 0)
    return ticks / TICK


class Processes:
    """This driver's JVM and Python workers, found among its descendants."""

    def __init__(self):
        processes = _processes()
        me = os.getpid()
        self.jvm = next(pid for pid in _descendants(processes, me)
                        if b"org.apache.spark.deploy.SparkSubmit" in _command_line(pid))

    def workers(self):
        """(daemon pid or None, pids of the daemon's children)."""
        processes = _processes()
        daemon, children = None, []
        for pid in _descendants(processes, self.jvm):
            command = _command_line(pid)
            if b"pyspark.daemon" in command:
                if processes[pid][0] == self.jvm:
                    daemon = pid
                else:
                    children.append(pid)
        return daemon, sorted(children)

    def sample(self):
        daemon, children = self.workers()
        worker_cpu = (cpu_of(daemon, children=True) if daemon else 0.0) + sum(cpu_of(p) for p in children)
        return {"jvm_cpu": cpu_of(self.jvm), "worker_cpu": worker_cpu, "driver_cpu": cpu_of(os.getpid()),
                "jvm_read_mb": read_bytes_of(self.jvm) / 1e6,
                "worker_read_mb": sum(read_bytes_of(p) for p in children) / 1e6, "workers": children}


def gc_state(spark):
    """{collector name: (count, milliseconds)} of the JVM."""
    beans = spark._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    return {b.getName(): (b.getCollectionCount(), b.getCollectionTime()) for b in beans}


def measure(spark, procs: Processes, fn, path: str) -> dict:
    resident = resident_share(path)
    gc0, p0 = gc_state(spark), procs.sample()
    t0 = time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    gc1, p1 = gc_state(spark), procs.sample()
    out = {"wall": wall, "resident": resident, "workers": p1["workers"]}
    for key in ("jvm_cpu", "worker_cpu", "driver_cpu", "jvm_read_mb", "worker_read_mb"):
        out[key] = p1[key] - p0[key]
    for name in gc1:
        short = "young" if "Young" in name or "Scavenge" in name or "ParNew" in name else "old"
        out[f"gc_{short}_n"] = out.get(f"gc_{short}_n", 0) + gc1[name][0] - gc0[name][0]
        out[f"gc_{short}_ms"] = out.get(f"gc_{short}_ms", 0) + gc1[name][1] - gc0[name][1]
    return out


def noop(df) -> None:
    df.write.format("noop").mode("overwrite").save()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dump", default="/work/benchdata/bench5m.dmp")
    parser.add_argument("--rows", type=int, default=5_000_000, help="rows of the dump (for Parquet and the floor)")
    parser.add_argument("--files", default="/tmp/warmread-files", help="where Parquet and the floor's files go")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--hygiene", nargs="+", choices=list(HYGIENE), default=["off", "resident"])
    parser.add_argument("--order", default=ORDER)
    parser.add_argument("--json")
    args = parser.parse_args()

    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[*]").appName("cmi-bench").config("spark.driver.memory", "8g")
             .config("spark.sql.timeType.enabled", "true")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate())
    spark.dataSource.register(floor_source())
    files = BenchFiles(args.rows, args.files)
    # Written by an earlier run when there: BenchFiles writes each on first use.
    parquet, ipc = (os.path.join(args.files, name) for name in ("parquet", f"ipc-{os.cpu_count() or 1}"))
    paths = {"C": args.dump, "P": parquet if os.path.isdir(parquet) else files.parquet,
             "F": ipc if os.path.isdir(ipc) else files.ipc}
    read = {source: partial(noop_read, spark, fmt, paths[source])
            for source, fmt in (("C", "cmi"), ("P", "parquet"), ("F", "bench_arrow_floor"))}
    procs = Processes()
    for fn in read.values():  # warm-up: the index cached, the workers started, the JIT warm
        fn()
    runs = []
    previous = args.order[-1]
    for r in range(args.rounds):
        mode = args.hygiene[r % len(args.hygiene)]
        for source in args.order:
            HYGIENE[mode](spark, paths[source])
            run = {"round": r, "mode": mode, "source": source, "after": previous,
                   **measure(spark, procs, read[source], paths[source])}
            runs.append(run)
            previous = source
            print(json.dumps(run), flush=True)
    spark.stop()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f)
    summarize(runs)


def noop_read(spark, fmt: str, path: str) -> None:
    noop(spark.read.format(fmt).load(path))


def summarize(runs) -> None:
    keys = ["wall", "resident", "jvm_read_mb", "worker_read_mb", "jvm_cpu", "worker_cpu", "driver_cpu",
            "gc_young_n", "gc_young_ms", "gc_old_n", "gc_old_ms"]
    print("\nmode source after  n  " + "  ".join(f"{k:>17}" for k in keys) + "   (median / best)")
    groups = {}
    for run in runs:
        groups.setdefault((run["mode"], run["source"], run["after"]), []).append(run)
    for (mode, source, after), group in sorted(groups.items()):
        cells = [f"{statistics.median(r[k] for r in group):8.2f}/{min(r[k] for r in group):8.2f}" for k in keys]
        print(f"{mode:>4} {source:>6} {after:>5} {len(group):2}  " + "  ".join(cells))
    pids = [tuple(r["workers"]) for r in runs]
    print(f"\nworker pid sets seen: {len(set(pids))}; changes between runs: "
          f"{sum(a != b for a, b in zip(pids, pids[1:]))} of {len(pids) - 1}")


if __name__ == "__main__":
    main()
