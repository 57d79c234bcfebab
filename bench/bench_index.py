"""The message index of a dump never seen, in a fresh process: how long planning takes and the
process's memory high-water (issue 30, targets 2 and 6 of ``make bench``).

    .venv/bin/python bench/bench_index.py DUMP [DUMP ...] [--profile]

Each DUMP is ``touch``ed first (a new ctime: a new index key, so the index is built, not loaded
from the disk cache), then planned by ``reading.plan`` in a child process that reports its time,
its CPU time (user and system, all threads: the machine is shared, wall times are noisy) and its
``ru_maxrss``. Runs alternate between dumps when several are given. ``--steps``: also the CPU
of the scan, of storing the index and of the plan, each alone. ``--warm``: the same, in a second process
that finds the index the first stored in the disk cache (what a warm read's planning does).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, resource, sys, time
path, profile, steps_wanted = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1"
import cmi_datasource
from cmi_datasource.engine import reading, index
from cmi_datasource.transports import capture_format
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
fmt = capture_format("dmpmqmsg")
started = time.perf_counter()
def cpu():
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime
steps = {}
if profile:  # the index alone, profiled; the plan then finds it in memory
    import cProfile, pstats
    cProfile.run("index.indexed(path, fmt)", "/tmp/bench_index.prof")
    pstats.Stats("/tmp/bench_index.prof").sort_stats("tottime").print_stats(18)
elif steps_wanted:  # CPU of each step: the scan, storing the index, the plan (index in memory)
    from cmi_datasource import cache
    at = cpu()
    messages = index.scan(path, fmt)
    steps["scan_cpu_s"], at = cpu() - at, cpu()
    key = index.index_key(path, fmt)
    cache.store(key, index.IndexColumns.of(messages, path))
    index._MEMORY.put(key, messages)
    steps["store_cpu_s"], at = cpu() - at, cpu()
plan_at = cpu()
plan = reading.plan(reading.load_of([path]))
if steps:
    steps["plan_cpu_s"] = cpu() - plan_at
planned = time.perf_counter()
print(json.dumps({"plan_s": planned - started, "cpu_s": cpu(), **steps,
                  "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "imported_mb": before / 1024}))
"""


def run_once(path: str, profile: bool, env: dict, warm: bool = False, steps: bool = False) -> dict:
    path = os.path.abspath(path)  # the child runs elsewhere (main)
    os.utime(path)  # a new ctime: the index key changes
    runs = 2 if warm else 1  # warm: the second process finds the index the first stored on disk
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-c", CHILD, path, "1" if profile else "0",
                               "1" if steps else "0"], env=env, cwd=env["CMI_DATASOURCE_CACHE"],
                              capture_output=True, text=True, check=True)
    if profile:
        print(done.stdout)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dumps", nargs="+")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--warm", action="store_true", help="plan with the index already in the disk cache")
    parser.add_argument("--steps", action="store_true", help="CPU of the scan, storing the index and the plan")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        # The child imports the checkout PYTHONPATH names (this one's when unset), and runs in the
        # empty cache directory: ``python -c`` puts its working directory first on sys.path, so
        # run in a checkout it would import that checkout whatever PYTHONPATH says.
        env = dict(os.environ, CMI_DATASOURCE_CACHE=cache)
        env.setdefault("PYTHONPATH", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        for _ in range(args.repeat):
            for path in args.dumps:
                print(path, json.dumps(run_once(path, args.profile, env, args.warm, args.steps)), flush=True)


if __name__ == "__main__":
    main()
