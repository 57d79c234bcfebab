"""Decode-core benchmark (no Spark): dump file -> Arrow table, against the bytes.fromhex floor.

    .venv/bin/python bench/bench_decode.py [rows]

Writes a dump of a mixed layout with the project's writer, then times, best of 3,
(1) bytes.fromhex over the same hex text (the physical floor of the format) and
(2) cmi_datasource.read of a Capture.open. Prints MB/s of observation bytes and the ratio.
"""
from __future__ import annotations

import datetime as dt
import os
import re
import sys
import tempfile

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import best_of  # noqa: E402
from cmi_datasource import Capture, read  # noqa: E402
from cmi_datasource.engine.write import DatasetToWrite, WriteOptions, write_attachments_dump  # noqa: E402


def make_table(n: int) -> pa.Table:
    rng = np.random.default_rng(42)
    words = np.array(["alpha", "Brücke", "ceña", "delta", "Øre", "", "zeta omega", "ß-straße"])
    base = dt.datetime(2000, 1, 1)
    amounts = rng.normal(1000, 250, n)
    amounts[rng.random(n) < 0.05] = np.nan
    return pa.table({
        "ID": pa.array(np.arange(n, dtype=np.float64)),
        "AMOUNT": pa.array(amounts, from_pandas=True),
        "RATE": pa.array(rng.random(n)),
        "QTY": pa.array(rng.integers(0, 1000, n).astype(np.float64)),
        "SCORE": pa.array(rng.random(n) * 100),
        "DAY": pa.array((np.datetime64("2000-01-01") + rng.integers(0, 9000, n)).astype("datetime64[D]")),
        "STAMP": pa.array((np.datetime64(base) + rng.integers(0, 10**15, n).astype("timedelta64[us]"))),
        "CUTOFF": pa.array(rng.integers(0, 86400 * 10**6, n).astype("timedelta64[us]").astype(np.int64),
                           pa.int64()).cast(pa.time64("us")),
        "CODE": pa.array(words[rng.integers(0, len(words), n)]),
        "CITY": pa.array(words[rng.integers(0, len(words), n)]),
        "FLAG": pa.array(np.where(rng.random(n) < 0.5, "Y", "N")),
        "NOTE": pa.array(words[rng.integers(0, len(words), n)]),
    })


def main(rows: int) -> None:
    table = make_table(rows)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.dmp")
        with open(path, "wb") as out:
            write_attachments_dump(out, [DatasetToWrite(table, "BENCH", "DATA")],
                                   options=WriteOptions(deterministic_seed="bench"))
        text = open(path, "rb").read()
        hex_lines = re.findall(rb"^X ([0-9A-F]+)$", text, flags=re.M)
        joined = b"".join(hex_lines).decode()
        capture = Capture.open(path)
        obs_bytes = capture.layout(capture.attachments[0]).observation_bytes

        floor = best_of(lambda: bytes.fromhex(joined), 3)
        core = best_of(lambda: read(Capture.open(path)), 3)  # opened each time: no capture kept
        mb = obs_bytes / 1e6
        print(f"rows={rows} dump={len(text) / 1e6:.1f} MB observation bytes={mb:.1f} MB")
        print(f"bytes.fromhex floor: {floor:.3f} s ({mb / floor:.0f} MB/s)")
        print(f"decode core:         {core:.3f} s ({mb / core:.0f} MB/s)  "
              f"ratio core/floor throughput = {floor / core:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000)
