"""What a user sees when a read fails, through Spark: the problem on the first line, no Python
traceback, the typed error back with ``unwrap``; misspelled options refused; a quiet console."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from cmi_datasource.errors import CmiOptionError, UnknownCaptureFormatError, ValueConversionError
from cmi_datasource.spark.errors import typed_errors, unwrap

from conftest import ROOT
from support import latin1_dump_at

SPARK_PREFIX = "[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance: "


@pytest.fixture(scope="module")
def latin1_dump(tmp_path_factory) -> str:
    """A data set written in Latin-1 (CCSID 819) over several messages: read as UTF-8 its values fail."""
    return latin1_dump_at(tmp_path_factory.mktemp("latin") / "latin.dmp")


def test_a_file_no_format_recognises_is_named_on_the_first_line(spark, tmp_path):
    from pyspark.errors import AnalysisException
    path = tmp_path / "random.bin"
    path.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(AnalysisException) as raised:
        spark.read.format("cmi").load(str(path))
    shown = str(raised.value)
    assert shown.split("\n")[0].startswith(
        SPARK_PREFIX + "cmi_datasource.errors.UnknownCaptureFormatError: no capture format recognises this file")
    assert "  what to do: name the format with option('format', ...)" in shown
    assert "Traceback (most recent call last)" not in shown and "File \"/" not in shown
    error = unwrap(raised.value)
    assert type(error) is UnknownCaptureFormatError and error.source == str(path) and error.offset == 0


def test_a_misspelled_option_is_refused_with_the_closest_name(spark, samples_dir):
    from pyspark.errors import AnalysisException
    with pytest.raises(AnalysisException) as raised:
        spark.read.format("cmi").option("datset", "WORK.X").load(samples_dir)
    first = str(raised.value).split("\n")[0]
    assert first.startswith(SPARK_PREFIX + "cmi_datasource.errors.CmiOptionError: read option 'datset' is "
                            "not known (did you mean 'dataset'?); valid: format, view, dataset,")
    assert type(unwrap(raised.value)) is CmiOptionError
    with pytest.raises(AnalysisException, match="view 'atachments' is not known \\(did you mean 'attachments'"):
        spark.read.format("cmi").option("view", "atachments").load(samples_dir)


def test_a_bad_value_in_a_task_names_file_message_attachment_and_sequence(spark, latin1_dump):
    from pyspark.errors import PythonException
    with pytest.raises(PythonException) as raised:
        spark.read.format("cmi").option("ccsid", "1208").load(latin1_dump).collect()
    shown = str(raised.value)
    lines = shown.split("\n")
    assert lines[1].startswith("cmi_datasource.errors.ValueConversionError: variable S, observation 1: "
                               "b'caf\\xe9' is not valid UTF-8")
    assert "Traceback (most recent call last)" not in shown
    error = unwrap(raised.value)
    assert type(error) is ValueConversionError and error.source == latin1_dump
    # The place it names is the message the messages view lists with that attachment and sequence.
    [row] = (spark.read.format("cmi").option("view", "messages").load(latin1_dump)
             .where(f"`index` = {error.message_number}").collect())
    assert (row.attachment, row.sequence, row.offset) == (error.attachment, error.sequence, error.location.file_offset)
    assert f"  message: {error.message_number}" in lines and f"  sequence: {error.sequence}" in lines


def test_typed_errors_gives_the_cmi_error_to_except(spark, latin1_dump):
    with pytest.raises(ValueConversionError) as raised:
        with typed_errors():
            spark.read.format("cmi").option("ccsid", "1208").load(latin1_dump).count()
    assert raised.value.attachment is not None


def test_a_write_failing_in_a_task_says_why_first_and_leaves_nothing(spark, tmp_path):
    from pyspark.errors import PythonException
    out = tmp_path / "out"
    df = spark.createDataFrame([("plain",), ("price in €",)], "s string").repartition(2)
    with pytest.raises(PythonException) as raised:
        df.write.format("cmi").mode("append").option("ccsid", "819").save(str(out))
    lines = str(raised.value).split("\n")
    assert lines[1] == ("cmi_datasource.errors.CmiEncodeError: column 's': '€' cannot be encoded in iso8859-1 "
                        "(CCSID 819); write with option('ccsid', ...) naming a code page that has it "
                        "(1208, UTF-8, has every character)")
    assert not out.exists() or os.listdir(out) == []
    assert type(unwrap(raised.value)).__name__ == "CmiEncodeError"


QUIET_RUN = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.getOrCreate()
    spark.read.format("cmi").load(sys.argv[1]).count()
    try:
        spark.read.format("cmi").option("ccsid", "1208").load(sys.argv[2]).collect()
    except Exception as e:
        print(str(e).split("\\n")[1])
""")
# Printed by the JVM itself, not by a logger: Spark 4.1+ starts Java with
# --add-modules=jdk.incubator.vector, and no log configuration reaches this line (docs/install.md#a-quiet-console).
JVM_INCUBATOR_LINE = "WARNING: Using incubator modules: jdk.incubator.vector"


def test_the_shipped_conf_keeps_the_console_quiet(latin1_dump, samples_dir, tmp_path):
    env = dict(os.environ, SPARK_CONF_DIR=os.path.join(ROOT, "conf"), PYSPARK_PYTHON=sys.executable,
               PYTHONPATH=ROOT)
    run = subprocess.run([sys.executable, "-c", QUIET_RUN, os.path.join(samples_dir, "mixed_types.dmp"), latin1_dump],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("cmi_datasource.errors.ValueConversionError: variable S")
    noise = [line for line in run.stderr.splitlines() if line.strip() and line != JVM_INCUBATOR_LINE]
    assert noise == []


def test_a_schema_given_by_the_user_is_refused_unless_it_is_the_captures(spark, samples_dir):
    import os
    path = os.path.join(samples_dir, "mixed_types.dmp")
    with pytest.raises(Exception) as raised:
        spark.read.format("cmi").schema("a int").load(path).collect()
    assert ("cmi_datasource.errors.CmiOptionError: the schema comes from the capture; drop .schema(...)"
            in str(raised.value))
    own = spark.read.format("cmi").load(path).schema
    assert spark.read.format("cmi").schema(own).load(path).count() == 6


def test_a_catalog_table_is_created_but_reading_it_says_to_load_the_path(spark, samples_dir):
    # Spark 4.3 passes owner, provider and location when the table is created (accepted, the
    # schema comes from the capture), and no option at all when it is read.
    import os
    path = os.path.join(samples_dir, "mixed_types.dmp")
    spark.sql(f"CREATE TABLE cmi_customers USING cmi LOCATION '{path}'")
    try:
        assert "BALANCE" in spark.table("cmi_customers").columns
        with pytest.raises(Exception, match="cannot stand in for it: Spark 4.3 hands a Python data source none"):
            spark.table("cmi_customers").count()
    finally:
        spark.sql("DROP TABLE cmi_customers")
