"""The parts of bench/bench_stream.py (make bench's section 9) that are not timings: the dumps it
lands are what the stream and the batch read it compares both read whole, and a measure without a
limit shows its ratio in the Targets table without a verdict."""
from __future__ import annotations

import os

from bench.bench_stream import DATASET, Landing
from bench.common import Target
from cmi_datasource import read


def test_landed_dumps_each_hold_their_own_attachment_and_rows_numbered_on(tmp_path):
    landing = Landing(str(tmp_path / "in"), 7)
    landed = [landing.land() for _ in range(3)]
    assert [i for i, _, _ in landed] == [0, 1, 2]
    # Moved in whole: no hidden file is left behind.
    assert sorted(os.listdir(tmp_path / "in")) == ["dump-00000.dmp", "dump-00001.dmp", "dump-00002.dmp"]
    # The order a stream takes files in, (modification time, path), is the order they landed.
    assert sorted(landed, key=lambda one: (os.stat(one[1]).st_mtime_ns, one[1])) == landed
    # Keys of their own: a batch read of the folder keeps every dump's rows (a repeated key would be one transfer).
    ids = read(str(tmp_path / "in"), dataset=DATASET).column("ID").to_pylist()
    assert sorted(ids) == [float(i) for i in range(21)]
    assert read(landed[1][1], dataset=DATASET).column("ID").to_pylist() == [float(i) for i in range(7, 14)]


def test_a_measure_without_a_limit_shows_its_ratio_and_no_verdict():
    line = Target("9. stream throughput", None, "stream s / batch s", "stream 1 rows/s", 5.126).line()
    assert line == "| 9. stream throughput | none (stream s / batch s) | stream 1 rows/s | 5.13 | — |"
    assert Target("1. x", 1.1, "a / b", "m", 1.2).line().endswith("| 1.20 | **no** |")
    failed = Target("x (section failed)", None, "", "ValueError: y").line()
    assert failed == "| x (section failed) | — | ValueError: y | — | — |"
