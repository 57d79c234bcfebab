"""The MQ captures users hold (docs/spec/mq.md#amqsbcg-output): amqsbcg output, dmpmqmsg saved from the
terminal, several dumps in one file, and compressed files; each reads the rows its dmpmqmsg dump does."""
from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os

import pyarrow as pa
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from cmi_datasource import Capture, read, transports
from cmi_datasource.engine.decode import slice_batches
from cmi_datasource.engine.write import DatasetToWrite, FileToWrite, WriteOptions
from cmi_datasource.errors import TruncatedError
from cmi_datasource.transports.mq.errors import DumpSyntaxError
from cmi_datasource.transports.mq import amqsbcg
from cmi_datasource.transports.mq.amqsbcg import parse_browse, write_browse
from cmi_datasource.transports.mq.dmpmqmsg import write_dump
from cmi_datasource.transports.mq.envelope import unwrap
from cmi_datasource.transports.mq.message import mqmd_of

from support import build_mq_messages, slices_of

TABLE = pa.table({"ID": pa.array([float(i) for i in range(700)]),
                  "NAME": pa.array([f"name {i} ü" if i % 5 else None for i in range(700)])})


def traffic(**options):
    return build_mq_messages([DatasetToWrite(TABLE, "LIB", "BROWSED")], [FileToWrite("notes.txt", text="a\nb\n")],
                             WriteOptions(max_message_bytes=1200, deterministic_seed="browse", **options))


def written(tmp_path, name, write, messages=None, **kwargs) -> str:
    buffer = io.BytesIO()
    write(buffer, traffic() if messages is None else messages, **kwargs)
    path = tmp_path / name
    path.write_bytes(buffer.getvalue())
    return str(path)


def view_of(capture):
    """What a user compares: rows, files, and the messages view's descriptors and payloads."""
    messages = read(capture, view="messages").select(["msg_type", "msg_id", "correl_id", "encoding", "ccsid", "format",
                                                "put_date", "put_time", "group_id", "role", "payload"])
    return read(capture).to_pylist(), read(capture, view="files").to_pylist(), messages.to_pylist()


# ---------------------------------------------------------------------------------------------
# amqsbcg: real layouts


# amqsbcg of MQ 9 as printed in a public Kafka Connect IBM MQ sink demo (README, "Verify message
# received in DEV.QUEUE.1"): blank lines, "length - N of M bytes", padded character column.
KAFKA_DEMO = b"""AMQSBCG0 - starts here
**********************

 MQOPEN - 'DEV.QUEUE.1'


 MQGET of message number 1, CompCode:0 Reason:0
****Message descriptor****

  StrucId  : 'MD  '  Version : 2
  Report   : 0  MsgType : 8
  Expiry   : -1  Feedback : 0
  Encoding : 273  CodedCharSetId : 1208
  Format : 'MQHRF2  '
  Priority : 4  Persistence : 1
  MsgId : X'414D5120514D312020202020202020203F8EA85D1EA66A20'
  CorrelId : X'000000000000000000000000000000000000000000000000'
  BackoutCount : 0
  ReplyToQ       : '                                                '
  ReplyToQMgr    : 'QM1                                             '
  ** Identity Context
  UserIdentifier : 'app         '
  AccountingToken :
   X'0000000000000000000000000000000000000000000000000000000000000000'
  ApplIdentityData : '                                '
  ** Origin Context
  PutApplType    : '28'
  PutApplName    : 'cli.ConnectDistributed      '
  PutDate  : '20191017'    PutTime  : '16024736'
  ApplOriginData : '    '

  GroupId : X'000000000000000000000000000000000000000000000000'
  MsgSeqNumber   : '1'
  Offset         : '0'
  MsgFlags       : '0'
  OriginalLength : '-1'

****   Message      ****

 length - 174 of 174 bytes

00000000:  5246 4820 0000 0002 0000 009C 0000 0111           'RFH ............'
00000010:  0000 04B8 4D51 5354 5220 2020 0000 0000           '....MQSTR   ....'
00000020:  0000 04B8 0000 0020 3C6D 6364 3E3C 4D73           '....... <mcd><Ms'
00000030:  643E 6A6D 735F 7465 7874 3C2F 4D73 643E           'd>jms_text</Msd>'
00000040:  3C2F 6D63 643E 2020 0000 0050 3C6A 6D73           '</mcd>  ...P<jms'
00000050:  3E3C 4473 743E 7175 6575 653A 2F2F 2F44           '><Dst>queue:///D'
00000060:  4556 2E51 5545 5545 2E31 3C2F 4473 743E           'EV.QUEUE.1</Dst>'
00000070:  3C54 6D73 3E31 3537 3133 3238 3136 3733           '<Tms>15713281673'
00000080:  3632 3C2F 546D 733E 3C44 6C76 3E32 3C2F           '62</Tms><Dlv>2</'
00000090:  446C 763E 3C2F 6A6D 733E 2020 5468 6973           'Dlv></jms>  This'
000000A0:  2069 7320 6D79 206D 6573 7361 6765                ' is my message  '



 No more messages
 MQCLOSE
 MQDISC
"""

# amqsbcg of MQ 7 on AIX, from a public blog post on a growing dead-letter queue (2017): no blank
# lines, "length - N bytes" without "of M", a single space before the characters. The post shows
# the first 384 of the message's 856 bytes.
DEAD_LETTER_POST = b"""AMQSBCG0 - starts here
**********************
 MQOPEN - 'DEADQ'
 MQGET of message number 1
****Message descriptor****
  StrucId  : 'MD  '  Version : 2
  Report   : 0  MsgType : 8
  Expiry   : -1  Feedback : 0
  Encoding : 273  CodedCharSetId : 819
  Format : 'MQDEAD  '
  Priority : 0  Persistence : 0
  MsgId : X'414D5120514D4D424645202020202020505376A520000802'
  CorrelId : X'000000000000000000000000000000000000000000000000'
  BackoutCount : 0
  ReplyToQ       : '                                                '
  ReplyToQMgr    : 'QMMBFE                                          '
  ** Identity Context
  UserIdentifier : '            '
  AccountingToken : 
   X'0000000000000000000000000000000000000000000000000000000000000000'
  ApplIdentityData : '                                '
  ** Origin Context
  PutApplType    : '7'
  PutApplName    : 'QMMBFE                      '
  PutDate  : '20120914'    PutTime  : '18260760'
  ApplOriginData : '    '
  GroupId : X'000000000000000000000000000000000000000000000000'
  MsgSeqNumber   : '1'
  Offset         : '0'
  MsgFlags       : '0'
  OriginalLength : '-1'
****   Message      ****
 length - 856 bytes
00000000:  444C 4820 0000 0001 0000 0109 5359 5354 'DLH ........SYST'
00000010:  454D 2E43 4943 532E 494E 4954 4941 5449 'EM.CICS.INITIATI'
00000020:  4F4E 2E51 5545 5545 2020 2020 2020 2020 'ON.QUEUE        '
00000030:  2020 2020 2020 2020 2020 2020 514D 4D42 '            QMMB'
00000040:  4645 2020 2020 2020 2020 2020 2020 2020 'FE              '
00000050:  2020 2020 2020 2020 2020 2020 2020 2020 '                '
00000060:  2020 2020 2020 2020 2020 2020 0000 0111 '            ....'
00000070:  0000 0333 4D51 5452 4947 2020 0000 0006 '...3MQTRIG  ....'
00000080:  5255 4E4D 5154 524D 0000 0000 0000 0000 'RUNMQTRM........'
00000090:  0000 0000 0000 0000 0000 0000 3230 3132 '............2012'
000000A0:  3039 3134 3138 3236 3037 3633 544D 2020 '091418260763TM  '
000000B0:  0000 0001 3130 3238 3831 3030 3030 3139 '....102881000019'
000000C0:  5F32 2020 2020 2020 2020 2020 2020 2020 '_2              '
000000D0:  2020 2020 2020 2020 2020 2020 2020 2020 '                '
000000E0:  2020 2020 554E 4958 2E50 524F 3220 2020 '    UNIX.PRO2   '
000000F0:  2020 2020 2020 2020 2020 2020 2020 2020 '                '
00000100:  2020 2020 2020 2020 2020 2020 2020 2020 '                '
00000110:  2020 2020 2020 2020 2020 2020 2020 2020 '                '
00000120:  2020 2020 2020 2020 2020 2020 2020 2020 '                '
00000130:  2020 2020 2020 2020 2020 2020 2020 2020 '                '
00000140:  2020 2020 2020 2020 2020 2020 2020 2020 '                '
00000150:  2020 2020 0000 0006 2F62 6570 736D 6266 '    ..../bepsmbf'
00000160:  652F 6269 6E2F 6C69 622F 4D51 6372 6563 'e/bin/lib/MQcrec'
00000170:  7620 2020 2020 2020 2020 2020 2020 2020 'v               '
"""  # noqa: W291 (amqsbcg prints "AccountingToken : " with its trailing blank)


def test_amqsbcg_of_mq9_with_an_rfh2_header():
    [message] = parse_browse(KAFKA_DEMO, "kafka.txt")
    mqmd = mqmd_of(message)
    assert (mqmd.version, mqmd.msg_type, mqmd.encoding, mqmd.ccsid, mqmd.format) == (2, 8, 273, 1208, "MQHRF2  ")
    assert (mqmd.priority, mqmd.persistence, mqmd.put_appl_type) == (4, 1, 28)
    assert mqmd.put_appl_name == "cli.ConnectDistributed      " and mqmd.reply_to_qmgr.rstrip() == "QM1"
    assert (mqmd.put_date, mqmd.put_time, mqmd.original_length) == ("20191017", "16024736", -1)
    assert mqmd.msg_id == bytes.fromhex("414D5120514D312020202020202020203F8EA85D1EA66A20")
    assert len(message.payload) == 174 and message.problem is None
    assert message.file_offset == KAFKA_DEMO.index(b" MQGET of message number 1")
    assert message.file_end == KAFKA_DEMO.index(b"' is my message  '") + len(b"' is my message  '")
    data = unwrap(message)  # the MQRFH2 walked like any other MQ header
    assert data.payload == b"This is my message"
    assert data.details.envelope.properties == ("<mcd><Msd>jms_text</Msd></mcd>",
                                                "<jms><Dst>queue:///DEV.QUEUE.1</Dst><Tms>1571328167362</Tms>"
                                                "<Dlv>2</Dlv></jms>")


def test_amqsbcg_of_mq7_whose_rows_are_cut_keeps_its_descriptor_and_rows_with_a_typed_error():
    [message] = parse_browse(DEAD_LETTER_POST, "deadq.txt")
    e = message.damage.error()
    assert isinstance(e, TruncatedError) and "856 bytes but its rows hold 384" in str(e)
    assert e.offset == DEAD_LETTER_POST.index(b" MQGET of message number 1") and e.message_index == 0
    assert message.problem == e.problem and mqmd_of(message).format == "MQDEAD  " and len(message.payload) == 384


def test_amqsbcg_of_mq7_a_dead_letter_message():
    text = DEAD_LETTER_POST.replace(b"length - 856 bytes", b"length - 384 of 856 bytes")
    [message] = parse_browse(text, "deadq.txt")
    assert message.problem == "the capture holds 384 of its 856 bytes: amqsbcg's browse buffer cut it"
    mqmd = mqmd_of(message)
    assert (mqmd.encoding, mqmd.ccsid, mqmd.format, mqmd.put_appl_type) == (273, 819, "MQDEAD  ", 7)
    envelope = unwrap(message).details.envelope
    assert envelope.headers == ("MQDLH",) and envelope.dead_letter_reason == 0x109
    assert envelope.dead_letter_queue == "SYSTEM.CICS.INITIATION.QUEUE" and envelope.dead_letter_qmgr == "QMMBFE"
    assert unwrap(message).payload.startswith(b"TM  ")  # an MQTRIG trigger message follows the MQDLH


def test_a_row_that_skips_bytes_is_an_error_at_that_row():
    text = KAFKA_DEMO.replace(b"00000050:", b"00000060:", 1)
    [message] = parse_browse(text, "gap.txt")
    e = message.damage.error()
    assert isinstance(e, DumpSyntaxError) and e.offset == text.index(b"00000060:  3E3C")
    assert len(message.payload) == 0x50 and message.file_end > text.index(b"00000060:  3E3C")


def test_an_mqmd_number_too_large_for_its_four_bytes_is_a_dump_syntax_error(samples_dir):
    # Found by fuzzing: the number was kept, and the messages view failed on it with an OverflowError.
    with open(os.path.join(samples_dir, "amqsbcg_browse.txt"), "rb") as f:
        text = f.read()
    huge = text.replace(b"MsgType : 100000", b"MsgType : 10000000000000000000", 1)
    e = next(parse_browse(huge, "huge.txt")).damage.error()
    assert isinstance(e, DumpSyntaxError) and "does not fit the field's 4 bytes" in e.problem
    line_start = huge.rindex(b"\n", 0, huge.index(b"MsgType : 1000000000")) + 1
    assert e.source == "huge.txt" and e.message_index == 0 and e.offset == line_start
    assert mqmd_of(next(parse_browse(text.replace(b"MsgType : 100000", b"MsgType : -2147483648", 1),
                                     "min.txt"))).msg_type == -2 ** 31


# ---------------------------------------------------------------------------------------------
# amqsbcg: the same messages as a dmpmqmsg dump


def test_amqsbcg_reads_the_rows_and_messages_of_the_dmpmqmsg_dump(tmp_path):
    dump = Capture.open(written(tmp_path, "q.dmp", write_dump))
    browse = Capture.open(written(tmp_path, "q.txt", write_browse))
    assert browse.formats == {str(tmp_path / "q.txt"): "amqsbcg"}
    assert view_of(browse) == view_of(dump)
    assert view_of(browse)[0] == TABLE.to_pylist()


@pytest.mark.parametrize("variant", ["crlf", "no blank lines", "two runs", "summary", "pasted"])
def test_amqsbcg_layout_variants(tmp_path, variant):
    text = io.BytesIO()
    write_browse(text, traffic())
    data = text.getvalue()
    if variant == "crlf":
        data = data.replace(b"\n", b"\r\n")
    elif variant == "no blank lines":
        data = b"\n".join(line for line in data.split(b"\n") if line.strip()) + b"\n"
    elif variant == "two runs":  # the queue browsed in two parts, saved in one file
        messages = traffic()
        first, second = io.BytesIO(), io.BytesIO()
        write_browse(first, messages[:7])
        write_browse(second, messages[7:])
        data = first.getvalue() + second.getvalue()
    elif variant == "summary":
        data = data.replace(b" No more messages", b" No more messages\n****   Summary      ****\n"
                                                  b"  Messages browsed : 14\n  Bytes : 11000\n")
    elif variant == "pasted":  # indentation lost in a ticket
        data = b"\n".join(line.strip() for line in data.split(b"\n")) + b"\n"
    path = tmp_path / "browse.txt"
    path.write_bytes(data)
    assert view_of(Capture.open(str(path))) == view_of(Capture.open(written(tmp_path, "q.dmp", write_dump)))


def test_a_message_the_browse_buffer_cut_makes_its_attachment_incomplete(tmp_path):
    path = written(tmp_path, "cut.txt", write_browse, buffer_bytes=1000)
    capture = Capture.open(path)
    dataset = next(a for a in read(capture, view="attachments").to_pylist() if a["name"] == "LIB.BROWSED")
    assert dataset["complete"] is False
    # Message 2 (the variable definitions) is shorter than the buffer; the observations are cut.
    assert "sequenced message 2:" not in dataset["problem"]
    assert "sequenced message 3: the capture holds 1000 of its 1200 bytes" in dataset["problem"]
    cut = [r for r in read(capture, view="messages").to_pylist() if r["problem"]]
    assert cut and all(len(r["payload"]) == 1000 and "browse buffer" in r["problem"] for r in cut)


def test_partitions_decode_amqsbcg_rows_with_the_kernel(tmp_path, monkeypatch):
    capture = Capture.open(written(tmp_path, "q.txt", write_browse))
    [att] = [a for a in capture.attachments if a.entry.name == "LIB.BROWSED"]
    slices = slices_of(capture, att, 2000)
    assert len(slices) > 3
    refused = []
    original = amqsbcg.parse_browse
    monkeypatch.setattr(amqsbcg, "parse_browse", lambda *a, **k: refused.append(a) or original(*a, **k))
    rows = [r for s in slices for b in slice_batches(s, batch_rows=50) for r in b.to_pylist()]
    assert rows == TABLE.to_pylist() and refused == []


# ---------------------------------------------------------------------------------------------
# dmpmqmsg as people save it


BANNER = b"5724-H72 (C) Copyright IBM Corp. 1994, 2026.\nIBM MQ Queue Load/Unload Utility\n\n"


def test_dmpmqmsg_saved_from_the_terminal_keeps_its_banner(tmp_path):
    plain = written(tmp_path, "plain.dmp", write_dump)
    path = tmp_path / "terminal.dmp"
    path.write_bytes(BANNER + open(plain, "rb").read())
    assert transports.detect_format(str(path)).name == "dmpmqmsg"
    assert view_of(Capture.open(str(path))) == view_of(Capture.open(plain))


def test_several_dumps_concatenated_in_one_file(tmp_path):
    messages = traffic()
    first, second = io.BytesIO(), io.BytesIO()
    write_dump(first, messages[:5])
    write_dump(second, messages[5:])
    path = tmp_path / "both.dmp"  # headers, banners and "* Index" numbering start again mid-file
    path.write_bytes(BANNER + first.getvalue() + BANNER + second.getvalue().rstrip(b"\n"))
    assert view_of(Capture.open(str(path))) == view_of(Capture.open(written(tmp_path, "q.dmp", write_dump)))


# ---------------------------------------------------------------------------------------------
# Compressed captures


COMPRESSORS = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress,
               "zst": lambda data: zstandard.ZstdCompressor().compress(data)}


@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
@pytest.mark.parametrize("write", [write_dump, write_browse], ids=["dmpmqmsg", "amqsbcg"])
def test_compressed_captures_read_like_the_plain_file(tmp_path, suffix, write):
    plain = written(tmp_path, "plain", write)
    path = tmp_path / f"capture.{suffix}"  # named by their magic bytes, not their suffix
    path.write_bytes(COMPRESSORS[suffix](open(plain, "rb").read()))
    capture = Capture.open(str(path))
    assert capture.compressed == {str(path)} and capture.formats[str(path)] == write.__name__.replace(
        "write_", "").replace("dump", "dmpmqmsg").replace("browse", "amqsbcg")
    assert view_of(capture) == view_of(Capture.open(plain))
    # One partition reads an attachment held in a compressed file: the stream is decompressed once.
    [att] = [a for a in capture.attachments if a.entry.name == "LIB.BROWSED"]
    [part] = slices_of(capture, att, 100)
    assert [r for b in slice_batches(part, batch_rows=64) for r in b.to_pylist()] == TABLE.to_pylist()


def test_a_compressed_file_read_in_small_chunks_never_rewinds(tmp_path, monkeypatch):
    from cmi_datasource import containers
    plain = written(tmp_path, "plain", write_dump)
    path = tmp_path / "capture.gz"
    path.write_bytes(gzip.compress(open(plain, "rb").read()))
    reopened = []
    monkeypatch.setattr(containers.CaptureReader, "_reopen", lambda self: reopened.append(self))
    from cmi_datasource.transports.mq.dmpmqmsg import read_dump
    assert [m.payload for m in read_dump(str(path), chunk_bytes=3000)] == [m.payload for m in read_dump(plain)]
    assert reopened == []


def test_a_cut_compressed_file_is_a_typed_error_naming_it(tmp_path):
    data = gzip.compress(open(written(tmp_path, "plain", write_dump), "rb").read())
    path = tmp_path / "cut.gz"
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(TruncatedError, match="cut short or damaged") as e:
        Capture.open(str(path), use_index_cache=False)
    assert e.value.source == str(path)


# ---------------------------------------------------------------------------------------------
# The messages view shows every message's bytes


def test_messages_view_payload_is_each_message_after_its_mq_headers(tmp_path):
    from mq_traffic import plain, xmitq
    messages = [xmitq(d, p) for d, p in plain()]
    capture = Capture.open(written(tmp_path, "xmit.dmp", write_dump, messages))
    rows = read(capture, view="messages").to_pylist()
    assert [r["payload"] for r in rows] == [p for _, p in plain()]  # re-read whole where planning kept 256 bytes
    assert max(len(r["payload"]) for r in rows) > 256 and all(r["headers"] == ["MQXQH"] for r in rows)
    assert all(r["length"] == len(r["payload"]) + 428 for r in rows)  # MQXQH with its MQMD


def test_sample_amqsbcg_capture_is_recognised(samples_dir):
    path = os.path.join(samples_dir, "amqsbcg_browse.txt")
    capture = Capture.open(path)
    assert capture.formats == {path: "amqsbcg"} and read(capture).num_rows > 0


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10 ** 6), st.sampled_from(b"0aFGX \n\r:'*AM")), max_size=6),
       st.integers(0, 40))
def test_damaged_amqsbcg_decodes_like_the_line_parser_or_raises_typed_errors(tmp_path_factory, edits, cut):
    # The partition kernel never reads or writes outside its buffers, and where the line parser
    # reads a span, gives its bytes; otherwise a typed error (the line parser's own).
    from cmi_datasource.errors import CmiFormatError
    from cmi_datasource.transports.base import parse_span
    from cmi_datasource.transports.mq.dump_spans import read_spans_in_bulk
    payloads = [bytes(range(256)) * 2, b"short", b"", bytes(40)]
    good = io.BytesIO()
    write_browse(good, [(d, p) for (d, _), p in zip(traffic()[:4], payloads)])
    good = good.getvalue()
    spans = [("x", m.index, m.file_offset, m.file_end) for m in parse_browse(good, "x")]
    bad = bytearray(good)
    for position, byte in edits:
        bad[position % len(good)] = byte
    bad = bytes(bad[:len(bad) - cut])
    path = tmp_path_factory.mktemp("amqsbcg") / "q.txt"
    path.write_bytes(bad)
    spans = [(str(path), i, start, end) for _, i, start, end in spans]
    try:
        pieces = list(read_spans_in_bulk(spans, [4] * len(spans), 8, None, amqsbcg.decode_spans, parse_browse))
    except CmiFormatError:
        return
    got = [bytes(piece.head_of(i)) + bytes(piece.data_of(i)) for piece in pieces for i in range(len(piece.spans))]
    for span, payload in zip(spans, got):
        text = bad[span[2]:span[3]]
        try:
            assert parse_span(parse_browse, text, span).payload == payload
        except CmiFormatError:
            pass  # a damaged descriptor line: partitions check each payload against planning's CRC
