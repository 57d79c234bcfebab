"""The write's three kernels, their C twins against numba's (issue 30), in one run, no Spark:

    .venv/bin/python bench/bench_write_kernels.py [rows] [payload MB]

  x_lines         dmpmqmsg's X lines of a payload (``hex_lines._x_lines``): the payload in messages
                  of 32 KiB, 25 bytes a line (dmpmqmsg's width);
  put_high_bytes  a numeric column of 8 bytes, then of 5, into rows of 64 bytes
                  (``sas_numbers._put_high_bytes``), big-endian (IBM) and little-endian;
  put_padded      a character column of 20 bytes (values of 0 to 20 UTF-8 bytes) into the same rows
                  (``strings._put_padded``).

Each is timed best of 5 on one thread, after a warm-up call (numba's compile or cache load is not
timed), and the two outputs are compared byte for byte before any time is printed.
"""
from __future__ import annotations

import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from bench.common import best_of  # noqa: E402
from cmi_datasource.arrow import strings  # noqa: E402
from cmi_datasource.compiled import Kernel  # noqa: E402
from cmi_datasource.payload import sas_numbers  # noqa: E402
from cmi_datasource.transports.mq import hex_lines  # noqa: E402

MESSAGE = 32 << 10
ROW_LENGTH = 64


def _both(name: str, kernel: Kernel, calls, outputs) -> None:
    """Time ``calls(function)`` with the C twin and with numba's kernel; ``outputs()`` is compared."""
    twin = kernel.native_function()
    if twin is None:
        raise SystemExit("cmi_datasource._native is not built (or CMI_NATIVE=0): nothing to compare")
    results = []
    for function in (twin, kernel.compiled()):
        seconds = best_of(lambda f=function: calls(f), 5)
        results.append((seconds, outputs()))
    if any(not np.array_equal(a, b) for a, b in zip(results[0][1], results[1][1])):
        raise SystemExit(f"{name}: the C kernel's output differs from numba's")
    (c, _), (numba, _) = results
    print(f"{name:<24} C {c * 1e3:8.1f} ms   numba {numba * 1e3:8.1f} ms   numba / C {numba / c:5.2f}")


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    megabytes = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    rng = np.random.default_rng(7)

    payload = rng.integers(0, 256, megabytes << 20, dtype=np.uint8)
    width = 25
    per_message = -(-MESSAGE // width) * 3 + 2 * MESSAGE
    text = np.empty(per_message * -(-len(payload) // MESSAGE), np.uint8)

    def hex_calls(function):
        for i, start in enumerate(range(0, len(payload), MESSAGE)):
            function(payload[start:start + MESSAGE], width, text[i * per_message:(i + 1) * per_message],
                     hex_lines._UPPER_DIGITS)

    _both(f"x_lines {megabytes} MB", hex_lines._x_lines, hex_calls, lambda: [text])

    flat = np.zeros(rows * ROW_LENGTH, np.uint8)
    bits = rng.normal(0, 1e6, rows).view(np.uint64)
    for number_width in (8, 5):
        for big_endian in (True, False):
            _both(f"put_high_bytes w{number_width} {'BE' if big_endian else 'LE'}", sas_numbers._put_high_bytes,
                  lambda f, w=number_width, b=big_endian: f(bits, flat, ROW_LENGTH, 3, w, b), lambda: [flat])

    words = [w.encode() for w in ("", "a", "Zürich", "東京 station", "twenty bytes exactly", "naïve", "x" * 13)]
    lengths = np.array([len(w) for w in words])[rng.integers(0, len(words), rows)]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    data = np.resize(np.frombuffer(b"".join(words), np.uint8), int(offsets[-1]))  # which bytes: no matter
    _both("put_padded w20", strings._put_padded, lambda f: f(data, offsets, 0x20, flat, ROW_LENGTH, 30, 20),
          lambda: [flat])


if __name__ == "__main__":
    main()
