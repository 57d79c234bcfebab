"""SAS TIME values (elapsed seconds) on bytes from the independent encoder, under each mapping of
read option timeType (docs/reading.md#sas-time-values), and written back with their TIME format.

Real SAS data sets hold TIME-formatted durations of 100 hours and more (359280 s displays as
99:48:00), negative times and fractions: the default mapping, an interval, must hold them all."""
from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
import pytest

from cmi_datasource import read
from cmi_datasource.engine.write import DatasetToWrite, WriteOptions, write_attachments_dump
from cmi_datasource.errors import CmiOptionError, ValueConversionError

try:
    from spark_tests.independent_encoder import Encoder, Missing, Var, write_dump
    from spark_tests import independent_parser as P
except ImportError:  # pragma: no cover - run from inside spark_tests
    from independent_encoder import Encoder, Missing, Var, write_dump
    import independent_parser as P

HEADER_CID, MSG_CID = bytes.fromhex("A1" * 24), bytes.fromhex("B2" * 24)
KEY = bytes.fromhex("00112233445566778899AABBCCDDEEFF")

VARIABLES = [Var("ID", "num", 8, "BEST", 12),
             Var("CUTOFF", "num", 8, "TIME", 8, label="Cut-off"),
             Var("WAIT", "num", 8, "TIME", 15, 6),
             Var("START", "num", 8, "HHMM", 5)]
# (ID, CUTOFF, WAIT, START): durations past a day, negative times, microseconds, missing values.
ROWS = [
    [1, 359280.0, 45296.123456, 28800.0],        # 99:48:00
    [2, -3600.5, -0.000001, 0.0],                # negative: an hour and a half second before
    [3, Missing("."), Missing("A"), Missing("_")],
    [4, 86400.0, 0.000001, 86399.999999],        # a whole day; the smallest fraction
    [5, 3_600_000.25, 1e9, 43200.0],             # 1000 hours; about 31.7 years
]


def seconds(value):
    return None if isinstance(value, Missing) else float(value)


def as_interval(value):
    """What the contract says a TIME value becomes as an interval: its seconds, to the microsecond."""
    return None if isinstance(value, Missing) else dt.timedelta(seconds=value)


def capture(tmp_path, rows=ROWS, variables=VARIABLES, encoding=546):
    enc = Encoder(encoding=encoding, long_size=4)
    attachment = enc.dataset_attachment(KEY, "work", "times", variables, rows, max_payload=80)
    return str(write_dump(tmp_path / "times.dmp", enc.transmission(HEADER_CID, MSG_CID, b"", [attachment])))


@pytest.mark.parametrize("encoding", [546, 273])
def test_times_are_intervals_by_default_holding_durations_negatives_and_microseconds(tmp_path, encoding):
    table = read(capture(tmp_path, encoding=encoding))
    for name in ("CUTOFF", "WAIT", "START"):
        assert table.schema.field(name).type == pa.duration("us"), name
    assert table.schema.field("ID").type == pa.float64()
    for j, name in enumerate(("CUTOFF", "WAIT", "START"), 1):
        assert table.column(name).to_pylist() == [as_interval(r[j]) for r in ROWS], name
    assert table.column("CUTOFF")[0].as_py() == dt.timedelta(hours=99, minutes=48)
    assert table.column("CUTOFF")[1].as_py() == -dt.timedelta(hours=1, seconds=0.5)
    # The microseconds as integers: no rounding on the way.
    micros = table.column("WAIT").cast(pa.int64()).to_pylist()
    assert micros == [45_296_123_456, -1, None, 1, 10 ** 15]
    meta = table.schema.field("CUTOFF").metadata
    assert (meta[b"format"], meta[b"label"], meta[b"sas_type"]) == (b"TIME8.", b"Cut-off", b"num")
    assert table.schema.field("WAIT").metadata[b"format"] == b"TIME15.6"


def test_seconds_keep_the_sas_numbers(tmp_path):
    table = read(capture(tmp_path), timeType="seconds")
    for j, name in enumerate(("CUTOFF", "WAIT", "START"), 1):
        assert table.schema.field(name).type == pa.float64()
        assert table.column(name).to_pylist() == [seconds(r[j]) for r in ROWS], name
    assert table.schema.field("CUTOFF").metadata[b"format"] == b"TIME8."


def test_temporal_types_false_keeps_numbers_whatever_time_type_says(tmp_path):
    for time_type in ("interval", "time", "seconds"):
        table = read(capture(tmp_path), temporalTypes="false", timeType=time_type)
        assert table.column("CUTOFF").to_pylist() == [seconds(r[1]) for r in ROWS]


def test_time_of_day_holds_times_within_a_day(tmp_path):
    rows = [[1, 61200.0, 0.000001, 0.0], [2, Missing("."), 86399.999999, 45296.5]]
    table = read(capture(tmp_path, rows=rows), timeType="time")
    assert table.schema.field("CUTOFF").type == pa.time64("ns")
    assert table.column("CUTOFF").to_pylist() == [dt.time(17), None]
    assert table.column("WAIT").cast(pa.time64("us")).to_pylist() == [dt.time(0, 0, 0, 1),
                                                                       dt.time(23, 59, 59, 999999)]


def test_time_of_day_refuses_a_duration_naming_it_and_the_default(tmp_path):
    with pytest.raises(ValueConversionError) as e:
        read(capture(tmp_path), timeType="time")
    text = str(e.value)
    assert "variable CUTOFF (TIME8.), observation 1: 359280.0 is not a time of day" in text
    assert "timeType=interval" in text
    # PERMISSIVE keeps the rows that are times of day and reports the others.
    table = read(capture(tmp_path), timeType="time", mode="PERMISSIVE")
    assert table.column("ID").to_pylist()[:len(ROWS)] == [None, None, 3.0, None, None]


def test_an_interval_refuses_what_no_interval_holds(tmp_path):
    rows = [[1, 1e13, 0.0, 0.0]]  # about 317,000 years: beyond 2**63 microseconds
    beyond = r"variable CUTOFF \(TIME8.\), observation 1: 10000000000000.0 is beyond"
    with pytest.raises(ValueConversionError, match=beyond):
        read(capture(tmp_path, rows=rows))
    assert read(capture(tmp_path, rows=rows), timeType="seconds").column("CUTOFF").to_pylist() == [1e13]


def test_time_type_names_its_choices():
    with pytest.raises(CmiOptionError, match="timeType 'clock' is not known.*interval, time, seconds"):
        read("unused.dmp", timeType="clock")


def test_intervals_are_written_back_as_time_values(tmp_path):
    """A duration column (what a TIME variable reads as) is written as seconds with its TIME
    format, or TIME10. without one; the independent parser reads the bytes back."""
    source = read(capture(tmp_path))
    fresh = pa.array([dt.timedelta(hours=-2), None, dt.timedelta(days=3, microseconds=7),
                      dt.timedelta(0), dt.timedelta(seconds=1)], pa.duration("us"))
    table = source.append_column("FRESH", fresh)
    path = os.path.join(tmp_path, "out.dmp")
    with open(path, "wb") as f:
        write_attachments_dump(f, [DatasetToWrite(table, "work", "again")],
                               options=WriteOptions(deterministic_seed="t"))
    msgs = P.parse_dump(open(path, "rb").read())
    header = P.parse_header(msgs[0])
    sequenced = [m for m in msgs[2:] if m.correl_id[:16] == header.attachments[0].key
                 and m.correl_id[16:20] != bytes(4)]
    ds = P.parse_dataset([m.payload for m in sequenced], header.order, header.long_size, msgs[0].ccsid)
    formats = {v.name: (v.format, v.format_width, v.format_decimals) for v in ds.variables}
    assert formats == {"ID": ("BEST", 12, 0), "CUTOFF": ("TIME", 8, 0), "WAIT": ("TIME", 15, 6),
                       "START": ("HHMM", 5, 0), "FRESH": ("TIME", 10, 0)}
    rows = P.decode_rows(ds, msgs[0].encoding, msgs[0].ccsid)
    for j, name in enumerate(("CUTOFF", "WAIT", "START"), 1):
        assert [None if r[j] is P.MISSING else r[j] for r in rows] == [seconds(r[j]) for r in ROWS], name
    assert [None if r[4] is P.MISSING else r[4] for r in rows] == [-7200.0, None, 259200.000007, 0.0, 1.0]
    back = read(path)
    assert back.select(["CUTOFF", "WAIT", "START", "FRESH"]).to_pylist() == \
        table.select(["CUTOFF", "WAIT", "START", "FRESH"]).to_pylist()


def test_the_console_shows_times_as_sas_does_and_json_gives_their_seconds():
    from cmi_datasource.cli.output import _json_value
    from cmi_datasource.explore.render import cell
    shown = [cell(dt.timedelta(seconds=s)) for s in (359280.0, -3600.5, 0.0, 45296.123456, -0.000001)]
    assert shown == ["99:48:00", "-1:00:00.5", "0:00:00", "12:34:56.123456", "-0:00:00.000001"]
    assert _json_value(dt.timedelta(seconds=-3600.5)) == -3600.5
