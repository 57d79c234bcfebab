"""What the ``sapdb`` view costs, against decoding the same fields value by value in Python (no Spark).

    .venv/bin/python bench/bench_sapdb.py [rows]

Writes an RTE stream of a parse and of mass fetches returning ``rows`` rows of five columns
(FIXED(10), FIXED(12,2), CHAR(20), DATE, FLOAT(15)) in data parts of 500 records, then times,
best of 3 after a warm-up, on one core:

  view      sql_parts_table(): RTE frames, packets, shortinfo pairing, every field rendered by the
            compiled kernel into the Arrow table;
  python    the same fields rendered by a plain Python decoder (VDN digits from hex text, bytes.decode),
            the way one would without the kernel; it finds the data parts by their fixed places and
            reads no headers, no shortinfo and builds no table, so it does less than the view.

and prints seconds, rows/s and the ratio view/python measured in the same run.
"""
from __future__ import annotations

import os
import random
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import best_of  # noqa: E402
from cmi_datasource.transports.sapdb.packet import PARAM_INFO, PartSpec, SegmentSpec, build_packet, pack  # noqa: E402
from cmi_datasource.transports.sapdb.rte import rte_frame  # noqa: E402
from cmi_datasource.transports.sapdb.table import sql_parts_table  # noqa: E402

RECORDS_PER_PART = 500
COLUMNS = [(0, 10, 0, 7), (0, 12, 2, 8), (2, 20, 0, 21), (10, 8, 0, 9), (1, 15, 0, 10)]  # type, len, frac, in_out_len


def vdn(value: int, frac: int, size: int) -> bytes:
    """``value`` / 10**frac as a VDN number of ``size`` bytes (positive: enough for the bench)."""
    if value == 0:
        return b"\x80" + bytes(size - 1)
    digits = str(value)
    exponent = len(digits) - frac
    packed = bytes.fromhex(digits.ljust(2 * (size - 1), "0"))
    return bytes([0xC0 + exponent]) + packed


def capture(rows: int, path: str) -> None:
    rng = random.Random(7)
    info = b"".join(pack(PARAM_INFO, {"mode": 2, "io_type": 1, "data_type": t, "frac": f, "length": n,
                                      "in_out_len": size, "bufpos": 1 + sum(c[3] for c in COLUMNS[:i])}, 2)
                    for i, (t, n, f, size) in enumerate(COLUMNS))
    parse_id = bytes.fromhex("00000001 00000101 2A000000")
    frames = [rte_frame(63, build_packet([SegmentSpec({"mess_type": 3}, [PartSpec(3, b"SELECT * FROM ORDERS")])])),
              rte_frame(64, build_packet([SegmentSpec({"segm_kind": 2}, [PartSpec(10, parse_id),
                                                                        PartSpec(14, info, arg_count=5)])]))]
    for first in range(0, rows, RECORDS_PER_PART):
        count = min(RECORDS_PER_PART, rows - first)
        records = b"".join(
            b"\0" + vdn(first + r + 1, 0, 6) + b"\0" + vdn(rng.randrange(1, 10 ** 9), 2, 7)
            + b" " + f"item {rng.randrange(10 ** 6)}".ljust(20).encode() + b" " + b"20261123"
            + b"\0" + vdn(rng.randrange(1, 10 ** 12), 4, 9) for r in range(count))
        frames.append(rte_frame(63, build_packet([SegmentSpec({"mess_type": 13, "mass_cmd": True},
                                                              [PartSpec(10, parse_id)])])))
        frames.append(rte_frame(64, build_packet([SegmentSpec({"segm_kind": 2, "function_code": 1208},
                                                              [PartSpec(5, records, arg_count=count)])])))
    with open(path, "wb") as out:
        out.write(b"".join(frames))


def python_render(path: str) -> int:
    """Every data field of the capture, rendered value by value in Python (the baseline)."""
    data = open(path, "rb").read()
    record = sum(c[3] for c in COLUMNS)
    texts = 0
    starts = []  # (offset, length) of each RTE frame: the replies with data are every other from the fourth
    position = 0
    while position < len(data):
        size = int.from_bytes(data[position:position + 4], "little")
        starts.append((position, size))
        position += size
    for start, size in starts[3::2]:
        body = data[start + 24 + 32 + 40:start + size]
        buf_len = int.from_bytes(body[8:12], "little")
        buf = body[16:16 + buf_len]
        for r in range(0, len(buf), record):
            at = r
            for data_type, _, frac, width in COLUMNS:
                field = buf[at:at + width]
                at += width
                if field[0] == 0xFF:
                    continue
                if data_type in (0, 1):
                    c = field[1]
                    digits = field[2:].hex().rstrip("0") or "0"
                    exponent = c - 0xC0
                    whole = (digits[:exponent] if exponent > 0 else "0").ljust(max(exponent, 1), "0")
                    rest = digits[exponent:] if exponent > 0 else "0" * -exponent + digits
                    if data_type == 0:
                        rest = rest[:max(frac, len(rest.rstrip("0")))].ljust(frac, "0")
                    text = whole + ("." + rest if rest.strip("0") or (data_type == 0 and frac) else "")
                else:
                    text = field[1:].decode("latin-1")
                texts += len(text) > 0
    return texts


def main(rows: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.rte")
        capture(rows, path)
        table = sql_parts_table(path)
        decoded = sum(len(v) for v in table.column("values").to_pylist() if v)
        assert decoded == rows * len(COLUMNS), decoded
        assert python_render(path) == rows * len(COLUMNS)
        view = best_of(lambda: sql_parts_table(path), 3)
        python = best_of(lambda: python_render(path), 3)
        size = os.path.getsize(path) / 1e6
        print(f"sapdb capture: {rows} rows x {len(COLUMNS)} columns, {size:.1f} MB of RTE frames")
        print(f"{'':8} {'seconds':>8} {'rows/s':>12} {'ratio':>6}")
        for name, seconds in (("view", view), ("python", python)):
            print(f"{name:8} {seconds:8.3f} {rows / seconds:12,.0f} {seconds / python:6.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000)
