"""A warm read's own work, outside Spark: every partition of a capture read on this thread, as
Spark's tasks read them (``reading.read_part``), timed in CPU seconds per million rows: what cmi
adds on top of Spark's cost of taking the batches (issue 30, targets 3 and 4).

    PYTHONPATH=CHECKOUT .venv/bin/python bench/bench_read_cpu.py [CAPTURE ...] [--mqget-rows 5000000]
                                                                 [--rounds 2] [--profile]

Each CAPTURE is planned first (its plan then kept, as in a warm read), then read ``--rounds`` times.
``--mqget-rows``: also a binary MQGET capture of the benchmark's rows, written into a temporary
folder as section 4 of ``make bench`` writes it. ``--profile``: the last round of each under
cProfile, its 14 costliest functions. PYTHONPATH decides which checkout is measured.
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import resource
import sys
import tempfile
import time

# The script's folder, first on sys.path, would make ``bench`` its bench.py; the checkout holding
# it goes last, so that PYTHONPATH's checkout is the one measured.
HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0]) == HERE:
    del sys.path[0]
sys.path.append(os.path.dirname(HERE))

from bench.dataset import write_capture  # noqa: E402
from cmi_datasource.engine import reading  # noqa: E402
from cmi_datasource.engine.load import Load  # noqa: E402
from cmi_datasource.engine.options import ReadOptions  # noqa: E402


PROFILE = os.path.join(tempfile.gettempdir(), "bench_read_cpu.prof")


def cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def read_all(load: Load, parts) -> int:
    rows = 0
    for part in parts:
        for batch in reading.read_part(load, part):
            rows += batch.num_rows
    return rows


def measure(path: str, rounds: int, profile: bool) -> None:
    load = Load(ReadOptions.parse({"path": path}))
    parts = reading.plan(load).parts or []
    for number in range(rounds):
        if profile and number == rounds - 1:
            cProfile.runctx("read_all(load, parts)", globals(), {"load": load, "parts": parts}, PROFILE)
            pstats.Stats(PROFILE).sort_stats("tottime").print_stats(14)
            continue
        used, started = cpu(), time.perf_counter()
        rows = read_all(load, parts)
        seconds, wall = cpu() - used, time.perf_counter() - started
        print(f"{os.path.basename(path)}: {rows:,} rows in {len(parts)} partitions, one thread: wall {wall:.2f} s, "
              f"CPU {seconds:.2f} s, {seconds / max(rows, 1) * 1e6:.3f} s CPU per million rows")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("captures", nargs="*")
    parser.add_argument("--mqget-rows", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    for path in args.captures:
        measure(path, args.rounds, args.profile)
    if args.mqget_rows:
        with tempfile.TemporaryDirectory(dir="/tmp") as folder:
            measure(write_capture(os.path.join(folder, "bench.mqget"), args.mqget_rows, "mqget"), args.rounds,
                    args.profile)


if __name__ == "__main__":
    main()
