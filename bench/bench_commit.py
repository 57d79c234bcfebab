"""The write's commit alone: the benchmark's rows spilled as Spark's tasks spill them, then turned
into one dmpmqmsg dump by ``StagedWrite.deliver`` (issue 30, target 5).

    PYTHONPATH=CHECKOUT .venv/bin/python bench/bench_commit.py [--rows 5000000] [--parts 3]
                                                               [--rounds 3] [--one-thread] [--profile]

The rows of ``bench/dataset.py`` are spilled once to ``--parts`` Arrow stream files of 10,000-row
batches (what Spark hands a task) in a temporary folder, with the string widths the tasks report.
Then each round times the commit of those spills into a new dump: wall seconds and the process's
user and system CPU (all threads). The first round is a fresh process's first commit (imports,
kernels, thread pool); the best of the others is the warm figure. ``--one-thread``: the work
threads off (``threads.WORK_THREADS = 1``). ``--profile``: the last round under cProfile (its
calling thread only). PYTHONPATH decides which checkout is measured.
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

from bench.dataset import SCHEMA, batches  # noqa: E402

SPARK_BATCH_ROWS = 10_000  # spark.sql.execution.arrow.maxRecordsPerBatch's default


def spill(n: int, parts: int, folder: str):
    """The rows cut into ``parts`` spills as the tasks write them, and their commit messages."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import from_arrow_schema
    from cmi_datasource.charsets import code_page
    from cmi_datasource.engine.options import SaveOptions
    from cmi_datasource.payload.sas_dataset_writer import merge_lengths, string_lengths
    from cmi_datasource.spark.writer import CmiCommitMessage, StagedWrite
    write = StagedWrite(SaveOptions.parse({"path": os.path.join(folder, "out"), "dataset": "BENCH.ROWS"}),
                        from_arrow_schema(SCHEMA))
    codepage = code_page(write.options.codec.ccsid)
    table = pa.Table.from_batches(list(batches(n)), SCHEMA)
    messages = []
    for part in range(parts):
        start, end = n * part // parts, n * (part + 1) // parts
        path = os.path.join(folder, f"part-{part}.arrow")
        lengths: dict = {}
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_stream(sink, write.arrow_schema) as stream:
            for batch in table.slice(start, end - start).to_batches(max_chunksize=SPARK_BATCH_ROWS):
                batch = pa.RecordBatch.from_arrays(batch.columns, schema=write.arrow_schema)
                lengths = merge_lengths(lengths, string_lengths(batch, codepage))
                stream.write_batch(batch)
        messages.append(CmiCommitMessage(part, path, end - start, lengths))
    return write, messages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--parts", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--one-thread", action="store_true")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cmi-bench-commit-") as folder:
        write, messages = spill(args.rows, args.parts, folder)
        if args.one_thread:
            from cmi_datasource import threads
            threads.WORK_THREADS = 1
        staging, final = os.path.join(folder, "staging"), os.path.join(folder, "final.dmp")
        os.makedirs(staging)
        print(f"{args.rows:,} rows in {args.parts} spills; work threads: "
              f"{1 if args.one_thread else __import__('cmi_datasource.threads').threads.WORK_THREADS}")
        walls = []
        for round_ in range(args.rounds):
            profile = cProfile.Profile() if args.profile and round_ == args.rounds - 1 else None
            before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            if profile:
                profile.enable()
            write.deliver(messages, staging, final)
            if profile:
                profile.disable()
            wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF)
            walls.append(wall)
            print(f"round {round_ + 1}: {wall:.2f} s wall, {after.ru_utime - before.ru_utime:.2f} s user, "
                  f"{after.ru_stime - before.ru_stime:.2f} s system; dump {os.path.getsize(final) / 1e6:.0f} MB",
                  flush=True)
            os.remove(final)
            if profile:
                pstats.Stats(profile).sort_stats("tottime").print_stats(25)
        if len(walls) > 1:
            print(f"first {walls[0]:.2f} s, best warm {min(walls[1:]):.2f} s")


if __name__ == "__main__":
    main()
