"""The Spark write path checked against the CMI contract, byte by byte.

Every dump written by ``df.write.format("cmi")`` is read back with ``independent_parser`` (written
from docs/spec/cmi.md, docs/spec/sas-records.md and docs/spec/mq.md only, sharing
no code with ``cmi_datasource``) and compared with the DataFrame that was written.
"""
from __future__ import annotations

import glob
import os
import struct

import pytest
from pyspark.errors import PySparkException

import independent_parser as P

pytestmark = pytest.mark.spark

IEEE_MISSING_BE = bytes([0xFF, 0xFF, 0xFE, 0, 0, 0, 0, 0])     # SAS '.' as a big-endian double
SCHEMA = "ID long, X double, NAME string"
ROWS = [(1, 1.0, "abc"), (2, None, None), (3, -2.25, "Jürgen"), (4, 1e100, ""),
        (5, 0.1, "€uro"), (6, 0.0, "x" * 5), (7, -123456.789, " lead"), (8, 3.5, "tail")]


# ---------------------------------------------------------------- helpers
def save(df, path, mode="append", dataset="work.class", **options):
    w = df.write.format("cmi").mode(mode).option("dataset", dataset)
    for k, v in options.items():
        w = w.option(k, str(v))
    w.save(str(path))


def dump_files(path):
    return sorted(glob.glob(os.path.join(str(path), "*.dmp")))


class Capture:
    """One dump file checked for the contract's message order and correlids, then decoded."""

    def __init__(self, path, long_size=None):
        files = dump_files(path) if os.path.isdir(str(path)) else [str(path)]
        assert len(files) == 1, files
        self.file = files[0]
        with open(self.file, "rb") as f:
            self.raw = f.read()
        self.msgs = msgs = P.parse_dump(self.raw)
        assert len(msgs) >= 4
        # MsgIds unique, Format blank on every message
        ids = [m.msg_id for m in msgs]
        assert len(set(ids)) == len(ids), "MsgIds are not unique"
        assert all(m.format == " " * 8 for m in msgs), [m.format for m in msgs]
        assert len({(m.encoding, m.ccsid) for m in msgs}) == 1
        # header first, then application message
        head = msgs[0]
        assert head.msg_type == P.HEADER_TYPE
        self.header = h = P.parse_header(head, long_size)
        assert head.correl_id == h.header_correl_id
        app = msgs[1]
        assert app.msg_type == P.SUBORDINATE_TYPE
        assert app.correl_id == h.message_correl_id
        self.app = app
        assert all(m.msg_type == P.SUBORDINATE_TYPE for m in msgs[1:])
        assert h.attachments
        # each attachment: sequenced 1..N in order, its count message after them, payload = N
        index = {m.correl_id: i for i, m in enumerate(msgs)}
        assert len(index) == len(msgs), "duplicate CorrelIds"
        claimed = {0, 1}
        self.attachment_msgs = []
        for att in h.attachments:
            assert len(att.correl_id) == 24
            count_id = att.key + bytes(8)
            assert count_id in index, "count message missing"
            count_msg = msgs[index[count_id]]
            assert len(count_msg.payload) == 4
            n = struct.unpack(head.order + "i", count_msg.payload)[0]
            assert n >= 1
            positions = []
            for k in range(1, n + 1):
                cid = att.key + struct.pack(">I", k) + bytes(4)
                assert cid in index, f"sequenced message {k} missing"
                positions.append(index[cid])
            assert positions == sorted(positions), "sequenced messages out of order"
            assert positions[0] > 1 and index[count_id] > positions[-1], "count message not after 1..N"
            claimed.update(positions + [index[count_id]])
            self.attachment_msgs.append([msgs[i] for i in positions])
        assert claimed == set(range(len(msgs))), "messages that belong to no attachment"
        if len(h.attachments) == 1:
            n = len(self.attachment_msgs[0])
            assert len(msgs) == n + 3 and msgs[-1].correl_id == h.attachments[0].key + bytes(8)
        self.datasets = [P.parse_dataset([m.payload for m in ms], head.order, h.long_size, head.ccsid)
                         for ms in self.attachment_msgs]

    @property
    def encoding(self):
        return self.msgs[0].encoding

    @property
    def ccsid(self):
        return self.msgs[0].ccsid

    def rows(self, i=0):
        return P.decode_rows(self.datasets[i], self.encoding, self.ccsid)

    def field(self, i, row, var):
        """Raw bytes of one variable of one observation."""
        ds = self.datasets[i]
        off = sum(v.length for v in ds.variables[:var])
        start = row * ds.dat["obslen"] + off
        return ds.obs_stream[start:start + ds.variables[var].length]


def expected(rows):
    """DataFrame rows as the parser returns them: floats, MISSING, strings without trailing blanks
    (null and "" are blanks, which the parser returns as "")."""
    text = [any(isinstance(r[j], str) for r in rows) for j in range(len(rows[0]))]
    return [[("" if v is None else v.rstrip(" ")) if text[j] else (P.MISSING if v is None else float(v))
             for j, v in enumerate(r)] for r in rows]


def key(row):
    return repr(row)


def check_values(cap, rows, i=0):
    got = cap.rows(i)
    assert sorted(got, key=key) == sorted(expected(rows), key=key)


def check_dataset_layout(cap, rows, names, i=0, string_encoding="utf-8"):
    ds = cap.datasets[i]
    assert ds.record_types[0] == 1 and ds.record_types.count(1) == 1
    seen = list(ds.record_types)
    assert seen == sorted(seen) and set(seen) <= {1, 2, 3} and 2 in seen
    assert ds.dat["nobs"] == len(rows)
    assert ds.dat["nvars"] == len(names)
    assert ds.dat["obslen"] == sum(v.length for v in ds.variables)
    assert len(ds.obs_stream) == len(rows) * ds.dat["obslen"]
    assert [v.name.upper() for v in ds.variables] == [n.upper() for n in names]
    for j, v in enumerate(ds.variables):
        values = [r[j] for r in rows]
        if any(isinstance(x, str) for x in values):
            assert not v.numeric
            assert v.length == max(len(x.encode(string_encoding)) for x in values if x is not None)
        else:
            assert v.numeric and v.length == 8


# ---------------------------------------------------------------- tests
def test_independent_parser_self_check():
    """The parser against hand-made bytes from docs/spec/sas-records.md and docs/spec/cmi.md (no Spark)."""
    assert P.decode_number(bytes.fromhex("3FF0"), 0x111) == 1.0                   # truncated, big-endian
    assert P.decode_number(bytes.fromhex("F03F"), 0x222) == 1.0        # little-endian: the last 2 bytes
    assert P.decode_number(bytes.fromhex("4000000000"), 0x111) == 2.0
    assert P.decode_number(bytes.fromhex("FFFFFE"), 0x111) is P.MISSING
    assert P.decode_number(bytes.fromhex("4110000000000000"), 785) == 1.0
    assert P.decode_number(bytes.fromhex("C124000000000000"), 785) == -2.25
    assert P.decode_number(bytes.fromhex("421000"), 785) == 16.0
    assert P.decode_number(bytes(8), 785) == 0.0
    assert P.decode_number(bytes.fromhex("2E00000000000000"), 785) is P.MISSING
    key = bytes(range(16))
    head = (b"\x11" * 24 + struct.pack(">i", 8) + bytes(24) + b"\x22" * 24 + struct.pack(">i", 1)
            + struct.pack(">i", 2) + key + bytes(8) + struct.pack(">i", 8) + b"FILENAME\x00"
            + struct.pack(">i", 3) + b"a.b\x00" + struct.pack(">i", 0) + b"\x00" + bytes(8))
    dump = ("* QLOAD\n\n* Index 1\nA MST 100000\nA ENC 273\nA CCS 819\nA FMT         \n"
            "A COI " + "11" * 24 + "\n" + "".join("X " + head[i:i + 25].hex().upper() + "\n"
                                                for i in range(0, len(head), 25))
            + "\nA MST 100001\nA ENC 273\nA CCS 819\nS \"say ~\"hi~\" ~~\"\n\n").encode("latin-1")
    msgs = P.parse_dump(dump)
    assert [m.msg_type for m in msgs] == [100000, 100001]
    assert msgs[1].payload == b'say "hi" ~' and msgs[0].format == " " * 8
    h = P.parse_header(msgs[0])
    assert h.long_size == 4 and h.attachments[0].key == key
    assert (h.attachments[0].qualifier1, h.attachments[0].qualifier2) == ("FILENAME", "a.b")


def test_message_order_correlids_and_header_for_multi_partition_df(spark, tmp_path):
    rows = [(i, i / 4.0, f"row {i}") for i in range(20)]
    df = spark.createDataFrame(rows, SCHEMA).repartition(7)
    assert df.rdd.getNumPartitions() == 7
    save(df, tmp_path, message="hello CMI", description="the class")
    cap = Capture(tmp_path)
    h = cap.header
    assert len(h.attachments) == 1
    att = h.attachments[0]
    assert (att.type, att.qualifier1, att.qualifier2, att.description) == (1, "WORK", "CLASS", "the class")
    assert cap.app.payload == b"hello CMI"
    assert cap.encoding == 546 and cap.ccsid == 1208 and h.long_size == 4
    # count message is the last message and says N = number of sequenced messages
    assert struct.unpack("<i", cap.msgs[-1].payload)[0] == len(cap.msgs) - 3
    # the sequenced messages directly follow the application message, k = 1..N
    for k, m in enumerate(cap.msgs[2:-1], start=1):
        assert m.correl_id == att.key + k.to_bytes(4, "big") + bytes(4)
    check_dataset_layout(cap, rows, ["ID", "X", "NAME"])
    check_values(cap, rows)


def test_dataset_definition_variables_and_values(spark, tmp_path):
    df = spark.createDataFrame(ROWS, SCHEMA).repartition(3)
    save(df, tmp_path, label="My label")
    cap = Capture(tmp_path)
    ds = cap.datasets[0]
    assert ds.record_types == [1, 2, 3]
    assert ds.dat["label"] == "My label"
    assert [p[0] for p in ds.dat["passwords"]] == [0, 0, 0]
    # "Jürgen" and "€uro" are 7 and 6 UTF-8 bytes: the character variable is 7 long
    assert [v.length for v in ds.variables] == [8, 8, 7]
    assert ds.dat["obslen"] == 23
    check_dataset_layout(cap, ROWS, ["ID", "X", "NAME"])
    check_values(cap, ROWS)
    by_id = {cap.rows()[i][0]: i for i in range(len(ROWS))}
    # IEEE little-endian: the stored bytes are the reversed big-endian view
    assert cap.field(0, by_id[2.0], 1)[::-1] == IEEE_MISSING_BE
    assert cap.field(0, by_id[1.0], 1) == struct.pack("<d", 1.0)
    # characters blank padded; null and "" are all blanks
    assert cap.field(0, by_id[1.0], 2) == b"abc    "
    assert cap.field(0, by_id[2.0], 2) == b" " * 7
    assert cap.field(0, by_id[4.0], 2) == b" " * 7
    assert cap.field(0, by_id[3.0], 2) == "Jürgen".encode()


def test_default_payload_limit_and_records_straddle(spark, tmp_path):
    rows = [(i, i * 1.5, f"v{i:05d}" + "z" * (i % 11)) for i in range(1500)]    # obslen 8+8+16 = 32
    rows[0] = (0, 0.0, "q" * 17)                                               # obslen 33
    df = spark.createDataFrame(rows, SCHEMA).repartition(3)
    save(df, tmp_path)
    cap = Capture(tmp_path)
    assert all(len(m.payload) <= 32768 for m in cap.msgs)
    ds = cap.datasets[0]
    assert ds.dat["obslen"] == 33 and ds.record_types.count(3) >= 2
    check_dataset_layout(cap, rows, ["ID", "X", "NAME"])
    check_values(cap, rows)
    obs_bodies = [b for t, b in zip(ds.record_types, ds.message_bodies) if t == 3]
    ends, pos = [], 0
    for b in obs_bodies[:-1]:
        pos += len(b)
        ends.append(pos)
    assert any(e % 33 for e in ends), "no observation straddles a message boundary"


def test_max_message_bytes_1000_spans_variables_and_observations(spark, tmp_path):
    names = [f"NUMERIC_VARIABLE_{j:02d}" for j in range(30)] + ["TEXT"]
    rows = [tuple(float(i * 100 + j) for j in range(30)) + (f"text {i}",) for i in range(12)]
    schema = ", ".join(f"{n} double" for n in names[:-1]) + ", TEXT string"
    df = spark.createDataFrame(rows, schema).repartition(2)
    save(df, tmp_path, maxMessageBytes=1000)
    cap = Capture(tmp_path)
    assert all(len(m.payload) <= 1000 for m in cap.msgs), [len(m.payload) for m in cap.msgs]
    ds = cap.datasets[0]
    assert ds.record_types.count(2) >= 2, "variable definitions should span messages"
    assert ds.record_types.count(3) >= 2
    assert ds.dat["obslen"] == 30 * 8 + 7
    obs_bodies = [b for t, b in zip(ds.record_types, ds.message_bodies) if t == 3]
    assert any(sum(len(b) for b in obs_bodies[:n]) % ds.dat["obslen"] for n in range(1, len(obs_bodies)))
    check_dataset_layout(cap, rows, names)
    got = sorted(cap.rows(), key=lambda r: r[0])
    assert got == [list(r) for r in sorted(rows)]


@pytest.mark.parametrize("limit", [512, 32768])
def test_max_message_bytes_bounds_are_honoured(spark, tmp_path, limit):
    rows = [(i, float(i), "x" * 40) for i in range(1200)]       # about 67 KB of observations
    save(spark.createDataFrame(rows, SCHEMA).coalesce(1), tmp_path, maxMessageBytes=limit)
    cap = Capture(tmp_path)
    assert all(len(m.payload) <= limit for m in cap.msgs)
    assert cap.datasets[0].dat["nobs"] == 1200
    check_values(cap, rows)


def test_max_message_bytes_above_32768_never_gives_bigger_payloads(spark, tmp_path):
    rows = [(i, float(i), "x" * 40) for i in range(1200)]
    df = spark.createDataFrame(rows, SCHEMA).coalesce(1)
    try:
        save(df, tmp_path, maxMessageBytes=65536)
    except PySparkException as exc:                         # rejecting the option is fine
        assert "maxMessageBytes" in str(exc)
        return
    cap = Capture(tmp_path)
    assert all(len(m.payload) <= 32768 for m in cap.msgs)


def test_encoding_273_big_endian(spark, tmp_path):
    df = spark.createDataFrame(ROWS[:4], SCHEMA).coalesce(1)
    save(df, tmp_path, encoding=273, ccsid=819, message="big endian")
    cap = Capture(tmp_path)
    assert cap.encoding == 273 and cap.ccsid == 819 and cap.header.order == ">"
    head = cap.msgs[0].payload
    assert head[24:28] == cap.header.original_msg_type.to_bytes(4, "big")
    assert head[76:80] == b"\x00\x00\x00\x01"                       # number of attachments
    assert head[80:84] == b"\x00\x00\x00\x01"                       # attachment type 1
    assert cap.msgs[-1].payload == len(cap.attachment_msgs[0]).to_bytes(4, "big")
    for m in cap.attachment_msgs[0]:
        assert m.payload[:3] == b"\x00\x00\x00" and m.payload[3] in (1, 2, 3)
    ds = cap.datasets[0]
    assert ds.message_bodies[0][4:8] == b"\x00\x00\x00\x04"         # dataset type length ("DATA")
    check_values(cap, ROWS[:4])
    by_id = {r[0]: i for i, r in enumerate(cap.rows())}
    assert cap.field(0, by_id[1.0], 1) == bytes.fromhex("3FF0000000000000")
    assert cap.field(0, by_id[2.0], 1) == IEEE_MISSING_BE
    assert cap.field(0, by_id[3.0], 2) == "Jürgen".encode("latin-1")
    assert cap.app.payload == b"big endian"


def test_encoding_785_ccsid_37_s390_floats_and_ebcdic(spark, tmp_path):
    rows = [(1, 1.0, "abc"), (2, None, None), (3, -2.25, "HELLO"), (4, 0.5, "")]
    df = spark.createDataFrame(rows, SCHEMA).coalesce(1)
    save(df, tmp_path, encoding=785, ccsid=37, message="Grüße aus z/OS")
    cap = Capture(tmp_path)
    assert cap.encoding == 785 and cap.ccsid == 37 and cap.header.order == ">"
    att = cap.header.attachments[0]
    assert (att.qualifier1, att.qualifier2) == ("WORK", "CLASS")
    assert b"\xE6\xD6\xD9\xD2\x00" in cap.msgs[0].payload              # "WORK" + NUL in EBCDIC
    assert cap.app.payload == "Grüße aus z/OS".encode("cp037")
    assert cap.msgs[-1].payload == len(cap.attachment_msgs[0]).to_bytes(4, "big")
    check_dataset_layout(cap, rows, ["ID", "X", "NAME"], string_encoding="cp037")
    check_values(cap, rows)
    by_id = {r[0]: i for i, r in enumerate(cap.rows())}
    assert cap.field(0, by_id[1.0], 0) == bytes.fromhex("4110000000000000")          # ID 1
    assert cap.field(0, by_id[1.0], 1) == bytes.fromhex("4110000000000000")          # 1.0
    assert cap.field(0, by_id[3.0], 1) == bytes.fromhex("C124000000000000")          # -2.25 = -0x0.24 * 16**1
    assert cap.field(0, by_id[4.0], 1) == bytes.fromhex("4080000000000000")          # 0.5
    # '.' (docs/decisions.md#cmi-and-sas)
    assert cap.field(0, by_id[2.0], 1) == bytes.fromhex("2E00000000000000")
    assert cap.field(0, by_id[1.0], 2) == b"\x81\x82\x83\x40\x40"                   # "abc" + blanks
    assert cap.field(0, by_id[2.0], 2) == b"\x40" * 5
    assert cap.field(0, by_id[4.0], 2) == b"\x40" * 5


def test_long_size_8(spark, tmp_path):
    df = spark.createDataFrame(ROWS, SCHEMA).repartition(2)
    save(df, tmp_path, longSize=8)
    cap = Capture(tmp_path)
    h = cap.header
    assert h.long_size == 8                                   # the only size that consumes the header
    head = cap.msgs[0].payload
    assert head[24:32] == struct.pack("<q", h.original_msg_type)
    assert len(head) == 24 + 8 + 24 + 24 + 4 + sum(
        4 + 24 + 3 * 4 + len(a.qualifier1) + len(a.qualifier2) + len(a.description) + 3 + 8
        for a in h.attachments)
    ds = cap.datasets[0]                                      # parsed exactly with 8-byte longs
    body = ds.message_bodies[0]
    assert body[4:12] == struct.pack("<q", 4) and body[12:17] == b"DATA\x00"
    check_dataset_layout(cap, ROWS, ["ID", "X", "NAME"])
    check_values(cap, ROWS)
    with pytest.raises(ValueError):
        P.parse_dataset([m.payload for m in cap.attachment_msgs[0]], "<", 4, 1208)


def test_attachment_per_partition(spark, tmp_path):
    rows = ROWS[:3]
    rdd = spark.sparkContext.parallelize(rows, 4)             # partitions: [], [r0], [r1], [r2]
    df = spark.createDataFrame(rdd, SCHEMA)
    sizes = df.rdd.glom().map(len).collect()
    assert sizes == [0, 1, 1, 1]
    save(df, tmp_path, attachmentPerPartition="true", message="per partition")
    cap = Capture(tmp_path)
    atts = cap.header.attachments
    assert len(atts) == 3
    assert len({a.key for a in atts}) == 3
    assert all((a.type, a.qualifier1, a.qualifier2) == (1, "WORK", "CLASS") for a in atts)
    assert cap.app.payload == b"per partition"
    counts = [m for m in cap.msgs if m.correl_id[16:] == bytes(8) and m.correl_id[:16] in {a.key for a in atts}]
    assert len(counts) == 3
    got = []
    for i in range(3):
        assert cap.datasets[i].dat["nobs"] == 1
        assert cap.datasets[i].record_types[0] == 1
        got += cap.rows(i)
    assert sorted(got, key=key) == sorted(expected(rows), key=key)


def test_deterministic_saves_are_byte_identical(spark, tmp_path):
    df = spark.createDataFrame(ROWS, SCHEMA).repartition(2)
    save(df, tmp_path, deterministic="true", message="same")
    save(df, tmp_path, deterministic="true", message="same")
    files = dump_files(tmp_path)
    assert len(files) == 2
    with open(files[0], "rb") as fa, open(files[1], "rb") as fb:
        assert fa.read() == fb.read()
    Capture(files[0])


def test_overwrite_leaves_one_dump(spark, tmp_path):
    save(spark.createDataFrame(ROWS[:2], SCHEMA), tmp_path)
    save(spark.createDataFrame(ROWS[:2], SCHEMA), tmp_path)
    assert len(dump_files(tmp_path)) == 2
    save(spark.createDataFrame(ROWS[:5], SCHEMA).coalesce(1), tmp_path, mode="overwrite")
    cap = Capture(tmp_path)
    assert os.path.basename(cap.file).startswith("cmi-work.class-") and cap.file.endswith(".dmp")
    assert cap.datasets[0].dat["nobs"] == 5
