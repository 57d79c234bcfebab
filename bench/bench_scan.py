"""The index scan's cost per message of a dmpmqmsg dump, on one core (issue 30, target 2).

    PYTHONPATH=CHECKOUT .venv/bin/python bench/bench_scan.py DUMP [--chunks 10] [--rounds 5] [--profile]

The first ``--chunks`` chunks of DUMP (16 MiB each) are read once, then parsed and kept as the
message index keeps them (``DmpmqmsgFormat.chunk_reading`` of ``index.IndexEntries``: plain
records made into entries from their parts, any other message by ``unwrap`` and ``index.entry``)
on this thread, the attribute-line cache emptied before each pass as in a first read: CPU
seconds of the best pass and microseconds a message, for the whole of it ("full"), for
``parse_dump`` alone, each message made whole ("parse") and for the C walker over the plain
records alone, no message made ("walker").
No file reading, threads or renumbering: what is left is the Python per message and the kernels.
PYTHONPATH decides which checkout is measured. ``--profile``: one pass under cProfile instead.
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import resource

import numpy as np

from cmi_datasource.compiled import native_module
from cmi_datasource.containers import read_in_chunks
from cmi_datasource.engine import index
from cmi_datasource.transports import capture_format
from cmi_datasource.transports.mq import dmpmqmsg


def cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dump")
    parser.add_argument("--chunks", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    fmt = capture_format("dmpmqmsg")
    transport = fmt.transport
    native = native_module()
    chunks = []
    for chunk in read_in_chunks(args.dump, dmpmqmsg.READ_CHUNK_BYTES, dmpmqmsg.start_of_last_message):
        if len(chunks) == args.chunks:
            break
        chunks.append(chunk)

    def messages(parse=dmpmqmsg.parse_dump):
        dmpmqmsg._ATTRIBUTE_CACHE.clear()  # a first read: only what repeats within the pass is cached
        for base, data, stop in chunks:
            yield from parse(data, args.dump, base, 0, stop=stop)

    parse_for_index, kept = fmt.chunk_reading(index.IndexEntries(transport))

    def full() -> int:
        return sum(1 for message in messages(parse_for_index) if kept(message))

    def parse() -> int:
        return sum(1 for _ in messages())

    records = np.empty((dmpmqmsg.PLAIN_RECORDS_AT_A_TIME, 4), dtype=np.int64)

    def walker() -> int:
        """The C walker alone over every record it takes (``_native.plain_records``: bounds found,
        hex decoded), no message made: what a scan with no Python object a message would cost."""
        count = 0
        for _, data, stop in chunks:
            view, out = np.frombuffer(data, dtype=np.uint8), np.empty(len(data) // 2, dtype=np.uint8)
            pos = data.find(b"\nA ") + 1
            while 0 < pos < stop:
                taken, pos = native.plain_records(view, pos, stop, out, dmpmqmsg.PLAIN_BYTES_AT_A_TIME, records)
                if not taken:
                    break
                count += taken
        return count

    full()  # imports, kernels and memory first touched
    if args.profile:
        cProfile.runctx("full()", globals(), {"full": full}, "/tmp/bench_scan.prof")
        pstats.Stats("/tmp/bench_scan.prof").sort_stats("tottime").print_stats(25)
        return
    best = {}
    count = 0
    for _ in range(args.rounds):
        for name, work in (("full", full), ("parse", parse)) + ((("walker", walker),) if native else ()):
            at = cpu()
            count = work()
            best[name] = min(best.get(name, float("inf")), cpu() - at)
    print(f"{count} messages: " + ", ".join(f"{name} {seconds:.3f} s CPU, {seconds / count * 1e6:.1f} us a message"
                                            for name, seconds in best.items()))


if __name__ == "__main__":
    main()
