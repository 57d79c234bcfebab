"""Issue 26 through Spark: hostile input read in bounded memory with typed errors (the unit tests,
``unit/test_bounded_input.py``, measure the memory; ``bench/bombs.py`` reads the 3 GiB bombs)."""
from __future__ import annotations

import gzip
import os

import pytest
import zstandard

from cmi_datasource.errors import CompressedStreamError, InputFileError
from cmi_datasource.spark.errors import unwrap
from conftest import SAMPLES

NIGHTLY = os.path.join(SAMPLES, "nightly_batch.dmp")


def test_zeros_after_a_dump_read_as_its_messages_then_the_damage(spark, tmp_path):
    with open(NIGHTLY, "rb") as f:
        sample = f.read()
    path = tmp_path / "zeros.zst"
    with open(path, "wb") as raw, zstandard.ZstdCompressor().stream_writer(raw) as out:
        out.write(sample)
        for _ in range(8):
            out.write(bytes(16 << 20))  # 128 MiB of zeros: twice the bound on one record
    rows = spark.read.format("cmi").option("view", "messages").load(str(path)).collect()
    assert len(rows) == 33 and [r["index"] for r in rows if r["problem"]] == [33]
    assert rows[-1]["problem"].startswith("line starts with b'\\x00") and rows[-1]["offset"] < len(sample)
    kept = spark.read.format("cmi").option("dataset", "FIN.DAILY_SALES").load(str(path)).count()
    assert kept == 543


def test_a_cut_gzip_capture_is_a_typed_error_naming_file_and_offset(spark, tmp_path):
    data = gzip.compress(open(NIGHTLY, "rb").read() * 4)
    path = tmp_path / "cut.dmp.gz"
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(Exception) as raised:
        spark.read.format("cmi").option("view", "messages").load(str(path)).collect()
    error = unwrap(raised.value)
    assert isinstance(error, CompressedStreamError) and error.source == str(path) and error.offset > 0


@pytest.mark.parametrize("special", ["/proc/self/mem", "fifo"])
def test_special_files_are_typed_errors(spark, tmp_path, special):
    path = special
    if special == "fifo":
        path = str(tmp_path / "pipe")
        os.mkfifo(path)
    with pytest.raises(Exception) as raised:
        spark.read.format("cmi").option("view", "messages").load(path).collect()
    error = unwrap(raised.value)
    assert isinstance(error, InputFileError) and error.source == path
