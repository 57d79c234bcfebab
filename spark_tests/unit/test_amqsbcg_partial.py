"""amqsbcg messages that cannot be read whole keep what was read: the descriptor fields of their
readable lines and the bytes of their rows, with the problem and a typed error for FAILFAST.

The text is built here line by line from IBM's layout of the browse sample's output (docs/spec/mq.md#amqsbcg-output,
"amqsbcg"): ``MQGET of message number N``, the ``****Message descriptor****`` block of
``Name : value`` lines (two pairs on some, characters quoted with their trailing blanks, bytes as
``X'...'``, AccountingToken's value on the next line, the version-2 fields last), then
``****   Message      ****``, ``length - N of M bytes`` and rows of an 8-digit hex offset, a colon,
groups of four hex digits and the characters in quotes. None of the package's writers is used."""
from __future__ import annotations

import pyarrow as pa
import pytest

import cmi_datasource

from cmi_datasource import Capture, read
from cmi_datasource.engine.write import DatasetToWrite, WriteOptions
from cmi_datasource.errors import TruncatedError
from cmi_datasource.transports.mq.errors import DumpSyntaxError

from support import build_mq_messages

TABLE = pa.table({"K": [float(i) for i in range(60)], "V": [f"value {i}" for i in range(60)]})


def descriptor_lines(mqmd) -> list:
    def chars(value, width):
        return "'" + str(value).ljust(width) + "'"

    def hexed(value: bytes):
        return "X'" + value.hex().upper() + "'"

    return ["****Message descriptor****", "",
            "  StrucId  : 'MD  '  Version : 2",
            f"  Report   : 0  MsgType : {mqmd.msg_type}",
            "  Expiry   : -1  Feedback : 0",
            f"  Encoding : {mqmd.encoding}  CodedCharSetId : {mqmd.ccsid}",
            f"  Format : {chars(mqmd.format, 8)}",
            "  Priority : 0  Persistence : 1",
            f"  MsgId : {hexed(mqmd.msg_id)}",
            f"  CorrelId : {hexed(mqmd.correl_id)}",
            "  BackoutCount : 0",
            f"  ReplyToQ       : {chars('', 48)}",
            f"  ReplyToQMgr    : {chars('QM1', 48)}",
            "  ** Identity Context",
            f"  UserIdentifier : {chars('mqm', 12)}",
            "  AccountingToken : ",
            "   " + hexed(bytes(32)),
            f"  ApplIdentityData : {chars('', 32)}",
            "  ** Origin Context",
            "  PutApplType    : '6'",
            f"  PutApplName    : {chars('sas', 28)}",
            "  PutDate  : '20260923'    PutTime  : '03245799'",
            f"  ApplOriginData : {chars('', 4)}",
            "",
            f"  GroupId : {hexed(bytes(24))}",
            "  MsgSeqNumber   : '1'",
            "  Offset         : '0'",
            "  MsgFlags       : '0'",
            "  OriginalLength : '-1'", ""]


def row(offset: int, chunk: bytes) -> str:
    groups = [chunk[i:i + 2].hex().upper() for i in range(0, len(chunk), 2)]
    shown = "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in chunk)
    return f"{offset:08X}:  " + " ".join(groups).ljust(40) + "  '" + shown.ljust(16) + "'"


def message_lines(number: int, mqmd, payload: bytes, rows: int = None) -> list:
    """One message as amqsbcg prints it; ``rows``: only the first so many data rows (a cut file)."""
    lines = [f" MQGET of message number {number}, CompCode:0 Reason:0"] + descriptor_lines(mqmd)
    lines += ["****   Message      ****", "", f" length - {len(payload)} of {len(payload)} bytes", ""]
    lines += [row(at, payload[at:at + 16]) for at in range(0, len(payload), 16)][:rows]
    return lines + ["", ""]


def browse_text(messages, edit=None) -> bytes:
    """amqsbcg's output for (MQMD, payload) pairs; ``edit(number, lines)`` changes a message's lines."""
    lines = ["AMQSBCG0 - starts here", "**********************", "", " MQOPEN - 'SAS.CMI.QUEUE'", "", ""]
    for number, (mqmd, payload) in enumerate(messages, start=1):
        lines += (edit or (lambda n, found: found))(number, message_lines(number, mqmd, payload))
    lines += [" No more messages", " MQCLOSE", " MQDISC", ""]
    return "\n".join(lines).encode("latin-1")


def traffic():
    return build_mq_messages([DatasetToWrite(TABLE, "LIB", "PARTIAL")],
                             options=WriteOptions(max_message_bytes=700, deterministic_seed="partial"))


def open_text(tmp_path, text: bytes) -> Capture:
    path = tmp_path / "browse.txt"
    path.write_bytes(text)
    return Capture.open(str(path), use_index_cache=False)


def test_the_whole_text_reads_the_dataset(tmp_path):
    assert read(open_text(tmp_path, browse_text(traffic()))).equals(TABLE)


@pytest.mark.parametrize("where", ["in the middle", "at the end"])
def test_a_message_cut_keeps_its_descriptor_and_the_rows_that_are_there(tmp_path, where):
    messages = traffic()
    number = 4
    mqmd, payload = messages[number - 1]
    held = 5 * 16
    if where == "in the middle":  # rows lost from the file, the next message whole
        text = browse_text(messages, lambda n, lines: lines[:lines.index(row(held, payload[held:held + 16]))]
                           + ["", ""] if n == number else lines)
    else:  # the file ends after the fifth row of the message
        messages = messages[:number]
        text = browse_text(messages)
        text = text[:text.index(row(held, payload[held:held + 16]).encode())]
    capture = open_text(tmp_path, text)
    rows = read(capture, view="messages").to_pylist()
    assert len(rows) == len(messages)
    cut = rows[number - 1]
    assert cut["problem"] == (f"amqsbcg shows a message of {len(payload)} bytes but its rows hold {held}: "
                              "the file is cut")
    assert cut["payload"] == payload[:held] and cut["length"] == held
    assert (cut["msg_type"], cut["correl_id"], cut["encoding"], cut["ccsid"]) == (
        mqmd.msg_type, mqmd.correl_id.hex().upper(), mqmd.encoding, mqmd.ccsid)
    assert cut["attachment"] is not None and cut["sequence"] is not None  # its descriptor places it
    assert all(r["problem"] is None for r in rows if r is not cut)
    with pytest.raises(TruncatedError) as raised:
        read(capture)
    assert raised.value.location.attachment == cut["attachment"] and raised.value.location.sequence == cut["sequence"]


@pytest.mark.parametrize("bad, problem", [
    ("  Expiry   : 'never'  Feedback : 0", "Expiry : b\"'never'\" is not a whole number"),
    ("  Priority : high  Persistence : 1", "Priority has no value that reads as a number, 'characters' or X'hex'"),
    ("  #### unreadable ####", "holds no 'Name : value' pair"),
])
def test_an_unreadable_descriptor_line_keeps_the_other_fields_and_every_row(tmp_path, bad, problem):
    messages = traffic()
    mqmd, payload = messages[2]
    line = next(line for line in descriptor_lines(mqmd) if line.split(":")[0].strip() == bad.split(":")[0].strip())\
        if ":" in bad else "  BackoutCount : 0"
    text = browse_text(messages, lambda n, lines: [bad if x == line else x for x in lines] if n == 3 else lines)
    capture = open_text(tmp_path, text)
    rows = read(capture, view="messages").to_pylist()
    damaged = rows[2]
    assert problem in damaged["problem"] and "this line's are MQMD defaults" in damaged["problem"]
    assert damaged["payload"] == payload and damaged["length"] == len(payload)
    assert (damaged["msg_type"], damaged["correl_id"]) == (mqmd.msg_type, mqmd.correl_id.hex().upper())
    assert [r["problem"] for r in rows].count(None) == len(rows) - 1
    with pytest.raises(DumpSyntaxError, match=problem.replace("(", r"\(").replace(")", r"\)").split("'")[0]):
        read(capture)


def test_a_data_row_that_does_not_continue_keeps_the_rows_before_it_and_reads_on(tmp_path):
    messages = traffic()
    mqmd, payload = messages[3]
    skipped = row(0x20, payload[0x20:0x30])
    text = browse_text(messages, lambda n, lines: [x for x in lines if x != skipped] if n == 4 else lines)
    rows = read(open_text(tmp_path, text), view="messages").to_pylist()
    damaged = rows[3]
    assert damaged["problem"].startswith("data row b") and row(0x30, payload[0x30:0x40])[:40] in damaged["problem"]
    assert damaged["payload"] == payload[:0x20] and damaged["correl_id"] == mqmd.correl_id.hex().upper()
    assert len(rows) == len(messages) and rows[4]["problem"] is None and rows[4]["payload"] == messages[4][1]


def test_damage_past_the_first_chunk_names_the_message_by_its_place_in_the_whole_file(tmp_path, monkeypatch):
    # A large file is parsed in chunks on threads, each numbered from 0 until the messages ahead of
    # it are counted: the damage a later chunk keeps must name the file's message, as FAILFAST raises it.
    from cmi_datasource.transports.mq.transport import AmqsbcgFormat
    messages = traffic()
    number = len(messages) - 1
    text = browse_text(messages, lambda n, lines: ["  Expiry   : 'never'  Feedback : 0" if x.startswith("  Expiry")
                                                   else x for x in lines] if n == number else lines)
    monkeypatch.setattr(AmqsbcgFormat, "_chunk_bytes", len(text) // 4)  # several chunks: the threaded path
    capture = open_text(tmp_path, text)
    rows = cmi_datasource.read(capture, view="messages").to_pylist()
    assert [r["index"] for r in rows] == list(range(1, len(messages) + 1))
    assert [r["index"] for r in rows if r["problem"]] == [number]
    with pytest.raises(DumpSyntaxError) as raised:
        cmi_datasource.read(capture)
    assert raised.value.message_number == number
    text_bytes = tmp_path.joinpath("browse.txt").read_bytes()
    assert text_bytes.rfind(b"MQGET of message number ", 0, raised.value.location.file_offset + 40) == \
        text_bytes.find(f"MQGET of message number {number},".encode())
