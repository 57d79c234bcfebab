"""df.write.format("cmi"): round trips, atomicity, overwrite, options and errors."""
from __future__ import annotations

import datetime as dt
import decimal
import os

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import functions as F
from pyspark.sql.types import (BinaryType, BooleanType, DateType, DecimalType, DoubleType, FloatType,
                               IntegerType, LongType, StringType, StructField, StructType, TimestampNTZType,
                               TimestampType, TimeType, ArrayType)

pytestmark = pytest.mark.spark

ALL_TYPES = StructType([
    StructField("i", IntegerType()), StructField("l", LongType()), StructField("f", FloatType()),
    StructField("d", DoubleType()), StructField("dec", DecimalType(12, 2)), StructField("b", BooleanType()),
    StructField("day", DateType()), StructField("ts_ntz", TimestampNTZType()), StructField("t", TimeType()),
    StructField("s", StringType(), metadata={"label": "Some text", "format": "$CHAR40."}),
])
ROWS = [
    (1, 2 ** 40, 1.5, -2.25, decimal.Decimal("1234.56"), True, dt.date(1960, 1, 1),
     dt.datetime(2024, 2, 29, 23, 59, 59, 123456), dt.time(8, 30, 15), "plain"),
    (None, None, None, None, None, None, None, None, None, None),
    (-7, -1, 0.0, 1e300, decimal.Decimal("-0.01"), False, dt.date(1582, 10, 15),
     dt.datetime(1900, 1, 1), dt.time(23, 59, 59, 999999), "Ünïcödé ✓ 漢字"),
]


def files_in(directory):
    return sorted(os.listdir(directory)) if os.path.isdir(directory) else []


def test_round_trip_all_types_nulls_unicode(spark, tmp_path):
    out = str(tmp_path / "out")
    df = spark.createDataFrame(ROWS, ALL_TYPES).repartition(3)
    df.write.format("cmi").mode("append").option("dataset", "work.types").save(out)
    # The session enables Spark's TIME; times of day come back as such (by default, as intervals).
    back = spark.read.format("cmi").option("timeType", "time").load(out)
    assert [f.name for f in back.schema.fields] == [f.name for f in ALL_TYPES.fields]
    types = {f.name: f.dataType for f in back.schema.fields}
    assert types["day"] == DateType() and types["ts_ntz"] == TimestampNTZType()
    assert isinstance(types["t"], TimeType) and types["s"] == StringType() and types["i"] == DoubleType()
    rows = sorted(back.collect(), key=lambda r: (r["i"] is None, r["i"]))
    assert rows[0]["i"] == -7 and rows[0]["l"] == -1 and rows[0]["d"] == 1e300
    assert rows[0]["dec"] == -0.01 and rows[0]["b"] == 0.0 and rows[0]["day"] == dt.date(1582, 10, 15)
    assert rows[0]["t"] == dt.time(23, 59, 59, 999999) and rows[0]["s"] == "Ünïcödé ✓ 漢字"
    assert rows[1]["l"] == 2 ** 40 and rows[1]["f"] == 1.5 and rows[1]["dec"] == 1234.56 and rows[1]["b"] == 1.0
    assert rows[1]["ts_ntz"] == dt.datetime(2024, 2, 29, 23, 59, 59, 123456)
    assert all(v is None for v in rows[2].asDict().values())
    meta = back.schema["s"].metadata
    assert meta["label"] == "Some text" and meta["format"] == "$CHAR40."
    assert meta["sas_length"] == len("Ünïcödé ✓ 漢字".encode())
    assert back.schema["day"].metadata["format"] == "DATE9."
    assert back.schema["ts_ntz"].metadata["format"] == "DATETIME20."


def test_timestamp_is_written_as_session_local_time(spark, tmp_path):
    out = str(tmp_path / "out")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        df = spark.createDataFrame([(dt.datetime(2020, 6, 1, 8, 0),)], StructType([StructField("ts", TimestampType())]))
        df.write.format("cmi").mode("append").save(out)
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    [row] = spark.read.format("cmi").load(out).collect()
    assert row["ts"] == dt.datetime(2020, 6, 1, 8, 0)  # the wall clock the user saw


@pytest.mark.parametrize("encoding, ccsid, text", [(273, 819, "Straße à la carte"), (785, 37, "Ça coûte 5 $"),
                                                   (785, 1047, "z/OS [brackets]"), (546, 1252, "€uro")])
def test_round_trip_encodings(spark, tmp_path, encoding, ccsid, text):
    out = str(tmp_path / "out")
    df = spark.createDataFrame([(text, 1.0 / 3), (None, -118.625)], "s string, x double")
    (df.write.format("cmi").mode("append").option("encoding", str(encoding)).option("ccsid", str(ccsid))
     .save(out))
    rows = sorted(spark.read.format("cmi").load(out).collect(), key=lambda r: r["x"])
    assert rows[0]["x"] == -118.625 and rows[0]["s"] is None
    assert rows[1]["s"] == text and rows[1]["x"] == pytest.approx(1.0 / 3, rel=1e-15)
    msgs = spark.read.format("cmi").option("view", "messages").load(out).collect()
    assert {(m["encoding"], m["ccsid"]) for m in msgs} == {(encoding, ccsid)}


def test_wide_frame_many_partitions_one_attachment(spark, tmp_path):
    out = str(tmp_path / "out")
    n, width = 5000, 120
    df = spark.range(n).select(*[(F.col("id") * k).cast("double").alias(f"c{k}") for k in range(width)],
                               F.concat(F.lit("row "), F.col("id").cast("string")).alias("label"))
    df.repartition(12).write.format("cmi").mode("append").option("dataset", "lib.wide").save(out)
    atts = spark.read.format("cmi").option("view", "attachments").load(out).collect()
    assert len(atts) == 1 and atts[0]["observations"] == n and atts[0]["variables"] == width + 1
    back = spark.read.format("cmi").load(out)
    assert back.count() == n
    assert back.agg(F.sum("c7")).collect()[0][0] == 7 * n * (n - 1) / 2
    assert back.where("c1 = 4321").select("label").collect()[0][0] == "row 4321"


def test_attachment_per_partition(spark, tmp_path):
    out = str(tmp_path / "out")
    spark.range(30).repartition(3).selectExpr("cast(id as double) as id").write.format("cmi") \
        .mode("append").option("attachmentPerPartition", "true").option("dataset", "a.parts").save(out)
    atts = spark.read.format("cmi").option("view", "attachments").load(out).collect()
    assert len(atts) == 3 and sum(a["observations"] for a in atts) == 30
    assert spark.read.format("cmi").load(out).count() == 30  # identical layouts: unioned


def test_append_adds_a_file_and_overwrite_replaces_only_our_dumps(spark, tmp_path):
    out = tmp_path / "out"
    df = spark.createDataFrame([(1.0,)], "x double")
    df.write.format("cmi").mode("append").option("dataset", "a.one").save(str(out))
    df.write.format("cmi").mode("append").option("dataset", "a.one").save(str(out))
    assert len(files_in(out)) == 2 and all(f.startswith("cmi-a.one-") and f.endswith(".dmp") for f in files_in(out))
    (out / "notes.txt").write_text("keep me")
    (out / "cmi-foreign.dmp").write_text("* QLOAD Version:8.0 Created:x\n")  # not ours: no mark
    spark.createDataFrame([(2.0,), (3.0,)], "x double").write.format("cmi").mode("overwrite") \
        .option("dataset", "a.two").save(str(out))
    names = files_in(out)
    assert "notes.txt" in names and "cmi-foreign.dmp" in names
    ours = [n for n in names if n.startswith("cmi-a.")]
    assert len(ours) == 1 and ours[0].startswith("cmi-a.two-")
    assert sorted(r["x"] for r in spark.read.format("cmi").load(str(out / ours[0])).collect()) == [2.0, 3.0]


def test_failed_job_leaves_destination_unchanged(spark, tmp_path):
    out = tmp_path / "out"
    spark.createDataFrame([(1.0,)], "x double").write.format("cmi").mode("append").save(str(out))
    before = {p: (out / p).read_bytes() for p in files_in(out)}

    @F.udf("double")
    def explode_on_500(x):
        if x == 500:
            raise ValueError("task failure injected by the test")
        return x

    failing = spark.range(1000).repartition(4).select(explode_on_500(F.col("id").cast("double")).alias("x"))
    with pytest.raises(Exception, match="task failure injected"):
        failing.write.format("cmi").mode("overwrite").save(str(out))
    assert {p: (out / p).read_bytes() for p in files_in(out)} == before  # no leftovers, nothing replaced

    fresh = tmp_path / "never"
    with pytest.raises(Exception, match="task failure injected"):
        failing.write.format("cmi").mode("append").save(str(fresh))
    assert not fresh.exists()


def test_unsupported_columns_are_clear_errors(spark, tmp_path):
    nested = spark.createDataFrame([([1, 2],)], StructType([StructField("arr", ArrayType(IntegerType()))]))
    with pytest.raises(PySparkException, match="arr.*no SAS equivalent"):
        nested.write.format("cmi").mode("append").save(str(tmp_path / "a"))
    binary = spark.createDataFrame([(b"\x00",)], StructType([StructField("raw", BinaryType())]))
    with pytest.raises(PySparkException, match="raw.*no SAS equivalent"):
        binary.write.format("cmi").mode("append").save(str(tmp_path / "b"))
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_long_strings_need_truncate_and_code_page_errors_name_the_column(spark, tmp_path):
    long_text = spark.createDataFrame([("x" * 40000,)], "s string")
    with pytest.raises(PySparkException, match="column s has values of 40000 bytes"):
        long_text.write.format("cmi").mode("append").save(str(tmp_path / "a"))
    assert not (tmp_path / "a").exists()
    long_text.write.format("cmi").mode("append").option("truncate", "true").save(str(tmp_path / "b"))
    [row] = spark.read.format("cmi").load(str(tmp_path / "b")).collect()
    assert row["s"] == "x" * 32767
    with pytest.raises(PySparkException, match="column 's'.*cannot be encoded in cp037"):
        spark.createDataFrame([("漢字",)], "s string").write.format("cmi").mode("append") \
            .option("ccsid", "37").option("encoding", "785").save(str(tmp_path / "c"))


def test_bad_write_options(spark, tmp_path):
    df = spark.createDataFrame([(1.0,)], "x double")
    for key, value, message in [("dataset", "not a name", "LIB.MEMBER"), ("encoding", "999", "546"),
                                ("longSize", "2", "4 or 8"), ("maxMessageBytes", "40000", "lower"),
                                ("ccsid", "4242", "not supported"), ("kind", "movie", "dataset, text, binary")]:
        with pytest.raises(PySparkException, match=message):
            df.write.format("cmi").mode("append").option(key, value).save(str(tmp_path / "x"))


def test_sas_length_metadata_is_honoured(spark, tmp_path):
    schema = StructType([StructField("n", DoubleType(), metadata={"sas_length": 4}),
                         StructField("s", StringType(), metadata={"sas_length": 12})])
    spark.createDataFrame([(0.5, "ab")], schema).write.format("cmi").mode("append").save(str(tmp_path / "o"))
    variables = {r["name"]: r["length"] for r in
                 spark.read.format("cmi").option("view", "variables").load(str(tmp_path / "o")).collect()}
    assert variables == {"n": 4, "s": 12}


def test_files_are_written_as_file_attachments(spark, tmp_path):
    out = str(tmp_path / "files")
    texts = spark.createDataFrame([("a.txt", "one\ntwo\n"), ("b.txt", "drei\n")], "name string, text string")
    texts.write.format("cmi").mode("append").option("kind", "text").save(out)
    blobs = spark.createDataFrame([("c.bin", bytes(range(256)) * 3)], "name string, content binary")
    blobs.write.format("cmi").mode("append").option("kind", "binary").option("lrecl", "100").save(out)
    rows = {r["name"]: r for r in spark.read.format("cmi").option("view", "files").load(out).collect()}
    assert rows["a.txt"]["text"] == "one\ntwo\n" and rows["b.txt"]["text"] == "drei\n"
    assert rows["c.bin"]["content"] == bytes(range(256)) * 3 and rows["c.bin"]["lrecl"] == 100
    with pytest.raises(PySparkException, match="needs columns 'name' and 'content'"):
        texts.write.format("cmi").mode("append").option("kind", "binary").save(out)


def test_read_write_read_preserves_names_labels_formats_lengths(spark, samples_dir, tmp_path):
    original = spark.read.format("cmi").load(os.path.join(samples_dir, "mixed_types.dmp"))
    original.write.format("cmi").mode("append").option("dataset", "work.copy").save(str(tmp_path / "copy"))
    copy = spark.read.format("cmi").load(str(tmp_path / "copy"))
    assert copy.schema == original.schema  # names, types and metadata (label, format, informat, lengths)
    assert sorted(copy.collect()) == sorted(original.collect())


def test_empty_dataframe_writes_an_empty_dataset(spark, tmp_path):
    out = str(tmp_path / "empty")
    spark.createDataFrame([], "x double, s string").write.format("cmi").mode("append").save(out)
    [att] = spark.read.format("cmi").option("view", "attachments").load(out).collect()
    assert att["complete"] and att["observations"] == 0 and att["variables"] == 2
    assert spark.read.format("cmi").load(out).count() == 0


def test_application_message_larger_than_a_message_is_refused(spark, tmp_path):
    with pytest.raises(PySparkException, match="option message is 40000 bytes"):
        spark.createDataFrame([(1.0,)], "x double").write.format("cmi").mode("append") \
            .option("message", "m" * 40000).save(str(tmp_path / "o"))


def test_write_as_tibrv_and_read_back_like_the_mq_dump(spark, tmp_path):
    df = spark.createDataFrame(ROWS, ALL_TYPES).repartition(2)
    mq_dir, rv_dir = str(tmp_path / "mq"), str(tmp_path / "rv")
    df.write.format("cmi").mode("append").option("dataset", "work.types").option("encoding", "273").save(mq_dir)
    df.write.format("cmi").mode("append").option("dataset", "work.types").option("transport", "tibrv").save(rv_dir)
    [rv_file] = files_in(rv_dir)
    assert rv_file.startswith("cmi-work.types-") and rv_file.endswith(".rv")
    assert open(os.path.join(rv_dir, rv_file), "rb").read(8)[4:] == bytes.fromhex("9955eeaa")
    mq, rv = spark.read.format("cmi").load(mq_dir), spark.read.format("cmi").load(rv_dir)
    assert rv.schema == mq.schema
    assert sorted(rv.collect(), key=str) == sorted(mq.collect(), key=str)
    kinds = spark.read.format("cmi").option("view", "messages").load(rv_dir).select("rv_type").collect()
    assert [r["rv_type"] for r in kinds][:3] == ["HDR", "MSG", "DAT"] and kinds[-1]["rv_type"] == "LST"
    df.write.format("cmi").mode("overwrite").option("dataset", "work.types").option("transport", "tibrv").save(rv_dir)
    assert len(files_in(rv_dir)) == 1 and files_in(rv_dir) != [rv_file]
    with pytest.raises(PySparkException, match="encoding must be 273 with transport tibrv"):
        df.write.format("cmi").mode("append").option("transport", "tibrv").option("encoding", "546").save(rv_dir)
    with pytest.raises(PySparkException, match="transport .carrier pigeon. is not known; valid: mq, tibrv"):
        df.write.format("cmi").mode("append").option("transport", "carrier pigeon").save(rv_dir)


def test_publish_to_a_live_broker_and_read_the_capture_back(spark, capture_file):
    port, pcap, stop_capture = capture_file
    df = spark.createDataFrame(ROWS, ALL_TYPES).repartition(2)
    (df.write.format("cmi").mode("append").option("dataset", "work.types").option("transport", "mqtt")
     .option("mqtt.broker", f"127.0.0.1:{port}").option("mqtt.topic", "sas/cmi").save())
    stop_capture()
    back = spark.read.format("cmi").load(str(pcap))
    plain = spark.createDataFrame(ROWS, ALL_TYPES)
    assert back.count() == plain.count() and back.columns == plain.columns
    topics = spark.read.format("cmi").option("view", "messages").load(str(pcap)).filter("mqtt_type = 'PUBLISH'")
    assert {r["topic"] for r in topics.select("topic").collect()} == {"sas/cmi"}
    from live import free_port
    with pytest.raises(PySparkException, match="cannot reach the MQTT broker at 127.0.0.1"):
        (df.write.format("cmi").mode("append").option("transport", "mqtt")  # nothing listens there
         .option("mqtt.broker", f"127.0.0.1:{free_port()}").save())
