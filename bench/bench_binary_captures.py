"""What the binary captures cost a partition against the MQ dump of the same rows (no Spark).

    .venv/bin/python bench/bench_binary_captures.py [--rows 1000000] [--rounds 3] [CHECKOUT ...]

Writes the benchmark's rows (bench/dataset.py, Encoding 273 as TIB/RV requires) as a dmpmqmsg
dump, a TIB/RV capture, a raw MQTT stream and a binary MQGET capture with the first checkout's
writer (default: this one), then, for ``--rounds`` rounds, runs each checkout in turn in a fresh
process: the warm decode (index cached) of each file on one core, best of 5, in CPU seconds (the
machine is shared: CPU time moves less than the clock). Prints each round and the medians, with
each capture's ratio to the dump measured in the same process.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILES = (("dmpmqmsg", "bench.dmp"), ("tibrv", "bench.rv"), ("mqtt", "bench.mqtt"), ("mqget", "bench.mqget"))

WRITE = r'''
import os, sys
sys.path.insert(0, sys.argv[1])
from bench.dataset import write_capture
from cmi_datasource.engine.write import WriteOptions
options = WriteOptions(deterministic_seed="bench", encoding=273)
for fmt, path in zip(sys.argv[4::2], sys.argv[5::2]):
    write_capture(path, int(sys.argv[2]), fmt, options)
'''

DECODE = r'''
import sys, time
sys.path.insert(0, sys.argv[1])
from cmi_datasource import Capture
from cmi_datasource.engine.decode import slice_batches
from cmi_datasource.engine.plan import dataset_slices, whole_run
times = []
for path in sys.argv[2:]:
    capture = Capture.open(path)
    def decode():
        [att] = capture.attachments
        return sum(b.num_rows for s in dataset_slices(capture, att, whole_run(capture, att), 1 << 62)
                   for b in slice_batches(s))
    decode()
    best = 1e9
    for _ in range(5):
        t = time.process_time(); decode(); best = min(best, time.process_time() - t)
    times.append(best)
print(" ".join(map(str, times)))
'''


def run(code: str, *args: str) -> str:
    root = args[0]
    out = subprocess.run([sys.executable, "-c", code, *args], env=dict(os.environ, PYTHONPATH=root), check=True,
                         capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("checkouts", nargs="*", default=[ROOT])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    roots = [os.path.abspath(c) for c in args.checkouts]
    with tempfile.TemporaryDirectory() as tmp:
        paths = [os.path.join(tmp, name) for _, name in FILES]
        run(WRITE, roots[0], str(args.rows), "", *[x for (fmt, _), p in zip(FILES, paths) for x in (fmt, p)])
        seen = {root: [] for root in roots}
        for round_ in range(1, args.rounds + 1):
            for root in roots:
                seen[root].append([float(x) for x in run(DECODE, root, *paths).split()])
                times = seen[root][-1]
                print(f"round {round_} {root}: " + ", ".join(
                    f"{fmt} {t:.3f} s ({t / times[0]:.2f})" for (fmt, _), t in zip(FILES, times)), flush=True)
        for root in roots:
            medians = [statistics.median(r[i] for r in seen[root]) for i in range(len(FILES))]
            print(f"median {root}: " + ", ".join(f"{fmt} {t:.3f} s ({t / medians[0]:.2f} of the dump)"
                                                   for (fmt, _), t in zip(FILES, medians)))


if __name__ == "__main__":
    main()
