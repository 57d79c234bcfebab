"""``cmi convert`` through Spark: the data set read back from Parquet and CSV equals the
Capture's table. Run in this process: the command uses the active session (the ``spark``
fixture's) instead of starting a second JVM."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from cmi_datasource import read
from cmi_datasource.cli import cli
from conftest import ROOT, SAMPLES
from support import latin1_dump_at

pytestmark = pytest.mark.spark

NIGHTLY = os.path.join(SAMPLES, "nightly_batch.dmp")
SORT = [("DAY", "ascending"), ("REGION", "ascending")]


def convert(*args: str, code: int = 0):
    result = CliRunner().invoke(cli, ["convert", *args])
    assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    return result


def expected_sales() -> pa.Table:
    table = read([NIGHTLY], dataset="FIN.DAILY_SALES")
    return table.cast(pa.schema([f.remove_metadata() for f in table.schema])).sort_by(SORT)


def part_files(directory, suffix: str):
    return sorted(os.path.join(directory, n) for n in os.listdir(directory) if n.endswith(suffix))


def test_convert_to_parquet_reads_back_equal(spark, tmp_path):
    out = tmp_path / "sales.parquet"
    result = convert(NIGHTLY, "FIN.DAILY_SALES", str(out), "--to", "parquet")
    assert f"wrote FIN.DAILY_SALES to {out}" in result.stdout
    written = pa.concat_tables(pq.read_table(p) for p in part_files(out, ".parquet"))
    expected = expected_sales()
    assert written.schema.names == expected.schema.names
    assert written.cast(expected.schema).sort_by(SORT).equals(expected)


def test_convert_to_csv_reads_back_equal_and_overwrite(spark, tmp_path):
    out = tmp_path / "sales_csv"
    convert(NIGHTLY, "FIN.DAILY_SALES", str(out), "--to", "csv")
    assert "exists" in convert(NIGHTLY, "FIN.DAILY_SALES", str(out), "--to", "csv", code=3).stderr
    convert(NIGHTLY, "FIN.DAILY_SALES", str(out), "--to", "csv", "--overwrite")
    expected = expected_sales()
    options = pacsv.ConvertOptions(column_types=expected.schema)
    written = pa.concat_tables(pacsv.read_csv(p, convert_options=options) for p in part_files(out, ".csv"))
    assert written.sort_by(SORT).equals(expected)


def test_convert_permissive_writes_the_report_row(spark, tmp_path):
    out = tmp_path / "returns"
    convert(NIGHTLY, "FIN.RETURNS", str(out), "--mode", "PERMISSIVE")
    written = pa.concat_tables(pq.read_table(p) for p in part_files(out, ".parquet"))
    reports = [r for r in written.column("_corrupt_record").to_pylist() if r]
    assert len(reports) == 1 and "sequenced message 4 is missing" in reports[0]


# Two converts in one process (one JVM start): a good one, then one whose task fails.
TWO_CONVERTS = textwrap.dedent("""
    import sys
    from cmi_datasource.cli import main
    for args in (["convert", sys.argv[1], "FIN.DAILY_SALES", sys.argv[3] + "/good"],
                 ["convert", sys.argv[2], "LIB.LATIN", sys.argv[3] + "/bad", "-o", "ccsid=1208"]):
        try:
            main(args)
        except SystemExit as e:
            print("exit", e.code, file=sys.stderr)
""")
# Printed by the JVM itself, not by a logger (see test_spark_errors.py).
JVM_INCUBATOR_LINE = "WARNING: Using incubator modules: jdk.incubator.vector"


def test_convert_starts_a_quiet_session_without_the_repositorys_conf(tmp_path):
    """Issue 28: without conf/, convert printed Spark's WARN banner and progress bars, and one task
    error printed Java stack traces about four times before the error."""
    bad = latin1_dump_at(tmp_path / "latin.dmp")
    env = {k: v for k, v in os.environ.items() if k != "SPARK_CONF_DIR"}  # as pip users run it
    env.update(PYSPARK_PYTHON=sys.executable, PYTHONPATH=ROOT)
    run = subprocess.run([sys.executable, "-c", TWO_CONVERTS, NIGHTLY, bad, str(tmp_path)], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert run.stdout == f"wrote FIN.DAILY_SALES to {tmp_path}/good (parquet)\n"
    shown = [line for line in run.stderr.splitlines() if line != JVM_INCUBATOR_LINE]
    assert shown[0] == "exit 0" and shown[-1] == "exit 1", run.stderr
    assert shown[1].startswith("ValueConversionError: variable S, observation 1: ")
    assert shown[2].startswith("  what to do: ") and f"  file: {bad}" in shown
    assert not [line for line in shown if line.startswith(("\tat ", "Caused by")) or " WARN " in line
                or "Stage 0" in line or "log4j" in line or "ERROR" in line]
