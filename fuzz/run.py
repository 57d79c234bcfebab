"""``make fuzz``: every fuzz target's atheris harness for a time budget, then a results table.

    .venv/bin/python fuzz/run.py [--seconds 60] [--targets rv,mqtt] [--jobs 1] [--results fuzz/results.md]

For each target: its corpus directory ``fuzz/corpus/<target>/`` is seeded from ``sample_queues/``
(``targets.py`` says how), then ``fuzz/harness.py`` runs on it for the budget, restarted when a
hang or a crash of the process ends it early. Printed and written to the results file: total
inputs, inputs per second and the distinct bugs found per target, with where their inputs are.
The exit status is 1 when any target found a bug.

numba kernels are compiled with bounds checks (``NUMBA_BOUNDSCHECK=1``, cached apart in
``fuzz/.numba-cache``), so an out-of-bounds read is an IndexError instead of garbage or a
segfault; ``--no-boundscheck`` fuzzes the kernels as shipped.
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

MAX_LEN_CAP = 1 << 16
ARTIFACTS = ("crash-", "timeout-", "oom-", "leak-", "slow-unit-")


def seed_corpus(name: str, corpus: str) -> int:
    """Writes the target's seeds into ``corpus``; returns the largest seed's size."""
    from fuzz.targets import seeds_of
    os.makedirs(corpus, exist_ok=True)
    largest = 0
    for seed in seeds_of(name):
        path = os.path.join(corpus, "seed-" + hashlib.sha1(seed).hexdigest())
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.write(seed)
        largest = max(largest, len(seed))
    return largest


def _env(boundscheck: bool) -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if boundscheck:
        env["NUMBA_BOUNDSCHECK"] = "1"
        # Kernels compiled with bounds checks are cached apart from the shipped ones.
        env["NUMBA_CACHE_DIR"] = os.path.join(HERE, ".numba-cache")
    return env


def fuzz_target(name: str, seconds: float, timeout: int, boundscheck: bool, quiet: bool,
                corpus_root: str = os.path.join(HERE, "corpus"),
                crashes_root: str = os.path.join(HERE, "crashes"), out_root: str = os.path.join(HERE, "out")) -> Dict:
    """Runs the target's harness for ``seconds`` on ``corpus_root/<name>``; its totals and bugs."""
    corpus = os.path.join(corpus_root, name)
    out = os.path.join(out_root, name)
    crashes_dir = os.path.join(crashes_root, name)
    os.makedirs(out, exist_ok=True)
    for old in glob.glob(os.path.join(out, "*")):
        os.remove(old)
    from fuzz.targets import ALL_TARGETS
    timeout = ALL_TARGETS[name].timeout or timeout
    largest = seed_corpus(name, corpus)
    max_len = min(max(4096, 2 * largest), MAX_LEN_CAP)
    env = _env(boundscheck)
    env["CMI_FUZZ_CRASHES"] = crashes_dir
    total = {"target": name, "inputs": 0, "seconds": 0.0, "wall": 0.0, "crashes": {}, "aborts": []}
    started = time.monotonic()
    deadline = started + seconds
    run = 0
    while True:
        left = deadline - time.monotonic()
        if left < 1 and run:
            break
        run += 1
        stats_path = os.path.join(out, f"stats-{run}.json")
        log_path = os.path.join(out, f"log-{run}.txt")
        env["CMI_FUZZ_STATS"] = stats_path
        command = [sys.executable, os.path.join(HERE, "harness.py"), name, f"-max_total_time={max(int(left), 1)}",
                   f"-timeout={timeout}", f"-max_len={max_len}", "-rss_limit_mb=4096", "-print_final_stats=1",
                   f"-artifact_prefix={out}{os.sep}", corpus]
        with open(log_path, "w") as log:
            code = subprocess.call(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        stats = {}
        if os.path.exists(stats_path):
            with open(stats_path) as f:
                stats = json.load(f)
        total["inputs"] += stats.get("inputs", 0)
        total["seconds"] += stats.get("seconds", 0.0)
        for sig, found in stats.get("crashes", {}).items():
            known = total["crashes"].setdefault(sig, dict(found, count=0))
            known["count"] += found["count"]
            if found["size"] < known["size"]:
                known.update(size=found["size"], file=found["file"], summary=found["summary"])
        if code != 0:
            artifacts = [p for p in glob.glob(os.path.join(out, "*")) if os.path.basename(p).startswith(ARTIFACTS)]
            with open(log_path, errors="replace") as f:
                tail = f.read()[-3000:]
            kind = next((os.path.basename(p).split("-")[0] for p in artifacts), f"exit {code}")
            total["aborts"].append({"kind": kind, "artifacts": artifacts, "log": log_path, "tail": tail})
            if not quiet:
                print(f"--- {name}: the harness stopped ({kind}); log {log_path}", file=sys.stderr)
            # A harness that dies before fuzzing at all would die again: stop restarting it.
            if not stats.get("inputs") or len(total["aborts"]) >= 20:
                break
    total["wall"] = time.monotonic() - started
    return total


def bugs(result: Dict) -> int:
    return len(result["crashes"]) + len(result["aborts"])


def results_markdown(results: List[Dict], seconds: float, boundscheck: bool) -> str:
    lines = ["# Fuzzing results", "",
             f"`make fuzz`: {seconds:g} s per target, NUMBA_BOUNDSCHECK={'1' if boundscheck else '0'}, "
             f"{time.strftime('%Y-%m-%d %H:%M', time.localtime())}. Inputs/s counts the inputs run by the "
             f"harness over its fuzzing time (start-up and seed warm-up left out).", "",
             "| target | total inputs | inputs/s | fuzzing s | bugs |", "|---|---:|---:|---:|---:|"]
    for r in results:
        rate = r["inputs"] / r["seconds"] if r["seconds"] else 0.0
        lines.append(f"| {r['target']} | {r['inputs']} | {rate:.0f} | {r['seconds']:.0f} | {bugs(r)} |")
    found = [(r["target"], sig, c) for r in results for sig, c in r["crashes"].items()]
    aborted = [(r["target"], a) for r in results for a in r["aborts"]]
    if found or aborted:
        lines += ["", "## Bugs", ""]
        for target, sig, c in found:
            lines.append(f"- {target}: {sig} ({c['count']} inputs): {c['summary']}; smallest input "
                         f"`{os.path.relpath(c['file'], ROOT)}` ({c['size']} bytes)")
        for target, a in aborted:
            where = ", ".join(os.path.relpath(p, ROOT) for p in a["artifacts"]) or os.path.relpath(a["log"], ROOT)
            lines.append(f"- {target}: the harness stopped ({a['kind']}): {where}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    from fuzz.targets import ALL_TARGETS as TARGETS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("FUZZ_SECONDS") or 60))
    parser.add_argument("--targets", default=os.environ.get("FUZZ_TARGETS") or "",
                        help=f"comma-separated, default all: {', '.join(TARGETS)}")
    parser.add_argument("--jobs", type=int, default=1, help="targets fuzzed at once")
    parser.add_argument("--timeout", type=int, default=20, help="seconds one input may take (a hang)")
    parser.add_argument("--results", default=os.path.join(HERE, "results.md"), help="'' to write none")
    parser.add_argument("--no-boundscheck", action="store_true")
    parser.add_argument("--json", help="also write the results as JSON here")
    parser.add_argument("--corpus", default=os.path.join(HERE, "corpus"),
                        help="where each target's corpus directory is (default fuzz/corpus; CI's smoke: seeds only)")
    parser.add_argument("--crashes", default=os.path.join(HERE, "crashes"),
                        help="where each target's bugs are kept (default fuzz/crashes)")
    parser.add_argument("--out", default=os.path.join(HERE, "out"),
                        help="where each target's logs go, emptied first (default fuzz/out)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.targets.split(",") if n.strip()] or list(TARGETS)
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        parser.error(f"unknown targets {unknown}; known: {', '.join(TARGETS)}")
    try:
        import atheris  # noqa: F401
    except ImportError:
        print("atheris is missing: pip install '.[test]' (make fuzz installs it)", file=sys.stderr)
        return 2
    boundscheck = not args.no_boundscheck
    with ThreadPoolExecutor(max(args.jobs, 1)) as pool:
        results = list(pool.map(lambda n: fuzz_target(n, args.seconds, args.timeout, boundscheck, args.quiet,
                                                           args.corpus, args.crashes, args.out), names))
    text = results_markdown(results, args.seconds, boundscheck)
    print(text)
    if args.results:
        with open(args.results, "w") as f:
            f.write(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f)
    return 1 if any(bugs(r) for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
