"""The Spark data source end to end: spark.read.format("cmi") on real dumps."""
from __future__ import annotations

import datetime as dt
import gzip
import os
import random

import pyarrow as pa
import pytest
from pyspark.errors import PySparkException
from pyspark.sql.types import DateType, DayTimeIntervalType, DoubleType, StringType, TimestampNTZType

from cmi_datasource.engine.write import DatasetToWrite, WriteOptions, write_attachments_dump

from conftest import dump_messages
from mq_traffic import EXPECTED, plain, segmented

pytestmark = pytest.mark.spark


def write_dump(path, datasets=(), files=(), **options):
    with open(path, "wb") as out:
        write_attachments_dump(out, datasets, files, WriteOptions(deterministic_seed=str(path), **options))
    return str(path)


def test_format_is_discovered_without_register(spark, samples_dir):
    # No cmi_datasource.register() anywhere in this session: discovery of pyspark_cmi does it.
    rows = spark.read.format("cmi").load(os.path.join(samples_dir, "mixed_types.dmp")).collect()
    assert len(rows) == 6


def test_mixed_types_dataset_values_types_and_metadata(spark, samples_dir):
    df = spark.read.format("cmi").load(os.path.join(samples_dir, "mixed_types.dmp"))
    types = {f.name: f.dataType for f in df.schema.fields}
    assert types["ID"] == DoubleType() and types["NAME"] == StringType()
    assert types["OPENED"] == DateType() and types["UPDATED"] == TimestampNTZType()
    assert types["CUTOFF"] == DayTimeIntervalType()  # SAS TIME: elapsed seconds (timeType=interval)
    meta = df.schema["OPENED"].metadata
    assert meta == {"label": "Date opened", "format": "DATE9.", "informat": "", "sas_type": "num", "sas_length": 8}
    assert df.schema["SCORE"].metadata["sas_length"] == 4
    assert df.schema["NAME"].metadata["sas_type"] == "char"
    rows = {r["ID"]: r for r in df.collect()}
    assert rows[3.0]["NAME"] == "Jürgen Müller" and rows[3.0]["CITY"] == "München"
    assert rows[3.0]["BALANCE"] is None and rows[3.0]["OPENED"] is None
    assert rows[1.0]["OPENED"] == dt.date(1815, 12, 10)
    assert rows[4.0]["UPDATED"] == dt.datetime(2000, 2, 29, 12, 0, 0, 250000)
    assert rows[1.0]["CUTOFF"] == dt.timedelta(hours=17)
    assert rows[5.0]["NAME"] is None and rows[5.0]["CITY"] is None  # all-blank character = missing
    assert rows[2.0]["ACTIVE"] == 0.0 and rows[4.0]["ACTIVE"] is None


def test_zos_and_big_endian_samples(spark, samples_dir):
    ledger = {r["ACCOUNT"]: r for r in spark.read.format("cmi").option("dataset", "prod.ledger")
              .load(samples_dir).collect()}
    assert ledger["0012345678"]["AMOUNT"] == -118.625
    assert ledger["0098765432"]["BRANCH"] == 2048.0 and ledger["0055555555"]["BRANCH"] is None
    assert ledger["0012345678"]["POSTED"] == dt.datetime(2023, 3, 1, 8, 15)
    sales = spark.read.format("cmi").option("dataset", "SALES.MONTHLY").load(samples_dir)
    assert sorted(r["REGION"] for r in sales.collect()) == ["Nord", "Süd", "Île-de-France", "Ørestad"]


def test_no_selection_over_several_datasets_lists_candidates(spark, samples_dir):
    with pytest.raises(PySparkException) as err:
        spark.read.format("cmi").load(samples_dir).collect()
    text = str(err.value)
    assert "WORK.CUSTOMERS" in text and "PROD.LEDGER" in text and "SALES.MONTHLY" in text


def test_attachment_option_and_views(spark, samples_dir):
    atts = spark.read.format("cmi").option("view", "attachments").load(samples_dir)
    by_name = {r["name"]: r for r in atts.collect()}
    assert set(by_name) == {"WORK.CUSTOMERS", "SALES.MONTHLY", "PROD.LEDGER", "WORK.ORDERS", "RV.ORDERS",
                            "MQTT.ORDERS", "report.txt", "logo.bin", "d:\\mytext.txt", "rv_note.txt",
                            "FIN.DAILY_SALES", "sales_notes.txt", "PROD.INVENTORY", "FIN.RETURNS"}
    assert [n for n, r in by_name.items() if not r["complete"]] == ["FIN.RETURNS"]
    assert by_name["WORK.ORDERS"]["source"].endswith("amqsbcg_browse.txt")
    customers = by_name["WORK.CUSTOMERS"]
    assert customers["kind"] == "dataset" and customers["complete"] and customers["observations"] == 6
    assert customers["variables"] == 9 and customers["message"] == b"Nightly customer extract"
    assert customers["found_messages"] == customers["expected_messages"]
    by_key = spark.read.format("cmi").option("attachment", customers["attachment"].lower()).load(samples_dir)
    assert by_key.count() == 6

    variables = spark.read.format("cmi").option("view", "variables").load(samples_dir)
    rows = variables.where("dataset = 'WORK.CUSTOMERS'").orderBy("position").collect()
    assert [r["name"] for r in rows][:3] == ["ID", "NAME", "CITY"]
    assert rows[1]["type"] == "char" and rows[1]["length"] == 20 and rows[1]["label"] == "Customer name"
    assert rows[5]["format"] == "DATE9."

    files = {r["name"]: r for r in spark.read.format("cmi").option("view", "files").load(samples_dir).collect()}
    assert files["report.txt"]["text"] == "Quarterly report\nRevenue: 1.2M\nStatus: grün\n"
    assert files["logo.bin"]["content"] == bytes(range(256)) * 4 and files["logo.bin"]["text"] is None
    assert files["d:\\mytext.txt"]["text"].startswith("First line of the text file.\n")


def test_messages_view_roles(spark, samples_dir):
    msgs = spark.read.format("cmi").option("view", "messages").load(os.path.join(samples_dir, "mixed_types.dmp"))
    rows = msgs.orderBy("index").collect()
    roles = [r["role"] for r in rows]
    assert roles[0] == "header" and roles[1] == "application" and roles[-1] == "count"
    sequenced = [r for r in rows if r["role"] == "sequenced"]
    assert [r["sequence"] for r in sequenced] == list(range(1, len(sequenced) + 1))
    assert sequenced[0]["record_type"] == 1 and sequenced[-1]["record_type"] == 3
    assert all(r["length"] <= 256 for r in rows)  # the sample was written with 256-byte messages
    assert rows[0]["msg_type"] == 100000 and rows[0]["encoding"] == 546 and rows[0]["ccsid"] == 1208


def test_list_of_paths_glob_and_union_of_identical_layouts(spark, tmp_path):
    table = pa.table({"K": pa.array([1.0, 2.0]), "S": ["a", "b"]})
    first = write_dump(tmp_path / "one.dmp", [DatasetToWrite(table, "LIB", "PART1")])
    second = write_dump(tmp_path / "two.dmp", [DatasetToWrite(table.slice(1), "LIB", "PART2")])
    both = spark.read.format("cmi").load([first, second])
    assert sorted((r["K"], r["S"]) for r in both.collect()) == [(1.0, "a"), (2.0, "b"), (2.0, "b")]
    assert both.rdd.getNumPartitions() == 2  # one partition per attachment
    globbed = spark.read.format("cmi").load(str(tmp_path / "t*.dmp"))
    assert globbed.count() == 1


def test_incomplete_dataset_is_an_error_but_visible(spark, tmp_path):
    path = write_dump(tmp_path / "full.dmp", [DatasetToWrite(pa.table({"X": [1.0, 2.0, 3.0]}), "LIB", "DS")])
    text = open(path, "rb").read()
    records = text.split(b"\n\n")
    # Drop the last sequenced message (the record before the trailing count message).
    broken = b"\n\n".join(records[:-3] + records[-2:])
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "cut.dmp").write_bytes(broken)
    atts = spark.read.format("cmi").option("view", "attachments").load(str(tmp_path / "broken")).collect()
    assert len(atts) == 1 and atts[0]["complete"] is False and "missing" in atts[0]["problem"]
    with pytest.raises(PySparkException, match="incomplete"):
        spark.read.format("cmi").load(str(tmp_path / "broken")).collect()


def test_bad_options_are_clear(spark, samples_dir):
    with pytest.raises(PySparkException, match="view .rows. is not known; valid: dataset, attachments"):
        spark.read.format("cmi").option("view", "rows").load(samples_dir).collect()
    with pytest.raises(PySparkException, match="32 hex digits"):
        spark.read.format("cmi").option("attachment", "xyz").load(samples_dir).collect()
    with pytest.raises(PySparkException, match="no dataset NOPE.NOPE"):
        spark.read.format("cmi").option("dataset", "nope.nope").load(samples_dir).collect()


def test_batch_rows_and_temporal_types_options(spark, tmp_path):
    n = 2500
    table = pa.table({"I": pa.array(range(n), pa.float64()),
                      "D": pa.array([dt.date(2000, 1, 1) + dt.timedelta(days=i) for i in range(n)])})
    path = write_dump(tmp_path / "big.dmp", [DatasetToWrite(table, "LIB", "BIG")])
    df = spark.read.format("cmi").option("batchRows", "100").load(path)
    assert df.count() == n and df.agg({"I": "sum"}).collect()[0][0] == sum(range(n))
    raw = spark.read.format("cmi").option("temporalTypes", "false").load(path)
    assert raw.schema["D"].dataType == DoubleType()
    first = raw.orderBy("I").first()
    assert first["D"] == (dt.date(2000, 1, 1) - dt.date(1960, 1, 1)).days


def test_spark_reads_segments_joined_in_the_partition(spark, tmp_path):
    path = dump_messages(tmp_path, segmented(plain(), rng=random.Random(3)))
    rows = spark.read.format("cmi").load(path).orderBy("ID").collect()
    assert [r.asDict() for r in rows] == EXPECTED


def test_spark_reads_amqsbcg_output_and_compressed_dumps(spark, samples_dir, tmp_path):
    browse = os.path.join(samples_dir, "amqsbcg_browse.txt")
    orders = spark.read.format("cmi").load(browse).orderBy("ORDER").collect()
    assert len(orders) == 20 and (orders[0]["ORDER"], orders[0]["ITEM"]) == (1000.0, "bolt")
    messages = spark.read.format("cmi").option("view", "messages").load(browse)
    header = messages.filter("role = 'header'").select("transport", "msg_type", "payload").collect()
    assert [(r["transport"], r["msg_type"]) for r in header] == [("mq", 100000)] and len(header[0]["payload"]) > 100
    packed = tmp_path / "mixed_types.bin"  # gzip, recognised by its magic bytes
    packed.write_bytes(gzip.compress(open(os.path.join(samples_dir, "mixed_types.dmp"), "rb").read()))
    plain = spark.read.format("cmi").load(os.path.join(samples_dir, "mixed_types.dmp")).collect()
    assert spark.read.format("cmi").load(str(packed)).collect() == plain
