"""df.write.format("cmi") never emits what it cannot read back (issue 14), as the user sees it.

Refused before anything is written: column names that differ only in case, names that are not SAS
names under option validVarName, types without a SAS equivalent (on the driver, before the
staging folder exists); decimals of more than 15 significant digits and longs beyond +-2**53
unless option lossyNumbers (in the tasks, before the commit). The error reaches the user as the
text of a Spark exception carrying ``cmi_datasource.errors.CmiEncodeError: <problem>: <remedy>``.
"""
from __future__ import annotations

import decimal
import glob
import os
import struct

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import (DecimalType, DoubleType, LongType, StringType, StructField, StructType)

import independent_parser as P

pytestmark = pytest.mark.spark

D = decimal.Decimal
ENCODE_ERROR = "cmi_datasource.errors.CmiEncodeError: "


def contents(directory) -> dict:
    """Every file under ``directory`` (None when there is no directory) with its bytes."""
    if not os.path.isdir(directory):
        return None
    found = {}
    for folder, _, names in os.walk(directory):
        for name in names:
            with open(os.path.join(folder, name), "rb") as f:
                found[os.path.relpath(os.path.join(folder, name), directory)] = f.read()
    return found


def refused(df, directory, **options) -> str:
    """The text of the error ``df.write`` raises; the destination is left as it was (no dump, no
    staging folder, not even the directory when there was none)."""
    before = contents(directory)
    writer = df.write.format("cmi").mode("append")
    for key, value in options.items():
        writer = writer.option(key, value)
    with pytest.raises(Exception) as caught:
        writer.save(str(directory))
    assert contents(directory) == before
    return str(caught.value)


def variable_names_in_dump(directory) -> list:
    """The variable names as the dump's bytes hold them, read by the independent parser (which
    trims nothing)."""
    [path] = glob.glob(os.path.join(str(directory), "*.dmp"))
    with open(path, "rb") as f:
        messages = P.parse_dump(f.read())
    head = messages[0]
    header = P.parse_header(head)
    [attachment] = header.attachments
    by_correl = {m.correl_id: m for m in messages}
    count = struct.unpack(head.order + "i", by_correl[attachment.key + bytes(8)].payload)[0]
    payloads = [by_correl[attachment.key + struct.pack(">I", k) + bytes(4)].payload for k in range(1, count + 1)]
    return [v.name for v in P.parse_dataset(payloads, head.order, header.long_size, head.ccsid).variables]


# -- names ------------------------------------------------------------------------------------------


def test_columns_differing_only_in_case_are_refused_and_nothing_is_written(spark, tmp_path):
    df = spark.createDataFrame([(1, 2)], "id long, ID long")
    text = refused(df, tmp_path / "out")
    assert ENCODE_ERROR + "columns 'id' and 'ID' would be the same SAS variable (SAS names ignore case): " \
        "rename one of them" in text


def test_a_name_that_is_no_v7_name_is_refused_with_what_to_do(spark, tmp_path):
    df = spark.createDataFrame([(1.0,)], "`my col` double")
    text = refused(df, tmp_path / "out")
    assert (ENCODE_ERROR + "column 'my col' is not a valid SAS variable name under validVarName=v7 (it holds ' ', "
            "not only letters, digits and underscores): rename it, or set option validVarName=any to write it "
            "as a SAS name literal") in text


def test_an_existing_destination_keeps_its_dump_and_gains_none(spark, tmp_path):
    out = tmp_path / "out"
    spark.createDataFrame([(1.0,)], "x double").write.format("cmi").mode("append").save(str(out))
    assert len(contents(out)) == 1
    assert "starts with a digit" in refused(spark.createDataFrame([(1.0,)], "`1st` double"), out)
    assert "is beyond +-2**53" in refused(spark.createDataFrame([(2 ** 60,)], "n long"), out)  # in a task


@pytest.mark.parametrize("mode", ["overwrite", "append"])
def test_a_destination_that_is_a_file_is_refused_and_kept(spark, tmp_path, mode):
    """Issue 26, finding 8: save("x.dmp") where x.dmp is a file raised a bare NotADirectoryError."""
    existing = tmp_path / "x.dmp"
    existing.write_bytes(b"* QLOAD a dump the user keeps\n")
    with pytest.raises(Exception) as caught:
        spark.createDataFrame([(1.0,)], "x double").write.format("cmi").mode(mode).save(str(existing))
    text = str(caught.value)
    assert "cmi_datasource.errors.CmiOptionError: " in text and f"the path {existing} is a file" in text
    assert "NotADirectoryError" not in text
    assert existing.read_bytes() == b"* QLOAD a dump the user keeps\n"
    assert sorted(os.listdir(tmp_path)) == ["x.dmp"]


def test_valid_var_name_any_writes_name_literals_that_read_back_exactly(spark, tmp_path):
    out = tmp_path / "out"
    schema = StructType([StructField("my col", DoubleType()), StructField(" lead", StringType()),
                         StructField("a-b/c%", DoubleType())])
    rows = [(1.5, "x", -1.0), (None, None, 2.0), (-3.25, "Jürgen", None)]
    spark.createDataFrame(rows, schema).write.format("cmi").mode("append") \
        .option("validVarName", "any").save(str(out))
    assert variable_names_in_dump(out) == ["my col", " lead", "a-b/c%"]
    back = spark.read.format("cmi").load(str(out))
    assert back.columns == ["my col", " lead", "a-b/c%"]
    assert sorted(map(tuple, back.collect()), key=repr) == sorted(rows, key=repr)
    assert [r["my col"] for r in back.where(F.col("`my col`") > 0).collect()] == [1.5]


def test_valid_var_name_upcase_writes_upper_cased_names(spark, tmp_path):
    out = tmp_path / "out"
    spark.createDataFrame([(1.0, "a")], "mixedCase double, s string").write.format("cmi").mode("append") \
        .option("validVarName", "upcase").save(str(out))
    assert variable_names_in_dump(out) == ["MIXEDCASE", "S"]
    assert [tuple(r) for r in spark.read.format("cmi").load(str(out)).collect()] == [(1.0, "a")]


# -- numbers ----------------------------------------------------------------------------------------

WIDE = DecimalType(38, 10)
TWENTY_EIGHT_DIGITS = D("1234567890123456789012345678.0000000000")


def test_a_decimal_of_28_digits_is_refused_naming_column_value_and_row(spark, tmp_path):
    rows = [(D("1.5"),), (None,), (TWENTY_EIGHT_DIGITS,)]
    df = spark.createDataFrame(rows, StructType([StructField("amount", WIDE)])).coalesce(1)
    text = refused(df, tmp_path / "out")
    assert (ENCODE_ERROR + "column 'amount', row 3 of spark_partition_id() 0: "
            "1234567890123456789012345678.0000000000 has 28 significant digits and a SAS number (a double) "
            "holds 15: set option lossyNumbers=true") in text


def test_lossy_numbers_writes_the_decimal_rounded(spark, tmp_path):
    out = tmp_path / "out"
    rows = [(D("1.5"),), (None,), (TWENTY_EIGHT_DIGITS,)]
    spark.createDataFrame(rows, StructType([StructField("amount", WIDE)])).write.format("cmi").mode("append") \
        .option("lossyNumbers", "true").save(str(out))
    back = spark.read.format("cmi").load(str(out))
    assert back.schema["amount"].dataType == DoubleType()
    assert sorted((r["amount"] for r in back.collect()), key=repr) == sorted([1.5, None, 1.2345678901234568e27],
                                                                             key=repr)


def test_decimals_of_precision_15_or_less_write_and_read_back_as_the_nearest_double(spark, tmp_path):
    out = tmp_path / "out"
    values = [D("0.69"), D("6.89"), D("-12345678.91"), D("99999999.99"), None]
    spark.createDataFrame([(v,) for v in values], StructType([StructField("price", DecimalType(10, 2))])) \
        .write.format("cmi").mode("append").save(str(out))
    back = sorted((r["price"] for r in spark.read.format("cmi").load(str(out)).collect()), key=repr)
    assert back == sorted([float(v) if v is not None else None for v in values], key=repr)


@pytest.mark.parametrize("value, passes", [(2 ** 53, True), (-2 ** 53, True), (2 ** 53 + 1, False),
                                           (-2 ** 53 - 1, False)])
def test_longs_beyond_2_to_the_53_are_refused(spark, tmp_path, value, passes):
    out = tmp_path / "out"
    df = spark.createDataFrame([(1,), (value,)], StructType([StructField("n", LongType())])).coalesce(1)
    if passes:
        df.write.format("cmi").mode("append").save(str(out))
        assert sorted(r["n"] for r in spark.read.format("cmi").load(str(out)).collect()) == sorted([1.0, value])
    else:
        text = refused(df, out)
        assert (ENCODE_ERROR + f"column 'n', row 2 of spark_partition_id() 0: {value} "
                "is beyond +-2**53 (9007199254740992)" in text)


# -- types ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("expression, spark_type", [
    ("map('a', 1)", "map<string,int>"),
    ("named_struct('a', 1)", "struct<a:int>"),
    ("array(1, 2)", "array<int>"),
    ("cast('ab' as binary)", "binary"),
    ("interval '1' year", "interval year"),
    ("parse_json('{\"a\": 1}')", "variant"),
])
def test_types_without_a_sas_equivalent_are_refused_naming_column_type_and_remedy(spark, tmp_path, expression,
                                                                                  spark_type):
    df = spark.range(1).selectExpr("cast(id as double) as ok", f"{expression} as bad")
    assert df.schema["bad"].dataType.simpleString() == spark_type
    text = refused(df, tmp_path / "out")
    assert (ENCODE_ERROR + f"column 'bad' has type {spark_type}, which has no SAS equivalent: cast it to string"
            in text)
