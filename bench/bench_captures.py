"""What each kind of MQ capture costs to read, against the plain dmpmqmsg dump of the same rows (no Spark).

    .venv/bin/python bench/bench_captures.py [rows]

Writes the rows of bench_decode's mixed layout as a dmpmqmsg dump and as amqsbcg output, and the
dump compressed with gzip (level 1, by python-isal) and Zstandard (level 3). For each it times,
best of 3 after a warm-up, on one core:

  cold   the message index built from the file (what the first read of a capture pays) plus
         decoding the observations;
  warm   decoding the observations with the index cached, as Spark partitions do.

and prints seconds, MB/s of observation bytes and the ratio to the plain dump measured in the
same run.
"""
from __future__ import annotations

import os
import sys
import tempfile
from functools import partial

import zstandard
from isal import igzip

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.bench_decode import make_table  # noqa: E402
from bench.common import best_of  # noqa: E402
from cmi_datasource import Capture  # noqa: E402
from cmi_datasource.engine import index  # noqa: E402
from cmi_datasource.engine.write import DatasetToWrite, WriteOptions, write_attachments_dump  # noqa: E402


def decode_all(capture: Capture) -> int:
    from cmi_datasource.engine.decode import slice_batches
    from cmi_datasource.engine.plan import dataset_slices, whole_run
    [att] = capture.attachments
    return sum(b.num_rows for s in dataset_slices(capture, att, whole_run(capture, att), 128 << 20)
               for b in slice_batches(s))


def main(rows: int) -> None:
    table = make_table(rows)
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name, fmt in (("dmpmqmsg", "dmpmqmsg"), ("amqsbcg", "amqsbcg")):
            paths[name] = os.path.join(tmp, f"bench.{name}")
            with open(paths[name], "wb") as out:
                write_attachments_dump(out, [DatasetToWrite(table, "BENCH", "DATA")],
                                       options=WriteOptions(deterministic_seed="bench"), format=fmt)
        plain = open(paths["dmpmqmsg"], "rb").read()
        paths["dmpmqmsg.gz"] = os.path.join(tmp, "bench.dmp.gz")
        with igzip.open(paths["dmpmqmsg.gz"], "wb", compresslevel=1) as out:
            out.write(plain)
        paths["dmpmqmsg.zst"] = os.path.join(tmp, "bench.dmp.zst")
        with open(paths["dmpmqmsg.zst"], "wb") as out:
            out.write(zstandard.ZstdCompressor(level=3).compress(plain))
        del plain
        reference = Capture.open(paths["dmpmqmsg"])
        obs_mb = reference.layout(reference.attachments[0]).observation_bytes / 1e6

        def cold(path):
            index._MEMORY.clear()
            assert decode_all(Capture.open(path, use_index_cache=False)) == rows

        results = {}
        for name, path in paths.items():
            warm_capture = Capture.open(path)
            results[name] = (os.path.getsize(path) / 1e6, best_of(partial(cold, path), 3),
                             best_of(partial(decode_all, warm_capture), 3))
        base_cold, base_warm = results["dmpmqmsg"][1], results["dmpmqmsg"][2]
        print(f"rows={rows}, observation bytes {obs_mb:.0f} MB; best of 3, one core")
        print("| capture | file MB | cold s | cold MB/s | cold / plain | warm s | warm MB/s | warm / plain |")
        print("|---|---|---|---|---|---|---|---|")
        for name, (size, cold_s, warm_s) in results.items():
            print(f"| {name} | {size:.0f} | {cold_s:.2f} | {obs_mb / cold_s:.0f} | {cold_s / base_cold:.2f} | "
                  f"{warm_s:.2f} | {obs_mb / warm_s:.0f} | {warm_s / base_warm:.2f} |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
