"""dmpmqmsg text dumps (docs/spec/mq.md#dmpmqmsg-text-dumps): parse_dump / read_dump / write_dump on real bytes."""
from __future__ import annotations

import io

import pytest

from cmi_datasource import read
from cmi_datasource.transports.base import read_spans
from cmi_datasource.transports.mq.dmpmqmsg import (format_message, parse_dump, read_dump,
                                             write_dump)
from cmi_datasource.errors import CmiFormatError, TruncatedError
from cmi_datasource.transports.mq.errors import DumpSyntaxError
from cmi_datasource.messages import PhysicalMessage
from cmi_datasource.transports.mq.message import mqmd_of
from cmi_datasource.transports.mq.mqmd import MQMD

BLANK = b" "
CORREL = bytes(range(24))


def parse(text: bytes, source: str = "dump.txt"):
    return list(parse_dump(text, source))


def write(tmp_path, data: bytes, name: str = "q.dmp") -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


# ---------------------------------------------------------------------------------------------
# Comments, blank lines, N messages, layout


HEADER = (b"* QLOAD Version:8.0 Created:Mon Jan 15 10:11:12 2024\n"
          b"* Qmgr  = QM1\n"
          b"* Queue = SAS.CMI.QUEUE\n"
          b"\n")


def test_comments_and_blank_lines_are_skipped():
    data = (HEADER
            + b"* Index 1\n"
            + b"A MST 8\n"
            + b"* a comment between attribute and data lines\n"
            + b"\n"
            + b"   \t \n"  # whitespace-only line
            + b"X 414243\n"
            + b"* trailing comment\n"
            + b"\n\n")
    [m] = parse(data)
    assert m.payload == b"ABC"
    assert mqmd_of(m).msg_type == 8
    assert m.index == 0
    assert m.source == "dump.txt"
    assert m.file_offset == data.index(b"A MST")


def test_file_without_header_line_and_only_comments_gives_nothing():
    assert parse(b"") == []
    assert parse(b"* only a comment\n\n") == []
    [m] = parse(b"N\nX 00FF\n")
    assert m.payload == b"\x00\xff"


def test_n_message_has_no_descriptor():
    data = HEADER + b"* Index 1\nN\nX 0102030405\n\n* Index 2\nN\nS \"hi\"\n\n"
    msgs = parse(data)
    assert [mqmd_of(m) for m in msgs] == [None, None]
    assert [m.payload for m in msgs] == [b"\x01\x02\x03\x04\x05", b"hi"]
    assert [m.index for m in msgs] == [0, 1]
    assert msgs[1].file_offset == data.index(b"N\nS")


def test_two_messages_without_blank_line_between():
    data = b"A MST 1\nX 41\nA MST 2\nX 42\nN\nX 43\n"
    msgs = parse(data)
    assert [m.payload for m in msgs] == [b"A", b"B", b"C"]
    assert [mqmd_of(m).msg_type if mqmd_of(m) else None for m in msgs] == [1, 2, None]
    assert [m.file_offset for m in msgs] == [0, data.index(b"A MST 2"), data.index(b"N\n")]
    assert [m.index for m in msgs] == [0, 1, 2]


# ---------------------------------------------------------------------------------------------
# Attribute lines


FULL_V2 = (b"A VER 2\n"
           b"A RPT 16\n"
           b"A MST 100001\n"
           b"A EXP -1\n"
           b"A FDB 0\n"
           b"A ENC 785\n"
           b"A CCS 37\n"
           b"A FMT MQSTR   \n"
           b"A PRI 4\n"
           b"A PER 1\n"
           b"A MSI 414D5120514D31\n"  # 7 bytes of 24: padded with the default (zeros)
           b"A COI " + CORREL.hex().upper().encode() + b"\n"
           b"A BOC 3\n"
           b"A RTQ REPLY.Q\n"  # padded with blanks to 48
           b"A RTM QM2   \n"  # trailing blanks kept, then padded
           b"A USR sasuser\n"
           b"A ACC 16ab\n"  # lowercase hex accepted, padded with zeros
           b"A AIX 41424344\n"  # padded with the default (blanks)
           b"A PAT 28\n"
           b"A PAN\n"  # no value: keeps the default
           b"A PTD 20240131\n"
           b"A PTT 12345678\n"
           b"A AOX 31\n"
           b"A GRP 0102\n"
           b"A MSQ 7\n"
           b"A OFF 100\n"
           b"A MSF 6\n"
           b"A ORL 42\n"
           b"X 48656C6C6F\n")


def test_every_attribute_is_typed():
    [m] = parse(FULL_V2)
    d = mqmd_of(m)
    assert d.version == 2
    assert d.report == 16
    assert d.msg_type == 100001
    assert d.expiry == -1
    assert d.feedback == 0
    assert d.encoding == 785
    assert d.ccsid == 37
    assert d.format == "MQSTR   "
    assert d.priority == 4
    assert d.persistence == 1
    assert d.msg_id == b"AMQ QM1" + bytes(17)
    assert d.correl_id == CORREL
    assert d.backout_count == 3
    assert d.reply_to_q == "REPLY.Q".ljust(48)
    assert d.reply_to_qmgr == "QM2".ljust(48)
    assert d.user_identifier == "sasuser".ljust(12)
    assert d.accounting_token == b"\x16\xab" + bytes(30)
    assert d.appl_identity_data == b"ABCD" + b" " * 28
    assert d.put_appl_type == 28
    assert d.put_appl_name == " " * 28
    assert d.put_date == "20240131"
    assert d.put_time == "12345678"
    assert d.appl_origin_data == b"1   "
    assert d.group_id == b"\x01\x02" + bytes(22)
    assert d.msg_seq_number == 7
    assert d.offset == 100
    assert d.msg_flags == 6
    assert d.original_length == 42
    # Types, not only values.
    for name in ("version", "report", "msg_type", "encoding", "ccsid", "msg_seq_number", "original_length"):
        assert type(getattr(d, name)) is int, name
    for name in ("format", "reply_to_q", "put_date", "put_time", "put_appl_name", "user_identifier"):
        assert type(getattr(d, name)) is str, name
    for name in ("msg_id", "correl_id", "accounting_token", "group_id", "appl_identity_data",
                 "appl_origin_data"):
        assert type(getattr(d, name)) is bytes, name
    assert m.payload == b"Hello"


def test_missing_and_valueless_attributes_keep_mqmd_defaults():
    # "A CCS" (5 chars) and "A FMT " (6 chars) are shorter than 7: the field keeps its default.
    [m] = parse(b"A MST 100000\nA CCS\nA FMT \nA MSI \nX 00\n")
    d = mqmd_of(m)
    assert d.msg_type == 100000
    assert d.ccsid == 0
    assert d.format == " " * 8
    assert d.msg_id == bytes(24)
    assert d.version == 1
    assert d.encoding == 546
    assert d.priority == -1
    assert d.persistence == 2
    assert d.expiry == -1
    assert d.appl_identity_data == b" " * 32
    assert d.appl_origin_data == b" " * 4
    assert d.group_id == bytes(24)
    assert d.msg_seq_number == 1
    assert d.original_length == -1


def test_a_later_line_of_a_field_wins_and_a_value_less_one_keeps_what_came_before():
    # Read twice: the second time every line comes from the parse cache (value-less ones too).
    data = (b"A MST 100000\nA MST\nA CCS 819\nA CCS 1208\nA MSI 0102\nX 00\n"
            b"\nA MST 100000\nA MST\nA CCS 819\nA CCS 1208\nA MSI 0102\nX 00\n")
    for _ in range(2):
        for m in parse(data):
            d = mqmd_of(m)
            assert (d.msg_type, d.ccsid, d.msg_id) == (100000, 1208, b"\x01\x02" + bytes(22))


@pytest.mark.parametrize("value", [b"01 02", b"0102 03", b"012", b"01G2", b"01\xff2", b"0x01"])
def test_a_hex_attribute_takes_only_an_even_run_of_digits(value):
    # bytes.fromhex alone would pass over the spaces between bytes.
    data = b"A MST 8\nX 41\n\nA MST 8\nA COI " + value + b"\nX 00\n"
    with pytest.raises(DumpSyntaxError, match="not an even run of hex digits") as e:
        parse(data)
    assert (e.value.message_index, e.value.offset) == (1, data.index(b"A COI"))


def test_aid_and_aod_are_characters():
    [m] = parse(b"A MST 8\nA AID Hello World\nA AOD ab\nX 00\n")
    assert mqmd_of(m).appl_identity_data == b"Hello World" + b" " * 21
    assert mqmd_of(m).appl_origin_data == b"ab  "
    # The hex variants of the same fields.
    [m] = parse(b"A MST 8\nA AIX 48656C6C6F20576F726C64\nA AOX 6162\nX 00\n")
    assert mqmd_of(m).appl_identity_data == b"Hello World" + b" " * 21
    assert mqmd_of(m).appl_origin_data == b"ab  "
    # A full-width AID keeps its trailing blanks and all its characters.
    value = b"x" * 30 + b"  "
    [m] = parse(b"A AID " + value + b"\nX 00\n")
    assert mqmd_of(m).appl_identity_data == value


def test_decimal_attribute_with_junk_is_an_error():
    data = b"A MST 8\nX 41\n\nA MST eight\nX 42\n"
    with pytest.raises(DumpSyntaxError) as e:
        parse(data)
    assert e.value.message_index == 1
    assert e.value.offset == data.index(b"A MST eight")


# ---------------------------------------------------------------------------------------------
# Data lines


def test_x_lines_of_different_widths_are_concatenated():
    payload = bytes(range(256)) * 2
    lines = [payload[0:25], payload[25:26], payload[26:100], payload[100:512]]
    data = b"N\n" + b"".join(b"X " + part.hex().upper().encode() + b"\n" for part in lines)
    [m] = parse(data)
    assert m.payload == payload


def test_x_lines_with_ascii_column():
    # dmpmqmsg -da: hex, blank padding to the data width + 1, then <printable characters>.
    full = bytes(range(0x41, 0x41 + 25))  # "ABC...Y"
    short = b"a <b> c"
    data = (b"N\n"
            + b"X " + full.hex().upper().encode() + b"  <" + full + b">\n"
            + b"X " + short.hex().upper().encode() + b" " * (2 * (26 - len(short))) + b"<a <b> c>\n")
    [m] = parse(data)
    assert m.payload == full + short


def test_x_lines_with_and_without_ascii_column_mix():
    data = b"N\nX 0001FF  <...>\nX 7E7F\nX 80 <.>\n"
    [m] = parse(data)
    assert m.payload == b"\x00\x01\xff\x7e\x7f\x80"


def test_empty_x_line_is_an_empty_message():
    [m] = parse(b"A MST 8\nX \n\n")
    assert m.payload == b""


def test_string_lines_with_escapes():
    data = (b"N\n"
            b'S "say ~"hi~" ~~ tilde"\n'
            b'S "  leading and trailing blanks  "\n'
            b'S ""\n'
            b'S "~~~""\n')
    [m] = parse(data)
    assert m.payload == b'say "hi" ~ tilde' + b"  leading and trailing blanks  " + b'~"'


def test_bare_s_line_is_an_empty_message():
    msgs = parse(b"A MST 8\nS \n\nA MST 9\nS\n\n")
    assert [m.payload for m in msgs] == [b"", b""]
    assert [mqmd_of(m).msg_type for m in msgs] == [8, 9]


def test_s_line_with_bad_escape_or_no_closing_quote():
    with pytest.raises(DumpSyntaxError):
        parse(b'N\nS "a~b"\n')
    with pytest.raises(DumpSyntaxError):
        parse(b'N\nS "no end\n')


def test_text_lines_get_a_newline_each():
    data = b"N\nT first line\nT \nT  two leading\n"
    [m] = parse(data)
    assert m.payload == b"first line\n\n two leading\n"


def test_mixed_data_lines_keep_their_order():
    data = b'N\nX 41\nS "BC"\nX 44\nX 45\nT F\nS "G"\n'
    [m] = parse(data)
    assert m.payload == b"ABCDEF\nG"


def test_crlf_file_gives_the_same_messages_and_true_byte_offsets():
    lf = HEADER + b"* Index 1\nA MST 8\nA FMT MQSTR   \nX 4142\nS \"C D\"\n\n* Index 2\nN\nT text\nX 45\n\n"
    crlf = lf.replace(b"\n", b"\r\n")
    a, b = parse(lf), parse(crlf)
    assert [(mqmd_of(m), m.payload) for m in a] == [(mqmd_of(m), m.payload) for m in b]
    assert b[0].payload == b"ABC D"
    assert mqmd_of(b[0]).format == "MQSTR   "
    assert b[1].payload == b"text\nE"
    assert [m.file_offset for m in b] == [crlf.index(b"A MST"), crlf.index(b"N\r\n")]


def test_read_dump_names_the_file(tmp_path):
    path = write(tmp_path, HEADER + b"A MST 8\nX 41\n\nN\nX 42\n\n")
    msgs = list(read_dump(path))
    assert [m.source for m in msgs] == [path, path]
    assert [m.payload for m in msgs] == [b"A", b"B"]


# ---------------------------------------------------------------------------------------------
# Errors


@pytest.mark.parametrize("error, body, bad_line, message_index", [
    (DumpSyntaxError, b"A MST 8\nX 4142\n\nA MST 9\nX 4344\nX 45ZZ\nX 46\n\n", b"X 45ZZ", 1),  # bad hex
    # attributes and no data line before the end of the file
    (TruncatedError, b"A MST 8\nX 41\n\n* Index 2\nA MST 100001\nA CCS 1208\n\n", b"A MST 100001", 1),
])
def test_errors_in_a_dump_file_name_file_message_and_byte_offset(tmp_path, error, body, bad_line, message_index):
    data = HEADER + body
    path = write(tmp_path, data)
    with pytest.raises(error) as e:
        list(read_dump(path))
    assert e.value.source == path
    assert e.value.message_index == message_index
    assert e.value.offset == e.value.location.file_offset == data.index(bad_line)


@pytest.mark.parametrize("data, bad_line, message_index", [
    (b"N\nX 414\n", b"X 414", 0),  # odd number of hex digits
    # Every X line holds whole bytes (IBM's ConvertHex rejects a dangling digit per line),
    # even when the next line would complete the byte.
    (b"N\nX 414\nX 2\n", b"X 414", 0),
    (b"A MST 8\nA COI 01GG\nX 00\n", b"A COI", 0),  # bad hex in an attribute
    (b"A MST 8\nX 41\nQ what is this\n", b"Q what", 0),  # unrecognised line
])
def test_syntax_errors_point_at_the_bad_line(data, bad_line, message_index):
    with pytest.raises(DumpSyntaxError) as e:
        parse(data)
    assert e.value.offset == data.index(bad_line)
    assert e.value.message_index == message_index


def test_unknown_attribute_code():
    data = b"A MST 8\nX 41\n\nA MST 8\nA ZZZ 1\nX 00\n"
    with pytest.raises(DumpSyntaxError) as e:
        parse(data)
    assert "ZZZ" in str(e.value)
    assert e.value.message_index == 1
    assert e.value.offset == data.index(b"A ZZZ")


def test_a_bad_attribute_line_among_cached_ones_is_named_at_its_offset_with_either_line_end():
    # A message's attribute lines are looked up in the parse cache in one pass and only the lines it
    # lacks are parsed: the bad one, after lines already cached, is still named where it is.
    for data in (b"A MST 8\nA ENC 546\nX 41\n\nA MST 8\nA ENC 546\nA CCS x\nX 00\n",
                 b"A MST 8\r\nA ENC 546\r\nX 41\r\n\r\nA MST 8\r\nA ENC 546\r\nA CCS x\r\nX 00\r\n"):
        with pytest.raises(DumpSyntaxError) as e:
            parse(data)
        assert "CCS" in str(e.value)
        assert (e.value.message_index, e.value.offset) == (1, data.index(b"A CCS"))


def test_data_line_before_any_attribute_line():
    for line in (b"X 41", b'S "A"', b"T A"):
        data = HEADER + line + b"\n"
        with pytest.raises(DumpSyntaxError) as e:
            parse(data)
        assert e.value.offset == len(HEADER)
        assert e.value.message_index == 0


def test_errors_of_a_slice_use_whole_file_offsets_and_indexes():
    with pytest.raises(DumpSyntaxError) as e:
        list(parse_dump(b"N\nX 4G\n", "f", base_offset=1000, first_index=7))
    assert e.value.offset == 1000 + 2
    assert e.value.message_index == 7


# ---------------------------------------------------------------------------------------------
# Writing


def _descriptor_v2(**kw) -> MQMD:
    base = dict(version=2, msg_type=100001, encoding=273, ccsid=819, format="MQSTR   ", priority=5,
                persistence=1, msg_id=bytes(range(100, 124)), correl_id=CORREL, backout_count=2,
                reply_to_q="REPLY.QUEUE".ljust(48), reply_to_qmgr="QMGR2".ljust(48),
                user_identifier="sasdemo".ljust(12), accounting_token=bytes(range(32)),
                appl_identity_data=b"ident" + b" " * 27, put_appl_type=11,
                put_appl_name="C:\\SAS\\sas.exe".ljust(28), put_date="20240229", put_time="23595999",
                appl_origin_data=b"orig", group_id=bytes(range(1, 25)), msg_seq_number=3, offset=64,
                msg_flags=2, original_length=-1)
    base.update(kw)
    return MQMD(**base)


def test_format_message_bytes():
    assert format_message(None, b"AB", index=3) == b"* Index 3\nN\nX 4142\n\n"
    assert format_message(None, b"") == b"N\nX \n\n"
    payload = bytes(range(30))
    text = format_message(None, payload, data_width=25)
    assert text == (b"N\nX " + payload[:25].hex().upper().encode() + b"\nX "
                    + payload[25:].hex().upper().encode() + b"\n\n")
    lines = format_message(MQMD(msg_type=100000, correl_id=CORREL), b"\x01").split(b"\n")
    assert b"A MST 100000" in lines
    assert b"A COI " + CORREL.hex().upper().encode() in lines
    assert b"A FMT         " in lines  # 8 blanks kept
    assert not any(line.startswith(b"A VER") or line.startswith(b"A GRP") for line in lines)


def test_format_message_version_2_writes_group_fields():
    lines = format_message(_descriptor_v2(), b"x").split(b"\n")
    assert lines[0] == b"A VER 2"
    assert b"A GRP " + bytes(range(1, 25)).hex().upper().encode() in lines
    assert b"A MSQ 3" in lines and b"A OFF 64" in lines and b"A MSF 2" in lines and b"A ORL -1" in lines


def test_write_dump_round_trip(tmp_path):
    messages = [
        (_descriptor_v2(), bytes(range(256)) * 3),
        (MQMD(msg_type=100000, correl_id=CORREL, encoding=785, ccsid=500,
                    put_date="19991231", put_time="00000000"), b'quote " and tilde ~'),
        (None, b"no descriptor"),
        (_descriptor_v2(msg_type=8, msg_flags=0, group_id=bytes(24)), b""),
        (MQMD(), b"\x00" * 7),
    ]
    buf = io.BytesIO()
    count = write_dump(buf, messages, queue_manager="QM1", queue="Q1", created="Mon Jan  1 00:00:00 2024",
                       data_width=16)
    assert count == len(messages)
    data = buf.getvalue()
    assert data.startswith(b"* QLOAD Version:")
    assert b"* Qmgr  = QM1\n" in data and b"* Queue = Q1\n" in data
    parsed = parse(data)
    assert [(mqmd_of(m), m.payload) for m in parsed] == messages
    assert [m.index for m in parsed] == list(range(len(messages)))
    path = write(tmp_path, data)
    from_file = list(read_dump(path))
    assert [(mqmd_of(m), m.payload) for m in from_file] == messages


def test_write_dump_without_index_comments_round_trips():
    messages = [(MQMD(msg_type=i), bytes([i]) * i) for i in range(1, 6)]
    buf = io.BytesIO()
    write_dump(buf, messages, with_index=False, created="x")
    assert b"* Index" not in buf.getvalue()
    assert [(mqmd_of(m), m.payload) for m in parse(buf.getvalue())] == messages


def _every_field_set(version: int, **kw) -> MQMD:
    """A descriptor none of whose dumped fields has its default: text with a NUL (written up to it)
    and latin-1 letters, short and long ids."""
    base = dict(version=version, report=3, msg_type=100001, expiry=600, feedback=7, encoding=785, ccsid=1148,
                format="MQHRF2\0x", priority=9, persistence=0, msg_id=b"\x01\x02\x03", correl_id=bytes(range(24)),
                backout_count=4, reply_to_q="réponse".ljust(48), reply_to_qmgr="QM\xe9".ljust(48),
                user_identifier="user\0tail", accounting_token=bytes(range(200, 232)),
                appl_identity_data=b"\x00\xff" * 16, put_appl_type=28, put_appl_name="writer".ljust(28),
                put_date="20261125", put_time="05010203", appl_origin_data=b"\x7f\x80ab",
                group_id=bytes(range(50, 74)), msg_seq_number=12, offset=4096, msg_flags=0x18,
                original_length=70)
    base.update(kw)
    return MQMD(**base)


def _varied_messages():
    """Messages a write's fast formatting must write as ``format_message`` does: no descriptor,
    every field set (version 1 and 2, and 1 with version-2 fields it does not write), ids random and
    seeded, an unhashable field (the lines then made whole), runs alike but for their ids, payloads
    empty, short, a multiple of the line widths, long."""
    import random
    from cmi_datasource.cmi.emit import IdSource
    rng, seeded = random.Random(30), IdSource("fast-path")
    payloads = [b"", b"\x00", bytes(range(256)) * 3, bytes(400), rng.randbytes(100_003), rng.randbytes(37)]
    messages = [(None, p) for p in payloads]
    messages += [(_every_field_set(2), p) for p in payloads]
    messages += [(_every_field_set(1), b"v1"), (_every_field_set(1, msg_seq_number=1, offset=0), b""),
                 (_every_field_set(3), b"v3"), (MQMD(), b"defaults"), (MQMD(version=2), b"")]
    messages.append((_every_field_set(2, accounting_token=bytearray(32), msg_id=bytearray(b"id")), b"unhashable"))
    for i in range(40):  # a commit's runs: header and subordinate kinds, each message its own ids
        ids = (seeded.take(24), seeded.take(24)) if i % 2 else (rng.randbytes(24), rng.randbytes(24))
        kind = _descriptor_v2(msg_type=100000 + i % 3, msg_id=ids[0], correl_id=ids[1])
        messages.append((kind, rng.randbytes(rng.choice((0, 1, 25, 600, 5000)))))
    return messages


@pytest.mark.parametrize("work_threads, group_bytes", [(1, 512 << 10), (2, 700)])
@pytest.mark.parametrize("with_index", [True, False])
@pytest.mark.parametrize("width", [1, 16, 25, 300])
def test_write_dump_writes_what_format_message_writes(monkeypatch, work_threads, group_bytes, with_index, width):
    """write_dump formats a group of messages at once (``x_records``, the A lines from a template
    of each run of descriptors alike but for their ids): byte for byte the records format_message,
    the plain formatter, writes one at a time, whatever the group size, threads and cache size."""
    from cmi_datasource import threads
    from cmi_datasource.transports.mq import dmpmqmsg
    monkeypatch.setattr(threads, "WORK_THREADS", work_threads)
    monkeypatch.setattr(dmpmqmsg, "FORMAT_GROUP_BYTES", group_bytes)
    monkeypatch.setattr(dmpmqmsg, "_REPEATED_LINES_LIMIT", 2)  # emptied again and again
    messages = _varied_messages()
    buf = io.BytesIO()
    assert write_dump(buf, messages, created="x", data_width=width, with_index=with_index) == len(messages)
    expected = dmpmqmsg.dump_header(created="x") + b"".join(
        format_message(d, p, i if with_index else None, width) for i, (d, p) in enumerate(messages, start=1))
    assert buf.getvalue() == expected
    assert [m.payload for m in parse(buf.getvalue())] == [p for _, p in messages]


def test_write_dump_reuses_a_group_text_buffer_only_once_it_is_written(monkeypatch):
    """Into a file of the standard library, a group's text buffer serves a later group once the
    file has taken its bytes: with a file slow to take them and many groups finishing on two
    threads, the dump is still what format_message writes, and buffers were reused. Into any
    other stream (which may keep what it is given), every group has a buffer of its own."""
    import time

    from cmi_datasource import threads
    from cmi_datasource.transports.mq import dmpmqmsg
    monkeypatch.setattr(threads, "WORK_THREADS", 2)
    monkeypatch.setattr(dmpmqmsg, "FORMAT_GROUP_BYTES", 700)
    buffers, take = [], threads.SpareBuffers.take

    def recorded(self, size):
        taken = take(self, size)
        buffers.append(taken.base)
        return taken

    monkeypatch.setattr(threads.SpareBuffers, "take", recorded)

    class SlowFile(io.BytesIO):
        def write(self, piece):
            time.sleep(0.002)  # the next groups are formatted meanwhile
            return super().write(piece)

    class Stream:
        def __init__(self):
            self.pieces = []

        def write(self, piece):
            self.pieces.append(piece)
            return len(piece)

    messages = _varied_messages() * 6
    expected = dmpmqmsg.dump_header(created="x") + b"".join(
        format_message(d, p, i) for i, (d, p) in enumerate(messages, start=1))
    slow = SlowFile()
    assert write_dump(slow, messages, created="x") == len(messages)
    assert slow.getvalue() == expected
    groups = len(buffers)
    assert groups > 50 and len({id(b) for b in buffers}) < groups / 2
    stream = Stream()
    write_dump(stream, messages, created="x")
    assert b"".join(bytes(p) for p in stream.pieces) == expected
    assert len(buffers) == groups  # no buffer taken for a stream that may keep what it is given


# ---------------------------------------------------------------------------------------------
# Re-reading chosen spans


def test_read_spans_rereads_chosen_spans(tmp_path):
    messages = [(MQMD(msg_type=8, correl_id=bytes([i]) * 24), bytes([i]) * (10 * i + 1))
                for i in range(5)]
    messages[2] = (None, b"middle")
    buf = io.BytesIO()
    write_dump(buf, messages, created="x")
    path = write(tmp_path, buf.getvalue())
    originals = list(read_dump(path))
    chosen = [originals[3], originals[0], originals[2]]
    again = list(read_spans(parse_dump, [m.span for m in chosen]))
    assert again == chosen
    assert all(isinstance(m, PhysicalMessage) for m in again)
    # Spans are contiguous pieces of the file that hold exactly that message.
    data = buf.getvalue()
    for m in originals:
        assert data[m.file_offset:m.file_end].startswith((b"A ", b"N"))
        assert m.file_end <= len(data)
    assert all(a.file_end <= b.file_offset for a, b in zip(originals, originals[1:]))


def test_read_spans_crlf(tmp_path):
    data = (HEADER + b"A MST 1\nX 41\n\nA MST 2\nS \"B\"\nT c\n\nN\nX 44\n\n").replace(b"\n", b"\r\n")
    path = write(tmp_path, data)
    originals = list(read_dump(path))
    again = list(read_spans(parse_dump, [m.span for m in originals[::-1]]))
    assert again == originals[::-1]
    assert originals[1].payload == b"Bc\n"


def test_read_spans_span_holding_two_messages_is_an_error(tmp_path):
    buf = io.BytesIO()
    write_dump(buf, [(MQMD(), b"a"), (MQMD(), b"b")], created="x")
    path = write(tmp_path, buf.getvalue())
    first, second = read_dump(path)
    with pytest.raises(CmiFormatError, match="expected one message"):
        list(read_spans(parse_dump, [(path, 0, first.file_offset, second.file_end)]))


# ---------------------------------------------------------------------------------------------
# Random dumps against a plain line-by-line reading of docs/spec/mq.md#dmpmqmsg-text-dumps


def _random_dump(rng):
    """(dump bytes, [(msg_type or None, payload, offset of the first A/N line)])."""
    crlf = rng.random() < 0.3
    out = bytearray(HEADER)
    expected = []
    for i in range(rng.randint(1, 6)):
        if rng.random() < 0.5:
            out += b"* Index %d\n" % (i + 1)
        start = len(out)
        msg_type = None if rng.random() < 0.2 else rng.randint(1, 200000)
        out += b"N\n" if msg_type is None else b"A MST %d\nA CCS 1208\n" % msg_type
        payload = bytearray()
        for _ in range(rng.randint(1, 5)):
            kind = rng.choice("XXXXST")
            if kind == "X":
                width = rng.choice([1, 2, 7, 25, 25, 25, 40])
                data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 3 * width)))
                pieces = [data[j:j + width] for j in range(0, len(data), width)] or [b""]
                ascii_column = rng.random() < 0.3
                for piece in pieces:
                    line = b"X " + piece.hex().upper().encode()
                    if ascii_column and piece:  # dmpmqmsg writes a bare "X " for an empty message
                        shown = bytes(c if 32 <= c < 127 else 46 for c in piece)
                        line += b" " * (2 * (width + 1 - len(piece))) + b"<" + shown + b">"
                    out += line + b"\n"
                payload += data
            elif kind == "S":
                text = bytes(rng.choice(b'ab ~"xyz') for _ in range(rng.randint(0, 20)))
                escaped = text.replace(b"~", b"~~").replace(b'"', b'~"')
                out += b'S "' + escaped + b'"\n'
                payload += text
            else:
                text = bytes(rng.choice(b"abc <>XS*") for _ in range(rng.randint(0, 20)))
                out += b"T " + text + b"\n"
                payload += text + b"\n"
            if rng.random() < 0.15:
                out += b"* comment inside the data\n"
        if rng.random() < 0.7:
            out += b"\n"
        expected.append((msg_type, bytes(payload), start))
    data = bytes(out)
    if crlf:
        shift = []
        for msg_type, payload, start in expected:
            shift.append((msg_type, payload, start + data[:start].count(b"\n")))
        return data.replace(b"\n", b"\r\n"), shift
    return data, expected


def test_random_dumps_match_the_format_rules(tmp_path):
    import random
    rng = random.Random(20240601)
    for case in range(300):
        data, expected = _random_dump(rng)
        msgs = parse(data)
        got = [(mqmd_of(m).msg_type if mqmd_of(m) else None, m.payload, m.file_offset) for m in msgs]
        assert got == expected, case
        assert [m.index for m in msgs] == list(range(len(expected)))
        if case % 5 == 0:  # read in chunks as small as a line or as large as the file
            path = write(tmp_path, data, f"chunks{case}.dmp")
            chunk = rng.choice([7, 50, 333, len(data)])
            assert [(m.payload, mqmd_of(m), m.file_offset, m.file_end) for m in read_dump(path, chunk)] == \
                [(m.payload, mqmd_of(m), m.file_offset, m.file_end) for m in msgs], case
        if case % 10 == 0:
            path = write(tmp_path, data, f"case{case}.dmp")
            spans = [(path, m.index, m.file_offset, m.file_end) for m in msgs]
            again = list(read_spans(parse_dump, spans[::-1]))
            assert [(m.payload, mqmd_of(m)) for m in again] == [(m.payload, mqmd_of(m)) for m in msgs[::-1]]


def test_an_attribute_number_too_large_for_its_four_bytes_is_a_damaged_message(tmp_path):
    """Found by fuzzing: A MST 10^28 was accepted and broke the messages view later."""
    import os

    from cmi_datasource import Capture
    from cmi_datasource.transports.mq.errors import DumpSyntaxError

    sample = os.path.join(os.path.dirname(__file__), "..", "..", "sample_queues", "mixed_types.dmp")
    text = open(sample, "rb").read()
    at = text.index(b"A MST ")
    line_end = text.index(b"\n", at)
    path = tmp_path / "big.dmp"
    path.write_bytes(text[:at] + b"A MST 10000000000000000000000000000" + text[line_end:])
    capture = Capture.open(str(path))
    [damaged] = [r for r in read(capture, view="messages").to_pylist() if r["problem"]]
    assert "does not fit the field's 4 bytes" in damaged["problem"] and damaged["index"] == 1
    with pytest.raises(DumpSyntaxError, match="does not fit") as e:
        read(capture)
    assert e.value.offset == at
