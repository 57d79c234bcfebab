"""Decode-core benchmark (no Spark): dump text -> payload bytes, and dump file -> Arrow table,
against the bytes.fromhex floor.

    .venv/bin/python bench/bench_decode.py [rows] [--checkout DIR]

Writes a dump of a mixed layout with the project's writer, then times, best of 5 (the whole read
best of 3), on one core:

  fromhex   bytes.fromhex over the dump's X-line digits, joined beforehand (the format's floor);
  hex core  the partition kernel decoding the X lines of every message of the dump text in memory
            (``dump_spans._decode_spans`` over all the messages at once);
  spans     ``read_dump_spans`` of every message: the same, from the file, a piece at a time;
  scan      ``parse_dump`` of the text: the line parser that builds the message index;
  read      ``cmi_datasource.read`` of a ``Capture.open``: index (cached after the first), payloads,
            the SAS columns to Arrow.

With the C kernels (issue 30, ``cmi_datasource/_native.c``), "hex core" and "read" are also timed
with their numba references ("... numba"), in the same run.

and prints each time and its throughput as a multiple of fromhex's (fromhex seconds / its
seconds: above 1 is faster than fromhex; issue 30's target for the hex core is 2.0). The machine's
speed drifts: only figures of one run compare. ``--checkout DIR`` imports the package from another
checkout (``git worktree add /tmp/old <commit>``), so that two versions run alternately under
the same script.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import re
import sys
import tempfile

import numpy as np
import pyarrow as pa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from bench.common import best_of  # noqa: E402

if __name__ == "__main__":  # the package of --checkout DIR, when given, instead of this checkout's
    _checkout = argparse.ArgumentParser(add_help=False)
    _checkout.add_argument("--checkout", default=ROOT)
    sys.path.insert(0, os.path.abspath(_checkout.parse_known_args()[0].checkout))

import cmi_datasource  # noqa: E402
from cmi_datasource import Capture, read  # noqa: E402
from cmi_datasource.engine.write import DatasetToWrite, WriteOptions, write_attachments_dump  # noqa: E402
from cmi_datasource.arrow import strings  # noqa: E402
from cmi_datasource.payload import sas_dataset, sas_numbers  # noqa: E402
from cmi_datasource.transports.mq import dump_spans, hex_lines  # noqa: E402
from cmi_datasource.transports.mq.dmpmqmsg import parse_dump  # noqa: E402


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


def twinned_kernels():
    """The kernels that run in C when the C kernels are built (none in checkouts before them)."""
    kernels = [dump_spans._decode_spans, hex_lines.x_run, strings._trim_and_gather,
               sas_numbers._gather_fields, sas_dataset._sas_to_arrow_time]
    return [k for k in kernels if getattr(k, "native_function", lambda: None)() is not None]


@contextlib.contextmanager
def numba_references():
    """Every kernel with a C twin runs its numba reference meanwhile."""
    kernels = twinned_kernels()
    for k in kernels:
        k.chosen = k.compiled()
    try:
        yield
    finally:
        for k in kernels:
            k.chosen = None


def hex_core(text: bytes, spans, repeat: int = 5) -> float:
    """Seconds of the partition kernel decoding the X lines of every message of ``text`` at once
    (best of ``repeat``)."""
    view = np.frombuffer(text, dtype=np.uint8)
    starts = np.array([span[2] for span in spans], dtype=np.int64)
    ends = np.array([span[3] for span in spans], dtype=np.int64)
    heads = np.zeros(len(spans), dtype=np.int64)
    out, head = np.empty(len(text) // 2, dtype=np.uint8), np.empty(1, dtype=np.uint8)
    lengths = np.zeros(len(spans), dtype=np.int64)
    table = (hex_lines.PAIR_VALUES,) if hasattr(hex_lines, "PAIR_VALUES") else ()  # checkouts before issue 30

    def decode():
        done, _, _ = dump_spans._decode_spans(view, starts, ends, heads, 0, out, 0, head, 0, lengths, *table)
        assert done == len(spans)
    return best_of(decode, repeat)


def main(rows: int) -> None:
    table = make_table(rows)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.dmp")
        with open(path, "wb") as out:
            write_attachments_dump(out, [DatasetToWrite(table, "BENCH", "DATA")],
                                   options=WriteOptions(deterministic_seed="bench"))
        text = open(path, "rb").read()
        hex_lines_of_text = re.findall(rb"^X ([0-9A-F]+)$", text, flags=re.M)
        joined = b"".join(hex_lines_of_text).decode()
        spans = [(path, m.index, m.file_offset, m.file_end) for m in parse_dump(text, path)]
        capture = Capture.open(path)
        obs_bytes = capture.layout(capture.attachments[0]).observation_bytes

        def read_spans():
            for _ in dump_spans.read_dump_spans(spans, [0] * len(spans)):
                pass

        def scan():
            for _ in parse_dump(text, path):
                pass

        floor = best_of(lambda: bytes.fromhex(joined), 5)
        times = {"hex core": hex_core(text, spans), "spans": best_of(read_spans, 5), "scan": best_of(scan, 5),
                 "read": best_of(lambda: read(Capture.open(path)), 3)}  # opened each time: no capture kept
        if twinned_kernels():
            with numba_references():
                times["hex core numba"] = hex_core(text, spans)
                times["read numba"] = best_of(lambda: read(Capture.open(path)), 3)
        mb, hex_mb = obs_bytes / 1e6, len(joined) / 1e6
        print(f"package of {os.path.dirname(os.path.dirname(os.path.abspath(cmi_datasource.__file__)))}")
        print(f"rows={rows} dump={len(text) / 1e6:.1f} MB hex digits={hex_mb:.1f} MB "
              f"observation bytes={mb:.1f} MB, payload bytes={hex_mb / 2:.1f} MB")
        print(f"{'fromhex':<14} {floor:.3f} s ({hex_mb / 2 / floor:.0f} MB/s of payload)")
        for name, seconds in times.items():
            print(f"{name:<14} {seconds:.3f} s ({hex_mb / 2 / seconds:.0f} MB/s of payload)  "
                  f"fromhex / {name} = {floor / seconds:.2f}")


if __name__ == "__main__":
    arguments = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    arguments.add_argument("rows", nargs="?", type=int, default=200_000)
    arguments.add_argument("--checkout", default=ROOT, help="the checkout whose package is measured")
    main(arguments.parse_args().rows)
