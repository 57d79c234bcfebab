"""The write's SAS encoding alone: the rows the commit encodes (``bench/bench_commit.py``'s spills,
held in memory), encoded into observations on the calling thread, chunk by chunk as the commit's
encoder cuts them, the CPU of each round measured (issue 30, target 5).

    PYTHONPATH=CHECKOUT .venv/bin/python bench/bench_encode.py --spills DIR [--rows 5000000] [--parts 3]
                                                               [--rounds 5] [--profile]

Each round encodes every chunk three times, each time into one reused buffer: all the columns,
the numeric columns alone and the character columns alone; it prints the calling thread's CPU
(user + system) of each. The spills are read once beforehand (not timed). ``--profile``: one more
round of all the columns under cProfile. Only ``encode_observations`` is called, so that any
checkout can be measured with this script (PYTHONPATH decides which).
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import resource
import statistics
import sys

# As in bench_commit.py: the checkout on PYTHONPATH is the one measured.
HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0]) == HERE:
    del sys.path[0]
sys.path.append(os.path.dirname(HERE))

from bench.bench_commit import spill  # noqa: E402


def thread_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_THREAD)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--parts", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--spills", required=True, help="the spills' folder (made there when missing)")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()

    import numpy as np
    import pyarrow as pa
    from cmi_datasource.charsets import code_page
    from cmi_datasource.encoding import float_format
    from cmi_datasource.payload.sas_dataset_writer import (DatasetEncoder, encode_observations, merge_lengths,
                                                           plan_variables)
    from cmi_datasource.spark.writer import _spill_batches

    os.makedirs(args.spills, exist_ok=True)
    write, messages = spill(args.rows, args.parts, args.spills)
    codec = write.options.codec
    codepage, fmt = code_page(codec.ccsid), float_format(codec.encoding)
    lengths: dict = {}
    for m in messages:
        lengths = merge_lengths(lengths, m.lengths)
    variables = plan_variables(write.arrow_schema, lengths, codepage, codec.truncate, fmt, codec.valid_var_name)
    encoder = DatasetEncoder(variables, codepage, fmt, codec.wire, codec.max_message_bytes, codec.truncate)
    batches = [b for m in sorted(messages, key=lambda m: m.partition_id) for b in _spill_batches(m.spill_path)]
    chunks = [(first, pa.Table.from_batches(group) if len(group) > 1 else group[0])
              for first, group in encoder._chunks(batches)]
    buffer = np.zeros(max(t.num_rows for _, t in chunks) * encoder.obs_length, np.uint8)
    kinds = {"all": list(range(len(variables))),
             "numbers": [i for i, v in enumerate(variables) if v.is_numeric],
             "strings": [i for i, v in enumerate(variables) if not v.is_numeric]}

    def encode(columns) -> None:
        chosen = [variables[i] for i in columns]
        for first, table in chunks:
            encode_observations(table.select(columns), chosen, codepage, fmt, encoder.obs_length, codec.truncate,
                                first, buffer[:table.num_rows * encoder.obs_length])

    print(f"{sum(t.num_rows for _, t in chunks):,} rows in {len(chunks)} chunks of {encoder.obs_length}-byte "
          f"observations; CPU s of the calling thread")
    spent: dict = {kind: [] for kind in kinds}
    for round_ in range(args.rounds):
        for kind, columns in kinds.items():
            before = thread_cpu()
            encode(columns)
            spent[kind].append(thread_cpu() - before)
        print(f"round {round_ + 1}: " + ", ".join(f"{kind} {s[-1]:.3f}" for kind, s in spent.items()), flush=True)
    warm = 1 if args.rounds > 1 else 0  # the first round pays first calls
    print("rounds %d-%d, min / median: " % (warm + 1, args.rounds)
          + ", ".join(f"{kind} {min(s[warm:]):.3f} / {statistics.median(s[warm:]):.3f}" for kind, s in spent.items()))
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        encode(kinds["all"])
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(20)


if __name__ == "__main__":
    main()
