"""The project's reader against dumps written by the independent encoder (spark_tests/independent_encoder.py).

The encoder is written only from docs/spec/cmi.md, docs/spec/sas-records.md and docs/spec/mq.md;
every expectation below is the behaviour those pages state.
"""
from __future__ import annotations

import datetime as dt
import itertools
import struct

import pyarrow as pa
import pytest

from cmi_datasource import Capture, read
from cmi_datasource.engine.plan import attachment_plan
from cmi_datasource.engine.tables import files_table
from cmi_datasource.errors import CmiFormatError, IncompleteAttachmentError

try:
    from spark_tests.independent_encoder import (Encoder, Missing, Var, shuffled, truncated,
                                                 with_duplicates, write_dump)
except ImportError:  # pragma: no cover - run from inside spark_tests
    from independent_encoder import (Encoder, Missing, Var, shuffled, truncated, with_duplicates,
                                     write_dump)

HEADER_CID = bytes.fromhex("A1" * 24)
MSG_CID = bytes.fromhex("B2" * 24)
DS_KEY = bytes.fromhex("000102030405060708090A0B0C0D0E0F")
TXT_KEY = bytes.fromhex("C3" * 16)
BIN_KEY = bytes.fromhex("D4" * 16)
APP_MESSAGE = b"application message \x00\x01 from SAS"
EPOCH = dt.date(1960, 1, 1)
EPOCH_DT = dt.datetime(1960, 1, 1)

VARS = [
    Var("AGE", "num", 8, "BEST", 12, 0, "BEST", 12, 0, "Age in years"),
    Var("NAME", "char", 12, label="Name"),
    Var("BORN", "num", 8, "DATE", 9, informat="DATE", informat_width=9, label="Birth date"),
    Var("STAMP", "num", 8, "DATETIME", 20, label="Time stamp"),
    Var("CLOCK", "num", 8, "TIME", 8),
    Var("SCORE", "num", 8, "COMMA", 10, 2, label="Score"),
    Var("SHORTD", "num", 4, "YYMMDD", 10),
    Var("CODE", "char", 3),
]


def make_rows(n=30):
    rows = []
    for i in range(n):
        rows.append([
            Missing(".") if i % 7 == 3 else 20 + i * 1.5,
            ["Alice", "Bob", "", "Zoe Q. Public", "  lead", "x"][i % 6][:12],
            Missing("A") if i % 11 == 5 else -3000 + i * 401,
            1.7e9 - i * 86461.0,
            (i * 3671) % 86400,
            i / 3.0 - 4,
            22000 + i,
            ["ABC", "  ", "Q"][i % 3],
        ])
    return rows


ROWS = make_rows()
TEXT_RECORDS = [b"first line of the file", b"", b"  indented line  ", b"x" * 60, b"last"]
BINARY_RECORDS = [bytes(range(256))[:40], b"\x00\x00\xff", bytes(range(200, 256)), b"\n\r\x00"]

DATE_FORMATS = {"DATE", "DDMMYY", "YYMMDD", "MMDDYY", "MONYY", "YEAR"}


def expected_value(var, value):
    """What the contract says a reader must return for one SAS value."""
    if var.type == "char":
        text = (value or "").rstrip(" \x00")
        return text or None
    if isinstance(value, Missing):
        return None
    x = truncated(float(value), var.length)
    if var.format in DATE_FORMATS:
        return EPOCH + dt.timedelta(days=x)
    if var.format == "DATETIME":
        return EPOCH_DT + dt.timedelta(seconds=x)
    if var.format == "TIME":  # elapsed seconds: an interval by default (timeType=interval)
        return dt.timedelta(seconds=x)
    return x


def expected_columns(variables, rows):
    return {v.name: [expected_value(v, r[j]) for r in rows] for j, v in enumerate(variables)}


def displayed_format(name, width, decimals):
    if not (name or width):
        return ""
    return name + (str(width) if width else "") + "." + (str(decimals) if decimals else "")


def build(enc, max_payload=100, rows=ROWS, variables=VARS, with_files=True):
    attachments = [enc.dataset_attachment(DS_KEY, "work", "class", variables, rows, label="Class list",
                                          description="The class", max_payload=max_payload)]
    if with_files:
        attachments.append(enc.file_attachment(TXT_KEY, "d:\\notes.txt", TEXT_RECORDS,
                                               description="Notes", max_payload=max_payload))
        attachments.append(enc.file_attachment(BIN_KEY, "/tmp/blob.bin", BINARY_RECORDS, binary=True,
                                               description="Blob", max_payload=max_payload))
    return attachments, enc.transmission(HEADER_CID, MSG_CID, APP_MESSAGE, attachments)


def open_capture(tmp_path, msgs, name="capture.dmp"):
    return Capture.open(write_dump(tmp_path / name, msgs))


def check_dataset(cap, variables=VARS, rows=ROWS, **kwargs):
    table = read(cap, **kwargs)
    assert isinstance(table, pa.Table)
    assert table.num_rows == len(rows)
    assert table.column_names == [v.name for v in variables]
    assert table.to_pydict() == expected_columns(variables, rows)
    return table


def check_files(cap):
    plans = [attachment_plan(cap, a) for a in cap.file_attachments()]
    files = {r["attachment"]: r for r in files_table(plans).to_pylist()}
    assert set(files) == {TXT_KEY.hex().upper(), BIN_KEY.hex().upper()}
    txt, binf = files[TXT_KEY.hex().upper()], files[BIN_KEY.hex().upper()]
    expected_text = "".join(r.decode() + "\n" for r in TEXT_RECORDS)
    assert (txt["kind"], txt["name"], txt["text"]) == ("text", "d:\\notes.txt", expected_text)
    assert txt["content"] == expected_text.encode()
    assert txt["lrecl"] == max(len(r) for r in TEXT_RECORDS)
    assert (binf["kind"], binf["name"], binf["text"]) == ("binary", "/tmp/blob.bin", None)
    assert binf["content"] == b"".join(BINARY_RECORDS)


def check_attachments(cap, attachments, source=None):
    rows = {r["attachment"]: r for r in read(cap, view="attachments").to_pylist()}
    assert len(rows) == len(attachments) == read(cap, view="attachments").num_rows
    kinds = {1: "dataset", 2: "text", 3: "binary"}
    for a in attachments:
        r = rows[a["key"].hex().upper()]
        assert r["kind"] == kinds[a["type"]]
        assert r["name"] == (f"{a['q1']}.{a['q2']}".upper() if a["type"] == 1 else a["q2"])
        assert r["description"] == a["description"]
        assert r["complete"] is True
        assert r["expected_messages"] == len(a["payloads"])
        assert r["found_messages"] == len(a["payloads"])
        assert r["message"] == APP_MESSAGE
        assert not r["problem"]
        if source is not None:
            assert r["source"] == source
        if a["type"] == 1:
            assert (r["observations"], r["variables"], r["label"]) == (len(ROWS), len(VARS), "Class list")


COMBOS = list(itertools.product([546, 273], [4, 8], [True, False], [True, False]))


@pytest.mark.parametrize("encoding,long_size,nul,seq_big", COMBOS,
                         ids=[f"enc{e}-long{size}-{'nul' if n else 'nonul'}-seq{'BE' if s else 'LE'}"
                              for e, size, n, s in COMBOS])
def test_every_wire_convention(tmp_path, encoding, long_size, nul, seq_big):
    enc = Encoder(encoding=encoding, long_size=long_size, nul=nul, seq_big_endian=seq_big)
    attachments, msgs = build(enc)
    path = write_dump(tmp_path / "all.dmp", msgs)
    cap = Capture.open(path)
    check_attachments(cap, attachments)
    check_dataset(cap)
    check_files(cap)


def test_records_straddle_message_boundaries(tmp_path):
    enc = Encoder()
    attachments, msgs = build(enc, max_payload=100)
    ds_payloads = attachments[0]["payloads"]
    obslen = sum(v.length for v in VARS)
    obs_chunks = [len(p) - 4 for p in ds_payloads if p[:4] == struct.pack("<i", 3)]
    # the encoder really splits observations mid-record (96 data bytes per message, 59-byte records)
    assert len(obs_chunks) > 10 and any(sum(obs_chunks[:k]) % obslen for k in range(1, len(obs_chunks)))
    assert all(len(m.payload) <= 100 for m in msgs if m.msgtype == 100001 and m.correlid != MSG_CID)
    cap = open_capture(tmp_path, msgs)
    check_dataset(cap)
    check_files(cap)


def test_large_dataset_one_message_limit(tmp_path):
    enc = Encoder(encoding=273, long_size=8)
    rows = make_rows(1500)
    attachments = [enc.dataset_attachment(DS_KEY, "work", "big", VARS, rows, max_payload=32768)]
    msgs = enc.transmission(HEADER_CID, MSG_CID, APP_MESSAGE, attachments)
    assert max(len(m.payload) for m in msgs) == 32768
    cap = open_capture(tmp_path, msgs)
    check_dataset(cap, rows=rows)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("encoding,seq_big", [(546, True), (273, False)])
def test_shuffled_and_duplicated_messages(tmp_path, seed, encoding, seq_big):
    enc = Encoder(encoding=encoding, seq_big_endian=seq_big, long_size=8 if seed == 2 else 4,
                  nul=seed != 3)
    attachments, msgs = build(enc)
    # duplicates: header, application message, a dataset message, the last (count) message
    noisy = shuffled(with_duplicates(msgs, [0, 1, 5, len(msgs) - 1, len(msgs) - 2]), seed)
    assert [m.correlid for m in noisy] != [m.correlid for m in msgs]
    cap = open_capture(tmp_path, noisy)
    check_attachments(cap, attachments)
    check_dataset(cap)
    check_files(cap)


@pytest.mark.parametrize("encoding", [546, 273])
def test_numeric_lengths_3_to_8(tmp_path, encoding):
    enc = Encoder(encoding=encoding)
    variables = [Var(f"N{n}", "num", n) for n in range(3, 9)]
    values = [3.141592653589793, -1e10, 1 / 3, 123456.789, 0.0, -0.5, 2.0 ** 40 + 1, 1e-300, 7, Missing()]
    rows = [[v] * len(variables) for v in values]
    attachments = [enc.dataset_attachment(DS_KEY, "work", "lens", variables, rows, max_payload=50)]
    cap = open_capture(tmp_path, enc.transmission(HEADER_CID, MSG_CID, APP_MESSAGE, attachments))
    table = check_dataset(cap, variables, rows)
    for v in variables:
        assert table.schema.field(v.name).type == pa.float64()
        assert table.schema.field(v.name).metadata[b"sas_length"] == str(v.length).encode()
    # truncation really changes values below length 8 (so the comparison is meaningful)
    assert table.column("N3")[0].as_py() != 3.141592653589793
    assert table.column("N8")[0].as_py() == 3.141592653589793


@pytest.mark.parametrize("encoding", [546, 273])
def test_special_missing_values_are_null(tmp_path, encoding):
    enc = Encoder(encoding=encoding)
    tags = [".", "_"] + [chr(c) for c in range(ord("A"), ord("Z") + 1)]
    variables = [Var("X8", "num", 8), Var("X3", "num", 3), Var("D", "num", 8, "DATE", 9),
                 Var("T", "num", 5, "DATETIME", 19)]
    rows = [[Missing(t)] * 4 for t in tags] + [[1.0, 2.0, 3.0, 4.0]]
    attachments = [enc.dataset_attachment(DS_KEY, "work", "miss", variables, rows, max_payload=64)]
    cap = open_capture(tmp_path, enc.transmission(HEADER_CID, MSG_CID, APP_MESSAGE, attachments))
    table = check_dataset(cap, variables, rows)
    for name in ("X8", "X3", "D", "T"):
        assert table.column(name).null_count == len(tags)


def test_column_types_and_metadata(tmp_path):
    cap = open_capture(tmp_path, build(Encoder())[1])
    schema = read(cap).schema
    types = {"AGE": pa.float64(), "NAME": pa.string(), "BORN": pa.date32(), "STAMP": pa.timestamp("us"),
             "CLOCK": pa.duration("us"), "SCORE": pa.float64(), "SHORTD": pa.date32(), "CODE": pa.string()}
    for v in VARS:
        f = schema.field(v.name)
        assert f.type == types[v.name], v.name
        md = f.metadata
        assert md[b"label"] == v.label.encode()
        assert md[b"format"] == displayed_format(v.format, v.format_width, v.format_decimals).encode()
        assert md[b"informat"] == displayed_format(v.informat, v.informat_width, v.informat_decimals).encode()
        assert md[b"sas_type"] == v.type.encode()
        assert md[b"sas_length"] == str(v.length).encode()
    assert schema.field("BORN").metadata[b"format"] == b"DATE9."
    assert schema.field("SCORE").metadata[b"format"] == b"COMMA10.2"


def test_variables_table(tmp_path):
    cap = open_capture(tmp_path, build(Encoder(encoding=273, long_size=8, nul=False))[1])
    rows = read(cap, view="variables").to_pylist()
    assert [r["name"] for r in rows] == [v.name for v in VARS]
    for r, v in zip(rows, VARS):
        assert r["dataset"] == "WORK.CLASS"
        assert r["attachment"] == DS_KEY.hex().upper()
        assert (r["type"], r["length"], r["label"]) == (v.type, v.length, v.label)
        assert r["format"] == displayed_format(v.format, v.format_width, v.format_decimals)
        assert r["informat"] == displayed_format(v.informat, v.informat_width, v.informat_decimals)
    assert [r["position"] for r in rows] in (list(range(len(VARS))), list(range(1, len(VARS) + 1)))


@pytest.mark.parametrize("ccsid", [1208, 819])
def test_character_ccsids(tmp_path, ccsid):
    enc = Encoder(ccsid=ccsid)
    variables = [Var("CITY", "char", 10), Var("N", "num", 8)]
    rows = [["Zürich", 1], ["café", 2], ["Ærøskøbing"[:7], 3], ["", 4], ["   ", 5], ["ab\x00\x00", 6]]
    attachments = [enc.dataset_attachment(DS_KEY, "work", "cities", variables, rows, max_payload=40),
                   enc.file_attachment(TXT_KEY, "städte.txt", [enc.text("Größe")])]
    cap = open_capture(tmp_path, enc.transmission(HEADER_CID, MSG_CID, APP_MESSAGE, attachments))
    table = check_dataset(cap, variables, rows)
    assert table.column("CITY").to_pylist()[3:] == [None, None, "ab"]
    files = files_table([attachment_plan(cap, a) for a in cap.file_attachments()]).to_pylist()
    assert [(f["name"], f["text"]) for f in files] == [("städte.txt", "Größe\n")]


def test_ascii_type_flag_and_padded_observations(tmp_path):
    enc = Encoder(ascii_type_flag=True)
    variables = [Var("A", "num", 8), Var("B", "char", 5), Var("C", "num", 3)]
    rows = [[i * 2.25, f"r{i}", i] for i in range(20)]
    attachments = [enc.dataset_attachment(DS_KEY, "lib", "pad", variables, rows, max_payload=60,
                                          obs_padding=7)]
    cap = open_capture(tmp_path, enc.transmission(HEADER_CID, MSG_CID, APP_MESSAGE, attachments))
    table = check_dataset(cap, variables, rows)
    assert [table.schema.field(n).metadata[b"sas_type"] for n in "ABC"] == [b"num", b"char", b"num"]


def test_zero_observations(tmp_path):
    enc = Encoder()
    attachments = [enc.dataset_attachment(DS_KEY, "work", "empty", VARS, [], max_payload=100)]
    cap = open_capture(tmp_path, enc.transmission(HEADER_CID, MSG_CID, APP_MESSAGE, attachments))
    table = read(cap)
    assert table.num_rows == 0 and table.column_names == [v.name for v in VARS]
    assert table.schema.field("BORN").type == pa.date32()


def test_two_datasets_select_by_name_and_attachment(tmp_path):
    enc = Encoder(encoding=273)
    other_key = bytes.fromhex("EE" * 16)
    other_vars = [Var("K", "num", 8), Var("V", "char", 4)]
    other_rows = [[1, "one"], [2, "two"]]
    attachments = [enc.dataset_attachment(DS_KEY, "work", "class", VARS, ROWS, label="Class list",
                                          max_payload=100),
                   enc.dataset_attachment(other_key, "sashelp", "kv", other_vars, other_rows, max_payload=100)]
    cap = open_capture(tmp_path, shuffled(enc.transmission(HEADER_CID, MSG_CID, APP_MESSAGE, attachments), 9))
    check_dataset(cap, attachment=DS_KEY.hex().upper())
    check_dataset(cap, other_vars, other_rows, attachment=other_key.hex().upper())
    check_dataset(cap, other_vars, other_rows, dataset="SASHELP.KV")
    check_dataset(cap, dataset="WORK.CLASS")


def test_several_dump_files(tmp_path):
    enc = Encoder()
    attachments, msgs = build(enc)
    first = write_dump(tmp_path / "part1.dmp", msgs[: len(msgs) // 2])
    second = write_dump(tmp_path / "part2.dmp", msgs[len(msgs) // 2:])
    cap = Capture.open([first, second])
    check_attachments(cap, attachments)
    check_dataset(cap)
    check_files(cap)


@pytest.mark.parametrize("removed", ["first", "middle", "last_sequenced"])
def test_incomplete_attachment_missing_sequenced_message(tmp_path, removed):
    enc = Encoder()
    attachments, msgs = build(enc)
    n = len(attachments[0]["payloads"])
    k = {"first": 1, "middle": n // 2, "last_sequenced": n}[removed]
    gone = enc.seq_correlid(DS_KEY, k)
    kept = [m for m in msgs if m.correlid != gone]
    assert len(kept) == len(msgs) - 1
    cap = open_capture(tmp_path, kept)
    row = {r["attachment"]: r for r in read(cap, view="attachments").to_pylist()}[DS_KEY.hex().upper()]
    assert row["complete"] is False
    assert row["expected_messages"] == n
    assert row["found_messages"] == n - 1
    with pytest.raises(IncompleteAttachmentError) as info:
        read(cap)
    assert isinstance(info.value, CmiFormatError)
    assert info.value.source == str(tmp_path / "capture.dmp")
    assert hasattr(info.value, "message_index") and hasattr(info.value, "offset")
    # the other attachments are unaffected
    check_files(cap)


def test_incomplete_attachment_missing_count_message(tmp_path):
    enc = Encoder()
    attachments, msgs = build(enc)
    kept = [m for m in msgs if m.correlid != DS_KEY + bytes(8)]
    cap = open_capture(tmp_path, kept)
    row = {r["attachment"]: r for r in read(cap, view="attachments").to_pylist()}[DS_KEY.hex().upper()]
    assert row["complete"] is False
    with pytest.raises(IncompleteAttachmentError):
        read(cap)


def test_text_file_over_many_messages(tmp_path):
    enc = Encoder(encoding=273, long_size=8, nul=False, seq_big_endian=False)
    records = [f"line {i:04d} {'*' * (i % 37)}".encode() for i in range(300)]
    att = enc.file_attachment(TXT_KEY, "FILEREF_LOG", records, qualifier="FILEREF", max_payload=120,
                              description="log")
    msgs = shuffled(enc.transmission(HEADER_CID, MSG_CID, APP_MESSAGE, [att]), 4)
    cap = open_capture(tmp_path, msgs)
    row = read(cap, view="attachments").to_pylist()[0]
    assert (row["kind"], row["name"], row["complete"]) == ("text", "FILEREF_LOG", True)
    assert row["expected_messages"] == len(att["payloads"]) > 30
    (f,) = files_table([attachment_plan(cap, a) for a in cap.file_attachments()]).to_pylist()
    assert f["text"] == "".join(r.decode() + "\n" for r in records)


DATE_FORMAT_NAMES = ("DATE DAY DDMMYY DDMMYYB DDMMYYC DDMMYYD DDMMYYN DDMMYYP DDMMYYS JULDAY JULIAN MMDDYY "
                     "MMDDYYB MMDDYYC MMDDYYD MMDDYYN MMDDYYP MMDDYYS MMYY MMYYC MMYYD MMYYN MMYYP MMYYS MONNAME "
                     "MONTH MONYY WEEKDATE WEEKDATX WEEKDAY DOWNAME WORDDATE WORDDATX YYMM YYMMC YYMMD YYMMN "
                     "YYMMP YYMMS YYMMDD YYMMDDB YYMMDDC YYMMDDD YYMMDDN YYMMDDP YYMMDDS YYMON YEAR YYQ QTR "
                     "B8601DA E8601DA IS8601DA NENGO MINGUO").split()
DATETIME_FORMAT_NAMES = ("DATETIME DATEAMPM DTDATE DTMONYY DTWKDATX DTYEAR MDYAMPM TOD B8601DN B8601DT B8601DX "
                         "B8601DZ B8601LX E8601DN E8601DT E8601DX E8601DZ E8601LX IS8601DT").split()
TIME_FORMAT_NAMES = "TIME TIMEAMPM HHMM HOUR MMSS E8601TM E8601LZ B8601TM IS8601TM".split()


@pytest.mark.parametrize("encoding", [546, 273])
def test_every_listed_date_datetime_time_format(tmp_path, encoding):
    """docs/spec/sas-records.md#temporal-formats: the format name (width and decimals stripped)
    decides the column type."""
    enc = Encoder(encoding=encoding, long_size=8)
    groups = [(DATE_FORMAT_NAMES, pa.date32(), 12345.0, EPOCH + dt.timedelta(days=12345)),
              (DATETIME_FORMAT_NAMES, pa.timestamp("us"), 1234567890.25,
               EPOCH_DT + dt.timedelta(seconds=1234567890.25)),
              (TIME_FORMAT_NAMES, pa.duration("us"), 45296.5, dt.timedelta(hours=12, minutes=34, seconds=56.5))]
    variables, row, expected = [], [], {}
    for names, typ, value, want in groups:
        for i, fmt in enumerate(names):
            width, decimals = (22, 3) if i % 3 == 1 else ((0, 0) if i % 3 == 2 else (10, 0))
            v = Var(f"V{len(variables)}", "num", 8, fmt, width, decimals, label=fmt)
            variables.append(v)
            row.append(value)
            expected[v.name] = (typ, want, fmt)
    attachments = [enc.dataset_attachment(DS_KEY, "work", "fmts", variables, [row, [Missing()] * len(row)])]
    cap = open_capture(tmp_path, enc.transmission(HEADER_CID, MSG_CID, APP_MESSAGE, attachments))
    table = read(cap)
    wrong = {}
    for name, (typ, want, fmt) in expected.items():
        got_type = table.schema.field(name).type
        got = table.column(name).to_pylist()
        if got_type != typ or got != [want, None]:
            wrong[fmt] = (str(got_type), got)
    assert not wrong


def test_plain_numeric_formats_stay_double(tmp_path):
    enc = Encoder()
    names = ["BEST", "COMMA", "DOLLAR", "Z", "PERCENT", "F", "", "HEX", "DATEX", "TIMEZONE"]
    variables = [Var(f"P{i}", "num", 8, n, 8, 2 if i % 2 else 0) for i, n in enumerate(names)]
    rows = [[float(i) + 0.5 for i in range(len(names))]]
    attachments = [enc.dataset_attachment(DS_KEY, "work", "plain", variables, rows)]
    cap = open_capture(tmp_path, enc.transmission(HEADER_CID, MSG_CID, APP_MESSAGE, attachments))
    table = check_dataset(cap, variables, rows)
    assert all(t == pa.float64() for t in table.schema.types)


def test_duplicates_with_new_msgids_are_dropped(tmp_path):
    enc = Encoder(encoding=273, seq_big_endian=False)
    attachments, msgs = build(enc)
    again = [enc.message(m.msgtype, m.correlid, m.payload) for m in msgs]  # same CorrelId+payload, new MsgId
    assert all(a.msgid != b.msgid for a, b in zip(msgs, again))
    cap = open_capture(tmp_path, shuffled(msgs + again, 11))
    check_attachments(cap, attachments)
    check_dataset(cap)
    check_files(cap)


def test_conflicting_duplicate_is_an_error(tmp_path):
    enc = Encoder()
    attachments, msgs = build(enc)
    target = enc.seq_correlid(DS_KEY, len(attachments[0]["payloads"]))   # last observation message
    original = next(m for m in msgs if m.correlid == target)
    changed = bytearray(original.payload)
    changed[-1] ^= 0xFF
    cap = open_capture(tmp_path, msgs + [enc.message(100001, target, bytes(changed))])
    row = {r["attachment"]: r for r in read(cap, view="attachments").to_pylist()}[DS_KEY.hex().upper()]
    assert row["complete"] is False or row["problem"]
    with pytest.raises(CmiFormatError):
        read(cap)


@pytest.mark.parametrize("seq_big", [True, False])
def test_empty_text_file_single_sequenced_message(tmp_path, seq_big):
    enc = Encoder(seq_big_endian=seq_big, long_size=8)
    att = enc.file_attachment(TXT_KEY, "empty.txt", [], lrecl=80)
    assert len(att["payloads"]) == 1
    cap = open_capture(tmp_path, enc.transmission(HEADER_CID, MSG_CID, APP_MESSAGE, [att]))
    row = read(cap, view="attachments").to_pylist()[0]
    assert (row["complete"], row["expected_messages"]) == (True, 1)
    (f,) = files_table([attachment_plan(cap, a) for a in cap.file_attachments()]).to_pylist()
    assert (f["lrecl"], f["size"], f["content"], f["text"]) == (80, 0, b"", "")
