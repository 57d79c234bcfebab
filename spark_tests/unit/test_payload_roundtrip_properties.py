"""Property tests: Arrow table -> CMI dump (write_attachments_dump) -> Capture.open -> dataset_table.

What must come back (docs/spec/sas-records.md#column-types): numerics as float64 (integers too), SAS missing as null,
strings with trailing blanks/NULs removed and ""/all-blank as null, dates, naive timestamps and
times as such. S/390 hexadecimal floats hold a 56-bit fraction, so every double of their range
(about 5.4e-79 .. 7.2e75) is stored exactly: the round trip is compared exactly for 785 too.
"""
from __future__ import annotations

import datetime as dt
import os
import struct
import tempfile
from fractions import Fraction

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cmi_datasource import read
from cmi_datasource.engine.write import DatasetToWrite, WriteOptions, write_attachments_dump

# (MQ Encoding, CCSID): x86 + UTF-8, AIX + Latin-1, z/OS + EBCDIC.
CASES = [(546, 1208), (273, 819), (785, 37)]
CASE_IDS = ["546-utf8", "273-latin1", "785-ebcdic"]

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

CP037_CHARS = bytes(range(256)).decode("cp037")


def ieee_truncated(x: float, width: int) -> float:
    return struct.unpack(">d", struct.pack(">d", x)[:width] + bytes(8 - width))[0]


def s390_truncated(x: float, width: int) -> float:
    """Exact S/390 hexadecimal float of x, keeping the first ``width`` bytes."""
    if x == 0:
        return 0.0
    v, e = abs(Fraction(x)), 0
    while v >= 1:
        v, e = v / 16, e + 1
    while v < Fraction(1, 16):
        v, e = v * 16, e - 1
    fraction = v * (1 << 56)
    assert fraction.denominator == 1
    kept = (int(fraction) >> (8 * (8 - width))) << (8 * (8 - width))
    value = Fraction(kept, 1 << 56) * Fraction(16) ** e
    return float(-value if x < 0 else value)


def floats_for(encoding: int):
    if encoding == 785:
        magnitude = st.floats(min_value=1e-75, max_value=7e75, allow_nan=False, allow_infinity=False)
        return st.one_of(st.just(0.0), magnitude, magnitude.map(lambda x: -x))
    return st.floats(allow_nan=False, allow_infinity=False, width=64)


def text_for(ccsid: int):
    if ccsid == 1208:
        alphabet = st.characters(blacklist_categories=("Cs",))
    elif ccsid == 819:
        alphabet = st.characters(max_codepoint=0xFF)
    else:
        alphabet = st.sampled_from(CP037_CHARS)
    # Blanks and NULs often, so trailing/leading/all-blank values are common.
    return st.text(alphabet=st.one_of(alphabet, st.sampled_from(" \x00")), max_size=10)


@st.composite
def tables(draw, encoding: int, ccsid: int):
    n = draw(st.integers(min_value=0, max_value=12))

    def column(element):
        return draw(st.lists(st.one_of(st.none(), element), min_size=n, max_size=n))

    truncated_width = draw(st.integers(min_value=3, max_value=8))
    data = {
        "f": pa.array(column(floats_for(encoding)), pa.float64()),
        "g": pa.array(column(floats_for(encoding)), pa.float64()),
        "i": pa.array(column(st.integers(min_value=-(2 ** 53), max_value=2 ** 53)), pa.int64()),
        "s": pa.array(column(text_for(ccsid)), pa.string()),
        "d": pa.array(column(st.dates(dt.date(1900, 1, 1), dt.date(2100, 12, 31))), pa.date32()),
        "ts": pa.array(column(st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2100, 12, 31, 23, 59, 59, 999999))),
                       pa.timestamp("us")),
        "t": pa.array(column(st.times()), pa.time64("us")),
        # SAS TIME values are elapsed seconds: durations past a day, negative ones, microseconds.
        "du": pa.array(column(st.timedeltas(dt.timedelta(days=-1000), dt.timedelta(days=1000))), pa.duration("us")),
    }
    fields = [pa.field(name, arr.type) for name, arr in data.items()]
    fields[1] = fields[1].with_metadata({"sas_length": str(truncated_width)})
    return pa.Table.from_arrays(list(data.values()), schema=pa.schema(fields)), truncated_width


def round_trip(table: pa.Table, encoding: int, ccsid: int, **read_options) -> pa.Table:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "capture.dmp")
        with open(path, "wb") as f:
            write_attachments_dump(f, [DatasetToWrite(table, "work", "prop")],
                                   options=WriteOptions(encoding=encoding, ccsid=ccsid))
        return read(path, **read_options)


def since_midnight(times) -> list:
    """Times of day as what a SAS TIME value is read as by default: the interval since midnight."""
    return [None if t is None else dt.timedelta(hours=t.hour, minutes=t.minute, seconds=t.second,
                                                microseconds=t.microsecond) for t in times]


def expected_string(v):
    if v is None:
        return None
    return v.rstrip(" \x00") or None


@pytest.mark.parametrize("encoding,ccsid", CASES, ids=CASE_IDS)
@SETTINGS
@given(data=st.data())
def test_dataset_round_trip(encoding, ccsid, data):
    table, width = data.draw(tables(encoding, ccsid))
    result = round_trip(table, encoding, ccsid)
    assert result.num_rows == table.num_rows
    assert result.schema.names == table.schema.names
    assert [f.type for f in result.schema] == [pa.float64(), pa.float64(), pa.float64(), pa.string(),
                                               pa.date32(), pa.timestamp("us"), pa.duration("us"),
                                               pa.duration("us")]
    meta = {f.name: f.metadata for f in result.schema}
    assert meta["g"][b"sas_length"] == str(width).encode()
    assert meta["f"][b"sas_type"] == b"num" and meta["s"][b"sas_type"] == b"char"
    assert meta["d"][b"format"] == b"DATE9."
    assert meta["t"][b"format"] == b"TIME8." and meta["du"][b"format"] == b"TIME10."

    col = {name: result.column(name).to_pylist() for name in result.schema.names}
    assert col["f"] == table.column("f").to_pylist()
    truncate = s390_truncated if encoding == 785 else ieee_truncated
    assert col["g"] == [None if v is None else truncate(v, width) for v in table.column("g").to_pylist()]
    assert col["i"] == [None if v is None else float(v) for v in table.column("i").to_pylist()]
    assert col["s"] == [expected_string(v) for v in table.column("s").to_pylist()]
    assert col["d"] == table.column("d").to_pylist()
    assert col["ts"] == table.column("ts").to_pylist()
    assert col["t"] == since_midnight(table.column("t").to_pylist())
    assert col["du"] == table.column("du").to_pylist()


# Instants found while checking the property above: each is a whole microsecond in 1900-2100,
# and the nearest double to its SAS datetime (seconds since 1960) identifies that microsecond.
MICROSECOND_INSTANTS = [
    dt.datetime(2035, 6, 15, 12, 0, 0, 7),
    dt.datetime(2035, 6, 15, 12, 0, 0, 13),
    dt.datetime(2099, 1, 1, 0, 0, 0, 7),
    dt.datetime(2099, 1, 1, 0, 0, 0, 11),
    dt.datetime(2100, 6, 1, 0, 0, 0, 9),
]


@pytest.mark.parametrize("encoding,ccsid", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("instant", MICROSECOND_INSTANTS, ids=str)
def test_datetime_microseconds_round_trip_exactly(encoding, ccsid, instant):
    # The nearest double is close enough to recover the microsecond: the precision is there.
    sas_seconds = Fraction(int((instant - dt.datetime(1960, 1, 1)) / dt.timedelta(microseconds=1)), 10 ** 6)
    nearest = float(sas_seconds)
    assert abs(Fraction(nearest) - sas_seconds) < Fraction(1, 2 * 10 ** 6)
    table = pa.table({"ts": pa.array([instant, None, dt.datetime(2000, 1, 1)], pa.timestamp("us"))})
    result = round_trip(table, encoding, ccsid)
    assert result.column("ts").to_pylist() == [instant, None, dt.datetime(2000, 1, 1)]


@pytest.mark.parametrize("encoding,ccsid", CASES, ids=CASE_IDS)
def test_round_trip_edge_values(encoding, ccsid):
    table = pa.table({
        "x": pa.array([0.0, -0.0, 1.0, -118.625, None, 1e-70, 1e70, 2.0 ** 53], pa.float64()),
        "s": pa.array(["", " ", "  a", "b  ", None, "\x00", "a\x00b", "A" * 20], pa.string()),
        "d": pa.array([dt.date(1900, 1, 1), dt.date(1960, 1, 1), dt.date(1959, 12, 31), dt.date(1970, 1, 1),
                       None, dt.date(2100, 12, 31), dt.date(2000, 2, 29), dt.date(1, 1, 1)], pa.date32()),
        "t": pa.array([dt.time(0), dt.time(23, 59, 59, 999999), dt.time(12), None, dt.time(0, 0, 0, 1),
                       dt.time(1, 2, 3), dt.time(6), dt.time(18)], pa.time64("us")),
    })
    result = round_trip(table, encoding, ccsid, timeType="time")
    assert result.column("x").to_pylist() == [0.0, 0.0, 1.0, -118.625, None, 1e-70, 1e70, 2.0 ** 53]
    assert result.column("s").to_pylist() == [None, None, "  a", "b", None, None, "a\x00b", "A" * 20]
    assert result.column("d").to_pylist() == table.column("d").to_pylist()
    assert result.column("t").cast(pa.time64("us")).to_pylist() == table.column("t").to_pylist()
    assert round_trip(table, encoding, ccsid).column("t").to_pylist() == since_midnight(table.column("t").to_pylist())


@pytest.mark.parametrize("encoding,ccsid", CASES, ids=CASE_IDS)
def test_empty_table_round_trip(encoding, ccsid):
    table = pa.table({"x": pa.array([], pa.float64()), "s": pa.array([], pa.string())})
    result = round_trip(table, encoding, ccsid)
    assert result.num_rows == 0
    assert result.schema.names == ["x", "s"]
