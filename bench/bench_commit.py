"""The write's commit alone: the benchmark's rows spilled as Spark's tasks spill them, then turned
into one dmpmqmsg dump by ``StagedWrite.deliver`` (issue 30, target 5).

    PYTHONPATH=CHECKOUT .venv/bin/python bench/bench_commit.py [--rows 5000000] [--parts 3]
                                                               [--rounds 3] [--one-thread] [--profile]
                                                               [--spills DIR] [--floors]

The rows of ``bench/dataset.py`` are spilled once to ``--parts`` Arrow stream files of 10,000-row
batches (what Spark hands a task) in a temporary folder, with the string widths the tasks report.
Then each round times the commit of those spills into a new dump: wall seconds and the process's
user and system CPU (all threads, and the calling thread's alone: it draws the messages, holding
the GIL, while the work threads encode and format and another thread writes). The first round is
a fresh process's first commit (imports, kernels, thread pool); the best of the others is the
warm figure. ``--one-thread``: the work threads off (``threads.WORK_THREADS = 1``).
``--profile``: the last round under cProfile (its calling thread only). ``--spills DIR``: the
spills kept in DIR and taken from there when it holds them for as many rows and parts (so that
checkouts are compared on the same files, and a round starts in seconds). PYTHONPATH decides
which checkout is measured.

``--floors``: after the rounds, what each of the commit's stages costs alone, against which the
commit is judged (wall, user and system s of each; the stages run one after the other):

- ``read``: the spills read (the batches drawn, as the commit draws them);
- ``read + encode``: that, and the SAS rows encoded and cut into observation payloads;
- ``+ messages``: that, and the messages emitted and given their MQMDs (what the dump writer draws);
- ``hex, 1 thread`` / ``hex, 2 threads``: the text of every message's record (``x_records``, heads
  made beforehand) from payloads held in memory, in the commit's groups, on 1 and 2 work threads;
- ``write``: as many bytes as the dump, in chunks of the size of a group's text, from one buffer
  made beforehand, written by the commit's writer thread into a new file beside it (page cache).
"""
from __future__ import annotations

import argparse
import cProfile
import json
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
    """The rows cut into ``parts`` spills as the tasks write them, and their commit messages; spills
    of ``n`` rows in ``parts`` already in ``folder`` are taken as they are."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import from_arrow_schema
    from cmi_datasource.charsets import code_page
    from cmi_datasource.engine.options import SaveOptions
    from cmi_datasource.payload.sas_dataset_writer import merge_lengths, string_lengths
    from cmi_datasource.spark.writer import CmiCommitMessage, StagedWrite
    write = StagedWrite(SaveOptions.parse({"path": os.path.join(folder, "out"), "dataset": "BENCH.ROWS"}),
                        from_arrow_schema(SCHEMA))
    described = os.path.join(folder, "spills.json")
    if os.path.exists(described):
        with open(described) as f:
            kept = json.load(f)
        if kept["rows"] == n and len(kept["parts"]) == parts:
            return write, [CmiCommitMessage(part, os.path.join(folder, name), rows, lengths)
                           for part, (name, rows, lengths) in enumerate(kept["parts"])]
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
    with open(described, "w") as f:
        json.dump({"rows": n, "parts": [[os.path.basename(m.spill_path), m.rows, m.lengths] for m in messages]}, f)
    return write, messages


class Timed:
    """Wall, user and system seconds of the block (user and system: the process's, all threads)."""

    def __init__(self, what: str):
        self.what = what

    def __enter__(self) -> "Timed":
        self.usage, self.start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        wall, usage = time.perf_counter() - self.start, resource.getrusage(resource.RUSAGE_SELF)
        if exc[0] is None:
            print(f"  {self.what:<32} {wall:6.2f} s wall {usage.ru_utime - self.usage.ru_utime:6.2f} s user "
                  f"{usage.ru_stime - self.usage.ru_stime:6.2f} s system", flush=True)


def floors(write, messages, folder: str) -> None:
    """The commit's stages alone (see the module's text)."""
    import numpy as np
    from cmi_datasource import threads
    from cmi_datasource.charsets import code_page
    from cmi_datasource.cmi.emit import IdSource, header_groups
    from cmi_datasource.engine.write import stream_messages
    from cmi_datasource.spark.writer import _spill_batches
    from cmi_datasource.threads import ordered_map, written_behind
    from cmi_datasource.transports.mq import dmpmqmsg, hex_lines
    from cmi_datasource.transports.mq.transport import to_mqmd
    parts = sorted(messages, key=lambda m: m.partition_id)
    codec = write.options.codec

    def messages_drawn():
        attachments = write._dataset_attachments(parts)
        groups = header_groups(attachments, code_page(codec.ccsid), codec.wire, codec.max_message_bytes)
        ids = IdSource(codec.deterministic_seed)
        return (m for group in groups for m in stream_messages(group, codec, ids))

    print("floors: each stage alone")
    with Timed("read"):
        for m in parts:
            for _ in _spill_batches(m.spill_path):
                pass
    with Timed("read + encode"):
        for attachment in write._dataset_attachments(parts):
            for _ in attachment.payloads:
                pass
    with Timed("read + encode + messages"):
        for m in messages_drawn():
            to_mqmd(m)
    # The records' heads and payloads held in memory, in the commit's groups.
    groups, group, size = [], ([], []), 0
    for index, m in enumerate(messages_drawn(), start=1):
        group[0].append(b"* Index %d\n%s\n" % (index, dmpmqmsg._write_attribute_lines(to_mqmd(m))))
        group[1].append(m.payload)
        size += len(m.payload)
        if size >= dmpmqmsg.FORMAT_GROUP_BYTES:
            groups.append(group)
            group, size = ([], []), 0
    if group[0]:
        groups.append(group)
    width = dmpmqmsg.DEFAULT_DATA_WIDTH
    total = 0
    joined = []
    for heads, payloads in groups:
        head_sizes = np.fromiter(map(len, heads), np.int64, len(heads))
        payload_sizes = np.fromiter(map(len, payloads), np.int64, len(payloads))
        lines = np.maximum(-(-payload_sizes // width), 1)
        joined.append((np.frombuffer(b"".join(heads), np.uint8), np.cumsum(head_sizes),
                       np.frombuffer(b"".join(payloads), np.uint8), np.cumsum(payload_sizes),
                       int(head_sizes.sum() + 2 * payload_sizes.sum() + 3 * lines.sum() + len(heads))))
        total += joined[-1][-1]

    def kernel(group) -> int:
        heads, head_ends, payloads, payload_ends, size = group
        out = np.empty(size, np.uint8)
        return hex_lines._x_records(heads, head_ends, payloads, payload_ends, width, out, hex_lines._UPPER_DIGITS)

    saved = threads.WORK_THREADS
    try:
        for work_threads in (1, 2):
            threads.WORK_THREADS = work_threads
            with Timed(f"hex, {work_threads} thread{'s' if work_threads > 1 else ''} (x_records)"):
                for _ in ordered_map(lambda g: len(hex_lines.x_records(g[0], g[1], width)), groups):
                    pass
            with Timed(f"hex, {work_threads} thread{'s' if work_threads > 1 else ''} (kernel, joined)"):
                for _ in ordered_map(kernel, joined):
                    pass
    finally:
        threads.WORK_THREADS = saved
    chunk = total // len(groups)
    buffer = np.random.default_rng(0).integers(48, 58, chunk, np.uint8).tobytes()
    target = os.path.join(folder, "floor.dmp")
    with Timed(f"write {total / 1e6:.0f} MB, {chunk >> 10} KiB a piece"):
        with open(target, "wb") as out:
            written_behind(out, (buffer if i < total // chunk else buffer[:total % chunk]
                                 for i in range(total // chunk + 1)))
    os.remove(target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--parts", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--one-thread", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--spills", help="a folder the spills are kept in, and taken from when there")
    parser.add_argument("--floors", action="store_true", help="each stage of the commit timed alone")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cmi-bench-commit-") as folder:
        if args.spills:
            os.makedirs(args.spills, exist_ok=True)
        write, messages = spill(args.rows, args.parts, args.spills or folder)
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
            thread_before = resource.getrusage(resource.RUSAGE_THREAD)
            before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            if profile:
                profile.enable()
            write.deliver(messages, staging, final)
            if profile:
                profile.disable()
            wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF)
            thread_after = resource.getrusage(resource.RUSAGE_THREAD)
            walls.append(wall)
            print(f"round {round_ + 1}: {wall:.2f} s wall, {after.ru_utime - before.ru_utime:.2f} s user, "
                  f"{after.ru_stime - before.ru_stime:.2f} s system (the calling thread: "
                  f"{thread_after.ru_utime - thread_before.ru_utime:.2f} s user, "
                  f"{thread_after.ru_stime - thread_before.ru_stime:.2f} s system); "
                  f"dump {os.path.getsize(final) / 1e6:.0f} MB", flush=True)
            os.remove(final)
            if profile:
                pstats.Stats(profile).sort_stats("tottime").print_stats(25)
        if len(walls) > 1:
            print(f"first {walls[0]:.2f} s, best warm {min(walls[1:]):.2f} s")
        if args.floors:
            floors(write, messages, folder)


if __name__ == "__main__":
    main()
