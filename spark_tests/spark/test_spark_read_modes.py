"""Read modes through Spark, on a dump written by the independent encoder whose hex is damaged in
one observation message (observations 16 to 20) and that lost another (observations 31 to 35). The
messages between the two holes cannot be placed (a hole's length is unknown), so observations 16
to 35 are one lost stretch: one report row."""
from __future__ import annotations

import pytest

from cmi_datasource.transports.mq.errors import DumpSyntaxError
from cmi_datasource.spark.errors import typed_errors, unwrap

from independent_encoder import Encoder, Var, dump_text

KEY = bytes(range(1, 17))
ROWS = [(float(i), f"name{i}") for i in range(40)]


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    enc = Encoder()
    attachment = enc.dataset_attachment(KEY, "WORK", "CLASS", [Var("X"), Var("NAME", "char", 8)], ROWS,
                                        max_payload=4 + 16 * 5)  # five whole observations a message
    msgs = enc.transmission(b"\x11" * 24, b"\x22" * 24, b"app", [attachment])
    observation = [i for i, m in enumerate(msgs) if m.correlid[:16] == KEY and m.payload[:4] == b"\x03\0\0\0"]
    del msgs[observation[6]]  # observations 31 to 35
    text = dump_text(msgs)
    line = text.index("\nX ", text.index("* Index %d\n" % (observation[3] + 1))) + 1  # observations 16 to 20
    path = tmp_path_factory.mktemp("modes") / "damaged.dmp"
    path.write_text(text[:line] + "X 0G" + text[line + 4:], encoding="latin-1")
    return str(path), line


def expected(*lost):
    return [r for i, r in enumerate(ROWS) if not any(a <= i < b for a, b in lost)]


def test_failfast_is_the_default_and_names_the_damage(spark, damaged):
    path, line = damaged
    with pytest.raises(Exception) as raised:
        spark.read.format("cmi").load(path).collect()
    error = unwrap(raised.value)
    assert isinstance(error, DumpSyntaxError) and error.offset == line and error.attachment == KEY.hex().upper()
    with pytest.raises(DumpSyntaxError), typed_errors():
        spark.read.format("cmi").option("mode", "FAILFAST").load(path).count()


def test_permissive_returns_the_trusted_rows_and_a_row_per_damaged_stretch(spark, damaged):
    path, line = damaged
    df = spark.read.format("cmi").option("mode", "PERMISSIVE").load(path)
    assert df.columns == ["X", "NAME", "_corrupt_record"]
    rows = df.collect()
    data = [(r["X"], r["NAME"]) for r in rows if r["_corrupt_record"] is None]
    assert sorted(data) == sorted(expected((15, 35)))
    [text] = [r["_corrupt_record"] for r in rows if r["_corrupt_record"] is not None]
    assert all(r["X"] is None and r["NAME"] is None for r in rows if r["_corrupt_record"])
    assert "not an even run of hex digits" in text and f"file offset {line}" in text
    assert "and 1 more fault after it" in text and "observations 16 to 35 lost (20)" in text
    # The messages view lists every message, the damaged one with its problem.
    messages = spark.read.format("cmi").option("view", "messages").load(path)
    assert messages.where("problem is not null").count() == 1


def test_dropmalformed_returns_the_trusted_rows_only(spark, damaged):
    path, _ = damaged
    df = spark.read.format("cmi").option("mode", "DROPMALFORMED").load(path)
    assert df.columns == ["X", "NAME"]
    assert sorted(tuple(r) for r in df.collect()) == sorted(expected((15, 35)))
