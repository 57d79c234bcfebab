"""docs/streaming.md's "One table per data set (foreachBatch)" block, run as it is written (its
``/data/`` folders moved under a temporary one) on captures landing in the folder: each data set's
table holds exactly its rows, after runs with the same checkpoints as files land, after a run with
nothing new, and after a micro-batch that ran but was never recorded as done is run again."""
from __future__ import annotations

import os
import re
import time

from conftest import ROOT
from landing import land, transfer

NOW = int(time.time())  # files land from now on, in this order
DOCUMENT = os.path.join(ROOT, "docs", "streaming.md")
SECTION = "## One table per data set (foreachBatch)"


def documented_block() -> str:
    with open(DOCUMENT, encoding="utf-8") as f:
        text = f.read()
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```python\n(.*?)^```", section, re.MULTILINE | re.DOTALL)
    assert len(blocks) == 1, f"{SECTION} should hold one python block, not {len(blocks)}"
    return blocks[0]


def run_documented_block(spark, root) -> None:
    code = documented_block()
    assert code.count('"/data/') == 3  # captures, tables, checkpoints: all moved under root
    exec(compile(code.replace('"/data/', f'"{root}/'), DOCUMENT, "exec"), {"spark": spark})


def ids_in_table(spark, root, dataset):
    return sorted(r.ID for r in spark.read.parquet(f"{root}/tables/{dataset}").collect())


def numbers(first, n):
    return [float(i) for i in range(first, first + n)]


def sales(n, first):
    return transfer(n, first, library="FIN", member="DAILY_SALES")


def inventory(n, first):
    return transfer(n, first, library="PROD", member="INVENTORY")


def test_each_data_set_s_table_holds_its_rows_once_as_files_land_and_the_queries_run_again(spark, tmp_path):
    captures = tmp_path / "captures"
    land(captures, "a.dmp", sales(5, 0), NOW)
    land(captures, "b.dmp", inventory(3, 100) + sales(2, 5), NOW + 1)  # one capture, both data sets
    run_documented_block(spark, tmp_path)
    assert ids_in_table(spark, tmp_path, "FIN.DAILY_SALES") == numbers(0, 7)
    assert ids_in_table(spark, tmp_path, "PROD.INVENTORY") == numbers(100, 3)

    land(captures, "c.dmp", inventory(2, 103), NOW + 2)
    run_documented_block(spark, tmp_path)
    assert ids_in_table(spark, tmp_path, "FIN.DAILY_SALES") == numbers(0, 7)
    assert ids_in_table(spark, tmp_path, "PROD.INVENTORY") == numbers(100, 5)

    batches = sorted(os.listdir(tmp_path / "tables" / "PROD.INVENTORY"))
    run_documented_block(spark, tmp_path)  # nothing new: no micro-batch, nothing more
    assert sorted(os.listdir(tmp_path / "tables" / "PROD.INVENTORY")) == batches
    assert ids_in_table(spark, tmp_path, "FIN.DAILY_SALES") == numbers(0, 7)
    assert ids_in_table(spark, tmp_path, "PROD.INVENTORY") == numbers(100, 5)


def data_files(folder):
    return sorted(name for name in os.listdir(folder) if name.endswith(".parquet"))


def test_a_micro_batch_run_again_after_a_stop_before_its_commit_is_written_once(spark, tmp_path):
    captures = tmp_path / "captures"
    land(captures, "a.dmp", sales(4, 0) + inventory(2, 100), NOW)
    land(captures, "b.dmp", inventory(3, 102), NOW + 1)
    run_documented_block(spark, tmp_path)
    assert ids_in_table(spark, tmp_path, "PROD.INVENTORY") == numbers(100, 5)

    # The query stopped after foreachBatch wrote its last micro-batch and before Spark recorded
    # it as done: the commit log lacks it, so the next start runs that batch id again.
    commits = tmp_path / "checkpoints" / "PROD.INVENTORY" / "commits"
    last = max(int(name) for name in os.listdir(commits) if name.isdigit())
    os.remove(commits / str(last))
    os.remove(commits / f".{last}.crc")  # Hadoop's checksum of that file: gone with it
    written = tmp_path / "tables" / "PROD.INVENTORY" / f"batch_id={last}"
    before = data_files(written)
    run_documented_block(spark, tmp_path)

    assert data_files(written) != before  # the batch ran again and rewrote its folder...
    assert ids_in_table(spark, tmp_path, "PROD.INVENTORY") == numbers(100, 5)  # ...its rows once
    assert ids_in_table(spark, tmp_path, "FIN.DAILY_SALES") == numbers(0, 4)
    assert str(last) in os.listdir(commits)
