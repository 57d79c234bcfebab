"""The row kernels of a warm read on the benchmark's rows, no Spark: what each costs per million rows.

    PYTHONPATH=CHECKOUT .venv/bin/python bench/bench_row_kernels.py [rows] [--rounds 7]

The benchmark's observations (bench/dataset.py: 8 numerics, 4 character fields of 1-40 UTF-8
bytes, 131 bytes a row) are encoded once by the writer, then decoded in batches of 30,000 rows, as
a piece of a dump gives them (``dump_spans.PIECE_BYTES`` of text):

  numbers  ``sas_numbers.decode_number_fields`` of the 8 numerics;
  strings  ``strings.string_fields`` of the 4 character fields (trimmed, gathered, UTF-8 checked);
  both     numbers, then strings, of each batch: the strings read rows the numbers have just
           brought into the caches. Were both near numbers + strings, a kernel reading each row once
           for both would save nothing of the rows' reading (issue 30).

The rows (``rows``, default 500,000: 65 MB, more than the caches hold) are streamed from memory, as
after a piece's hex decode and CRC-32. CPU seconds per million rows, the median and range of
``--rounds``; the C kernels run (``CMI_NATIVE=0``: numba's). PYTHONPATH decides which checkout is
measured: run two alternately to compare them.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
import pyarrow as pa

# The script's folder, first on sys.path, would make ``bench`` its bench.py; the checkout holding
# it goes last, so that PYTHONPATH's checkout is the one measured (as bench_read_cpu.py).
HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0]) == HERE:
    del sys.path[0]
sys.path.append(os.path.dirname(HERE))
from bench.dataset import SCHEMA, batches  # noqa: E402
from cmi_datasource.arrow.strings import string_fields  # noqa: E402
from cmi_datasource.charsets import code_page  # noqa: E402
from cmi_datasource.encoding import FloatFormat  # noqa: E402
from cmi_datasource.payload.sas_dataset_writer import encode_observations, plan_variables, string_lengths  # noqa: E402
from cmi_datasource.payload.sas_numbers import decode_number_fields  # noqa: E402

BATCH_ROWS = 30_000


def benchmark_rows(count: int):
    """(rows as a (count, row length) uint8 matrix, numeric (offsets, widths), character (offsets, widths))."""
    codepage = code_page(1208)
    table = pa.Table.from_batches(list(batches(count)), schema=SCHEMA)
    variables = plan_variables(SCHEMA, string_lengths(table, codepage), codepage, fmt=FloatFormat.IEEE_LITTLE)
    obs_length = sum(v.length for v in variables)
    rows = np.frombuffer(encode_observations(table, variables, codepage, FloatFormat.IEEE_LITTLE, obs_length),
                         np.uint8).reshape(count, obs_length)
    numeric = [v for v in variables if v.is_numeric]
    character = [v for v in variables if not v.is_numeric]
    return (rows, ([v.offset for v in numeric], [v.length for v in numeric]),
            ([v.offset for v in character], [v.length for v in character]))


def cpu_per_million(decode, rows: np.ndarray) -> float:
    started = time.process_time()
    for at in range(0, len(rows), BATCH_ROWS):
        decode(rows[at:at + BATCH_ROWS])
    return (time.process_time() - started) / len(rows) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rows", type=int, nargs="?", default=500_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    rows, (number_offsets, number_widths), (text_offsets, text_widths) = benchmark_rows(args.rows)
    codepage = code_page(1208)
    kernels = {
        "numbers": lambda piece: decode_number_fields(piece, FloatFormat.IEEE_LITTLE, number_offsets, number_widths),
        "strings": lambda piece: string_fields(piece, codepage, text_offsets, text_widths),
    }
    kernels["both"] = lambda piece: (kernels["numbers"](piece), kernels["strings"](piece))
    for decode in kernels.values():  # numba's compile or cache load, the first allocations: not timed
        decode(rows[:BATCH_ROWS])
    times = {name: [] for name in kernels}
    for _ in range(args.rounds):
        for name, decode in kernels.items():
            times[name].append(cpu_per_million(decode, rows))
    for name, seconds in times.items():
        print(f"{name:<8} {statistics.median(seconds):.4f} s CPU per million rows "
              f"(range {min(seconds):.4f}-{max(seconds):.4f}, {args.rounds} rounds of {args.rows:,} rows)")


if __name__ == "__main__":
    main()
