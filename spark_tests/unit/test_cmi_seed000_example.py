"""The external-file example of SAS's CMI description (docs/spec/cmi.md#an-example-on-a-queue),
hand-built byte for byte and read with the project's API.

SAS's description ("Example of an external file attachment residing on a queue"):

    100000  1111..11 00000000  header: 1111..11 00000000 | 00000001 | 00..00 | 2222..22 00000000 | 00000001 |
                               00000003 | 3333..33 00000000 | 00000008 "FILENAME" | 0000000D "d:\\mytext.txt" |
                               0000000C "Text file..." | 00000000 | 00000000
    100001  2222..22 00000000  "This is the actual application message."
    100001  3333..33 00000001  lrecl|filesize
    100001  3333..33 00000002  len|record|len|record...
    100001  3333..33 00000003  len|record|len|record...
    100001  3333..33 00000000  00000003

The example's integers are big-endian (MQ Encoding 273).  Correlation ids are 24 bytes
(docs/spec/cmi.md#correlation-ids): the 16-byte key, 4 bytes of sequence number, 4 zero bytes.
Strings carry a NUL after the declared length (the writer's default, docs/spec/cmi.md#primitive-types); the variant
without terminators is accepted by readers too.

Note: the attachment-type int printed in SAS's example is 00000003 (3 = external
binary file) although the file is called mytext.txt and described as "Text file...".  The test
therefore reads the example's literal bytes (type 3 -> kind 'binary', content = concatenated records)
and the same example with type 2 (kind 'text', text = each record + "\\n").
"""
from __future__ import annotations

import struct

import pytest

from cmi_datasource import Capture, read
from cmi_datasource.engine.plan import attachment_plan
from cmi_datasource.engine.tables import files_table

HEADER_CID = bytes.fromhex("11111111111111111111111111111111" "00000000" "00000000")
MSG_CID = bytes.fromhex("22222222222222222222222222222222" "00000000" "00000000")
ATT_CID = bytes.fromhex("33333333333333333333333333333333" "00000000" "00000000")
KEY = "33333333333333333333333333333333"

APP_MESSAGE = b"This is the actual application message."
RECORDS = [b"Line one of d:\\mytext.txt", b"", b"Line three, a little longer than the others.", b"end"]
LRECL = 80
TEXT = "".join(r.decode("ascii") + "\n" for r in RECORDS)
FILE_SIZE = len(TEXT)


def be32(n: int) -> bytes:
    return struct.pack(">i", n)


def header_payload(attachment_type: int, nul: bool) -> bytes:
    z = b"\x00" if nul else b""
    return (HEADER_CID                       # byte[24] header correlid
            + be32(1)                        # long original msg type
            + bytes(24)                      # byte[24] original msg correlid
            + MSG_CID                        # byte[24] message correlid
            + be32(1)                        # int number of attachments
            + be32(attachment_type)          # int attachment type
            + ATT_CID                        # byte[24] attachment correlid
            + be32(8) + b"FILENAME" + z
            + be32(13) + b"d:\\mytext.txt" + z
            + be32(12) + b"Text file..." + z
            + be32(0)                        # minor version
            + be32(0))                       # major version


def seq_cid(k: int) -> bytes:
    return bytes.fromhex(KEY) + be32(k) + bytes(4)


def physical_messages(attachment_type: int, nul: bool):
    def rec(r: bytes) -> bytes:
        return be32(len(r)) + r  # long length + record

    return [
        (100000, HEADER_CID, header_payload(attachment_type, nul)),
        (100001, MSG_CID, APP_MESSAGE),
        (100001, seq_cid(1), be32(LRECL) + be32(FILE_SIZE)),
        (100001, seq_cid(2), rec(RECORDS[0]) + rec(RECORDS[1])),
        (100001, seq_cid(3), rec(RECORDS[2]) + rec(RECORDS[3])),
        (100001, ATT_CID, be32(3)),
    ]


def mqmd_lines(msgtype: int, correlid: bytes, index: int):
    """A version-2 MQMD as dmpmqmsg writes it: code at columns 2-4, value from column 6."""
    msgid = b"AMQ QM1 SEED000" + bytes([index]) + bytes(8)
    fields = [("VER", "2"), ("RPT", "0"), ("MST", str(msgtype)), ("EXP", "-1"), ("FDB", "0"),
              ("ENC", "273"), ("CCS", "819"), ("FMT", " " * 8), ("PRI", "0"), ("PER", "1"),
              ("MSI", msgid.hex().upper()), ("COI", correlid.hex().upper()), ("BOC", "0"),
              ("RTQ", " " * 48), ("RTM", "QM1".ljust(48)), ("USR", "sas".ljust(12)),
              ("ACC", "00" * 32), ("AIX", "20" * 32), ("PAT", "11"), ("PAN", "sas.exe".ljust(28)),
              ("PTD", "20240131"), ("PTT", "%08d" % (10000000 + index)), ("AOX", "20202020"),
              ("GRP", "00" * 24), ("MSQ", "1"), ("OFF", "0"), ("MSF", "0"), ("ORL", "-1")]
    return [f"A {code} {value}" for code, value in fields]


def dump_text(messages) -> str:
    lines = ["* QLOAD Version:8.0 Created:2024/01/31 10:00:00",
             "* Qmgr  = QM1",
             "* Queue = SAS.CMI.QUEUE",
             ""]
    for i, (msgtype, correlid, payload) in enumerate(messages):
        lines.append(f"* Index {i + 1}")
        lines += mqmd_lines(msgtype, correlid, i)
        if payload == APP_MESSAGE:
            lines.append('S "' + payload.decode("ascii") + '"')    # 39 raw characters, no ~ or "
        else:
            lines += ["X " + payload[o:o + 25].hex().upper() for o in range(0, len(payload), 25)]
        lines.append("")
    return "\n".join(lines) + "\n"


def test_header_bytes_match_the_seed_listing():
    p = header_payload(3, nul=False)
    assert p.hex().upper() == (
        "1111111111111111111111111111111100000000" "00000000"
        "00000001"
        "0000000000000000000000000000000000000000" "00000000"
        "2222222222222222222222222222222200000000" "00000000"
        "00000001"
        "00000003"
        "3333333333333333333333333333333300000000" "00000000"
        "00000008" + b"FILENAME".hex().upper()
        + "0000000D" + b"d:\\mytext.txt".hex().upper()
        + "0000000C" + b"Text file...".hex().upper()
        + "00000000"
        "00000000")


@pytest.mark.parametrize("nul", [True, False], ids=["nul", "nonul"])
@pytest.mark.parametrize("attachment_type,kind", [(3, "binary"), (2, "text")], ids=["seed-type3", "type2"])
def test_seed000_external_file_example(tmp_path, attachment_type, kind, nul):
    path = tmp_path / "seed000.dmp"
    path.write_text(dump_text(physical_messages(attachment_type, nul)), encoding="ascii")
    cap = Capture.open(str(path))

    rows = read(cap, view="attachments").to_pylist()
    assert len(rows) == 1
    row = rows[0]
    assert row["attachment"] == KEY
    assert row["kind"] == kind
    assert row["name"] == "d:\\mytext.txt"
    assert row["description"] == "Text file..."
    assert row["message"] == APP_MESSAGE
    assert row["complete"] is True
    assert row["expected_messages"] == 3
    assert row["found_messages"] == 3
    assert not row["problem"]

    (f,) = files_table([attachment_plan(cap, a) for a in cap.file_attachments()]).to_pylist()
    assert (f["attachment"], f["name"], f["kind"]) == (KEY, "d:\\mytext.txt", kind)
    assert (f["lrecl"], f["size"]) == (LRECL, FILE_SIZE)
    if kind == "text":
        assert f["text"] == TEXT
        assert f["content"] == TEXT.encode("ascii")
    else:
        assert f["text"] is None
        assert f["content"] == b"".join(RECORDS)


def test_seed000_example_in_any_order(tmp_path):
    msgs = physical_messages(2, True)
    reordered = [msgs[5], msgs[3], msgs[1], msgs[4], msgs[0], msgs[2], msgs[3]]   # count first, one duplicate
    path = tmp_path / "seed000_shuffled.dmp"
    path.write_text(dump_text(reordered), encoding="ascii")
    cap = Capture.open(str(path))
    (row,) = read(cap, view="attachments").to_pylist()
    assert (row["attachment"], row["kind"], row["complete"], row["expected_messages"]) == (KEY, "text", True, 3)
    (f,) = files_table([attachment_plan(cap, a) for a in cap.file_attachments()]).to_pylist()
    assert f["text"] == TEXT
