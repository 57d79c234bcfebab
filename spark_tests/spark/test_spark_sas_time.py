"""SAS TIME values in a Spark session that does not enable Spark's TIME type (the default of
Spark 4.x: spark.sql.timeType.enabled=false; the shared ``spark`` fixture enables it, so these
tests use a session of their own with it off). Read as intervals by default, the values of a
real SAS data set (durations past a day, negative times, microseconds, missing values) are
filtered and compared, written to Parquet and CSV, and written back to a capture with their
TIME formats (docs/reading.md#sas-time-values)."""
from __future__ import annotations

import datetime as dt
import glob
import os

import pytest
from pyspark.errors import PySparkException
from pyspark.sql.types import DayTimeIntervalType, DoubleType

import independent_parser as P
from independent_encoder import Encoder, Missing, Var, write_dump

pytestmark = pytest.mark.spark

HEADER_CID, MSG_CID = bytes.fromhex("A1" * 24), bytes.fromhex("B2" * 24)
KEY = bytes.fromhex("00112233445566778899AABBCCDDEEFF")
VARIABLES = [Var("ID", "num", 8, "BEST", 12), Var("CUTOFF", "num", 8, "TIME", 8, label="Cut-off"),
             Var("WAIT", "num", 8, "TIME", 15, 6)]
ROWS = [[1, 359280.0, 45296.123456],        # 99:48:00 in SAS
        [2, -3600.5, -0.000001],
        [3, Missing("."), Missing("Z")],
        [4, 43200.0, 0.000001],             # 12:00:00 exactly
        [5, 43200.000001, 86400.0]]
CUTOFF = {r[0]: None if isinstance(r[1], Missing) else dt.timedelta(seconds=r[1]) for r in ROWS}
WAIT = {r[0]: None if isinstance(r[2], Missing) else dt.timedelta(seconds=r[2]) for r in ROWS}


@pytest.fixture
def plain_session(spark):
    """A session as Spark 4.x makes one by default: Spark's TIME type not enabled."""
    session = spark.newSession()
    session.conf.set("spark.sql.timeType.enabled", "false")
    # What its users meet (as in a session with no flags, checked by hand): Spark refuses TIME there.
    with pytest.raises(PySparkException, match="UNSUPPORTED_TIME_TYPE"):
        session.sql("select cast('12:00:00' as time) as t").collect()
    return session


@pytest.fixture
def sas_times(tmp_path):
    enc = Encoder(encoding=546)
    attachment = enc.dataset_attachment(KEY, "work", "times", VARIABLES, ROWS, max_payload=100)
    return str(write_dump(tmp_path / "times.dmp", enc.transmission(HEADER_CID, MSG_CID, b"", [attachment])))


def by_id(rows, column):
    return {int(r["ID"]): r[column] for r in rows}


def test_times_are_intervals_filtered_compared_and_written_to_parquet_and_csv(plain_session, sas_times, tmp_path):
    df = plain_session.read.format("cmi").load(sas_times)
    assert df.schema["CUTOFF"].dataType == DayTimeIntervalType() == df.schema["WAIT"].dataType
    assert df.schema["CUTOFF"].metadata["format"] == "TIME8." and df.schema["WAIT"].metadata["format"] == "TIME15.6"
    rows = df.collect()
    assert by_id(rows, "CUTOFF") == CUTOFF and by_id(rows, "WAIT") == WAIT

    later = df.where("CUTOFF > interval '12:00:00' hour to second").select("ID").collect()
    assert sorted(int(r["ID"]) for r in later) == [1, 5]
    assert df.where("WAIT < interval '0' second").select("ID").first()["ID"] == 2
    assert df.where("CUTOFF >= make_dt_interval(4, 3, 48, 0)").select("ID").first()["ID"] == 1
    assert df.selectExpr("max(CUTOFF)").first()[0] == dt.timedelta(hours=99, minutes=48)

    parquet = str(tmp_path / "parquet")
    df.write.parquet(parquet)
    back = plain_session.read.parquet(parquet)
    assert back.schema["CUTOFF"].dataType == DayTimeIntervalType()
    assert by_id(back.collect(), "CUTOFF") == CUTOFF and by_id(back.collect(), "WAIT") == WAIT

    csv = str(tmp_path / "csv")
    df.write.option("header", "true").csv(csv)
    text = "".join(open(f, encoding="utf-8").read() for f in glob.glob(os.path.join(csv, "part-*.csv")))
    assert "INTERVAL '4 03:48:00' DAY TO SECOND" in text
    assert "INTERVAL '-0 01:00:00.5' DAY TO SECOND" in text
    assert "INTERVAL '-0 00:00:00.000001' DAY TO SECOND" in text
    typed = plain_session.read.schema(df.schema).option("header", "true").csv(csv)
    assert by_id(typed.collect(), "CUTOFF") == CUTOFF and by_id(typed.collect(), "WAIT") == WAIT


def test_times_round_trip_through_a_capture_keeping_their_time_formats(plain_session, sas_times, tmp_path):
    df = plain_session.read.format("cmi").load(sas_times)
    out = str(tmp_path / "out")
    df.write.format("cmi").mode("append").option("dataset", "work.again").save(out)
    [dump] = glob.glob(os.path.join(out, "*.dmp"))
    msgs = P.parse_dump(open(dump, "rb").read())
    header = P.parse_header(msgs[0])
    sequenced = [m for m in msgs[2:] if m.correl_id[:16] == header.attachments[0].key
                 and m.correl_id[16:20] != bytes(4)]
    ds = P.parse_dataset([m.payload for m in sequenced], header.order, header.long_size, msgs[0].ccsid)
    assert [(v.name, v.format, v.format_width, v.format_decimals, v.label) for v in ds.variables] == [
        ("ID", "BEST", 12, 0, ""), ("CUTOFF", "TIME", 8, 0, "Cut-off"), ("WAIT", "TIME", 15, 6, "")]
    written = {int(r[0]): [None if x is P.MISSING else x for x in r[1:]]
               for r in P.decode_rows(ds, msgs[0].encoding, msgs[0].ccsid)}
    assert written == {r[0]: [None if isinstance(x, Missing) else x for x in r[1:]] for r in ROWS}

    back = plain_session.read.format("cmi").load(out)
    assert back.schema == df.schema
    assert sorted(back.collect()) == sorted(df.collect())


def test_time_type_option_in_each_session(spark, plain_session, sas_times):
    seconds = plain_session.read.format("cmi").option("timeType", "seconds").load(sas_times)
    assert seconds.schema["CUTOFF"].dataType == DoubleType()
    assert by_id(seconds.collect(), "CUTOFF") == {k: v and v.total_seconds() for k, v in CUTOFF.items()}
    # A time of day where the session enables it (the shared fixture does): a duration is refused.
    with pytest.raises(PySparkException, match=r"ValueConversionError: variable (CUTOFF|WAIT) .* is not a time of day"):
        spark.read.format("cmi").option("timeType", "time").load(sas_times).collect()
