"""What mapping a local dump (mmap) instead of reading it into buffers would save a warm read, in CPU.

    PYTHONPATH=CHECKOUT .venv/bin/python bench/bench_mmap_read.py [DUMP] [--rounds 4]

A dump's partitions read their text a piece at a time (``dump_spans.read_spans_in_bulk``: 8 MiB
read into a reused buffer, then decoded by the hex kernel). Here every partition of DUMP is read
on this thread as Spark's tasks read them (``reading.read_part``, as ``bench_read_cpu.py`` does),
in rounds that take each way in turn:

- **read**: the project's code as it is (the text copied from the page cache into the buffer);
- **mmap**: the same pieces decoded straight from a read-only mapping of the piece
  (``MAP_POPULATE``: its pages mapped by the one ``mmap`` call, not fault by fault), the buffer
  and its copy gone. Only here, for the measure: a file cut short while mapped would kill the
  process with SIGBUS, which the project's reads must never do.

Printed per round: user and system CPU seconds of the whole read, per million rows.
"""
from __future__ import annotations

import argparse
import mmap
import os
import resource
import statistics
import sys
import time
from typing import Iterator, Optional, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0]) == HERE:
    del sys.path[0]
sys.path.append(os.path.dirname(HERE))

import numpy as np  # noqa: E402

from bench.bench_read_cpu import read_all  # noqa: E402
from cmi_datasource.engine import reading  # noqa: E402
from cmi_datasource.engine.load import Load  # noqa: E402
from cmi_datasource.engine.options import ReadOptions  # noqa: E402
from cmi_datasource.messages import MessageSpan  # noqa: E402
from cmi_datasource.transports.base import SpanPayloads  # noqa: E402
from cmi_datasource.transports.mq import dump_spans, transport  # noqa: E402

PROJECT_READ = transport.read_dump_spans


def mapped_dump_spans(spans: Sequence[MessageSpan], heads: Sequence[int], room: int = 0,
                      piece_bytes: Optional[int] = None) -> Iterator[SpanPayloads]:
    """``read_dump_spans`` with each piece's text mapped rather than read (no checks of a file
    cut short: a measure only)."""
    piece_bytes = dump_spans.PIECE_BYTES if piece_bytes is None else piece_bytes
    heads_all = np.asarray(heads, dtype=np.int64)
    scratch = None
    files = {}
    try:
        for piece in dump_spans.span_runs(spans, piece_bytes):
            chosen = [spans[i] for i in piece]
            source = chosen[0][0]
            if source not in files:
                files[source] = os.open(source, os.O_RDONLY)
            base, size = chosen[0][2], chosen[-1][3] - chosen[0][2]
            aligned = base - base % mmap.ALLOCATIONGRANULARITY
            mapped = mmap.mmap(files[source], size + base - aligned, flags=mmap.MAP_SHARED | mmap.MAP_POPULATE,
                               prot=mmap.PROT_READ, offset=aligned)
            view = memoryview(mapped)[base - aligned:]
            payloads = dump_spans._decode_piece(view, chosen, heads_all[piece.start:piece.stop], base, room,
                                                scratch, dump_spans._decode_spans, dump_spans.parse_dump)
            scratch = payloads.buffer
            yield payloads
            view.release()
            mapped.close()
    finally:
        for fd in files.values():
            os.close(fd)


def cpu():
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime, used.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dump", nargs="?", default="/work/benchdata/bench5m.dmp")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    load = Load(ReadOptions.parse({"path": args.dump}))
    parts = reading.plan(load).parts or []
    ways = {"read": PROJECT_READ, "mmap": mapped_dump_spans}
    results = {name: [] for name in ways}
    for number in range(args.rounds + 1):  # the first round warms up
        for name, way in ways.items():
            transport.read_dump_spans = way
            (u0, s0), started = cpu(), time.perf_counter()
            rows = read_all(load, parts)
            (u1, s1), wall = cpu(), time.perf_counter() - started
            per = 1e6 / rows
            line = (f"round {number} {name:>4}: {rows:,} rows, {len(parts)} partitions: wall {wall:.2f} s, "
                    f"user {(u1 - u0):.2f} s, system {(s1 - s0):.2f} s; CPU per million rows "
                    f"{(u1 - u0 + s1 - s0) * per:.3f} s (system {(s1 - s0) * per:.3f})")
            print(line + (" (warm-up)" if number == 0 else ""), flush=True)
            if number:
                results[name].append((u1 - u0, s1 - s0, rows))
    transport.read_dump_spans = PROJECT_READ
    for name, runs in results.items():
        total = [(u + s) / r * 1e6 for u, s, r in runs]
        system = [s / r * 1e6 for u, s, r in runs]
        print(f"{name}: CPU per million rows median {statistics.median(total):.3f} s "
              f"(range {min(total):.3f}-{max(total):.3f}), system median {statistics.median(system):.3f} s")
    saved = [(a[0] + a[1] - b[0] - b[1]) / a[2] * 5e6 for a, b in zip(results["read"], results["mmap"])]
    print("saved by mmap per 5M rows, round by round: " + ", ".join(f"{s:.3f}" for s in saved) + " s CPU")


if __name__ == "__main__":
    main()
