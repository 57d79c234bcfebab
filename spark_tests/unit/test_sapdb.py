"""SAP DB / MaxDB SQL packets (docs/spec/sapdb.md): RTE streams and pcaps -> the ``sapdb`` view, one row per part.

Packets are written from docs/spec/sapdb.md with struct (``sapdb_packets.py``), not with the package's own
tables; its two examples (docs/spec/sapdb.md#examples) are checked field by field, down to their segment lengths."""
from __future__ import annotations

import socket
import struct
import threading

import pytest

from cmi_datasource import Capture, read, transports
from cmi_datasource.errors import CmiOptionError
from cmi_datasource.transports.sapdb.codes import PART_KINDS
from cmi_datasource.transports.sapdb.packet import SegmentSpec, PartSpec, build_packet
from cmi_datasource.transports.sapdb.table import cursor_command, sql_parts_table
from cmi_datasource.transports.sapdb.values import FIXED, FLOAT, FieldPlan

from live import free_port
from sapdb_packets import (EXAMPLE_1_REPLY, EXAMPLE_1_REQUEST, EXAMPLE_1_SQL, EXAMPLE_2_EXECUTE, EXAMPLE_2_PARSE,
                           EXAMPLE_2_PARSE_REPLY, EXAMPLE_2_PARSE_REPLY_NAMED, EXAMPLE_2_REPLY, EXAMPLE_2_SHORTINFO,
                           FULL, NORMAL, PARSE_ID, PART, column_names, command_segment, i4, packet, param_info, part,
                           return_segment, rte)
from tcp_frames import Conversation, write_pcap

REQUEST, REPLY = 63, 64


def stream_file(tmp_path, *frames, name="capture.rte"):
    path = tmp_path / name
    path.write_bytes(b"".join(frames))
    return str(path)


def rows_of(path, **options):
    return sql_parts_table(path, options).to_pylist()


def segment_length(sql_packet: bytes, swap: int = FULL) -> int:
    return struct.unpack("<i" if swap == FULL else ">i", sql_packet[32:36])[0]


def test_seed_example_1_a_dbs_command_and_its_error(tmp_path):
    assert (segment_length(EXAMPLE_1_REQUEST), segment_length(EXAMPLE_1_REPLY)) == (120, 88)  # as the seed says
    path = stream_file(tmp_path, rte(REQUEST, EXAMPLE_1_REQUEST), rte(REPLY, EXAMPLE_1_REPLY))
    assert transports.detect_format(path).name == "sapdb"
    request, reply = rows_of(path)
    assert request["packet"] == 1 and request["direction"] == "request" and request["offset"] == 0
    assert (request["mess_code"], request["swap"], request["appl_version"], request["application"]) == (
        "ascii", "full_swapped", "70205", "XCI")
    assert (request["segment"], request["segment_kind"], request["mess_type"], request["sqlmode"],
            request["producer"], request["with_info"]) == (1, "cmd", "dbs", "session_sqlmode", "user_cmd", True)
    assert (request["part"], request["part_kind"], request["arg_count"]) == (1, "command", 1)
    assert request["text"] == EXAMPLE_1_SQL.decode() and request["buf"] == EXAMPLE_1_SQL
    assert request["returncode"] is None and request["problem"] is None
    assert reply["packet"] == 2 and reply["direction"] == "reply" and reply["offset"] == 24 + len(EXAMPLE_1_REQUEST)
    assert (reply["segment_kind"], reply["returncode"], reply["sqlstate"], reply["errorpos"],
            reply["function_code"]) == ("return", -3014, "42000", 37, "select")
    assert (reply["part_kind"], reply["text"]) == ("errortext", "Invalid end of SQL statement")
    assert reply["mess_type"] is None and reply["values"] is None


def test_seed_example_2_2_an_execute_decoded_through_its_parse(tmp_path):
    assert (segment_length(EXAMPLE_2_EXECUTE), segment_length(EXAMPLE_2_REPLY)) == (104, 104)
    path = stream_file(tmp_path, rte(REQUEST, EXAMPLE_2_PARSE), rte(REPLY, EXAMPLE_2_PARSE_REPLY),
                       rte(REQUEST, EXAMPLE_2_EXECUTE), rte(REPLY, EXAMPLE_2_REPLY))
    rows = rows_of(path)
    parse_reply = [r for r in rows if r["packet"] == 2]
    assert [r["part_kind"] for r in parse_reply] == ["parsid", "shortinfo"]
    assert parse_reply[0]["function_code"] == "select_into" and parse_reply[1]["arg_count"] == 3
    execute = [r for r in rows if r["packet"] == 3]
    assert [(r["mess_type"], r["part_kind"]) for r in execute] == [("execute", "parsid"), ("execute", "data")]
    assert execute[0]["buf"] == PARSE_ID and execute[0]["buf"].hex() == "00000019000006013c000000"
    assert execute[1]["values"] == ["keyval1 "]  # the input :KEYC, its blank defined byte dropped
    count, data = [r for r in rows if r["packet"] == 4]
    assert (count["part_kind"], count["result_count"]) == ("resultcount", 1)
    assert data["buf"].hex() == "00c447110000000020303031343339343434"[:34]
    assert data["values"] == ["4711", "00143944"]  # 0.4711 x 10^4, then the TIME as the kernel sent it


def test_an_execute_whose_parse_was_not_captured_keeps_its_bytes(tmp_path):
    path = stream_file(tmp_path, rte(REQUEST, EXAMPLE_2_EXECUTE), rte(REPLY, EXAMPLE_2_REPLY))
    data_rows = [r for r in rows_of(path) if r["part_kind"] == "data"]
    assert [r["values"] for r in data_rows] == [None, None]
    assert data_rows[1]["buf"] == bytes.fromhex("00C44711 00000000 20303031 34333934 34")


@pytest.mark.parametrize("swap", [NORMAL, FULL, PART])
def test_every_swap_kind_reads_alike(tmp_path, swap):
    shortinfo = param_info(1, 0, 10, 7, 1, swap=swap) + param_info(1, 2, 3, 4, 8, swap=swap)
    reply = packet([return_segment([part(12, bytes.fromhex("00C3123000 0000"), swap=swap),
                                    part(14, shortinfo, swap=swap, arg_count=2),
                                    part(5, bytes.fromhex("00C3123000 0000") + b" abc", swap=swap)],
                                   returncode=-100, errorpos=70000, function_code=1004, swap=swap)], swap=swap)
    request = packet([command_segment([part(3, b"SELECT * FROM T", swap=swap)], swap=swap)], swap=swap)
    rows = rows_of(stream_file(tmp_path, rte(REQUEST, request), rte(REPLY, reply)))
    assert {r["swap"] for r in rows} == {{1: "normal", 2: "full_swapped", 3: "part_swapped"}[swap]}
    count, _, data = [r for r in rows if r["direction"] == "reply"]
    assert (count["returncode"], count["errorpos"], count["function_code"]) == (-100, 70000, "mselect")
    assert count["result_count"] == 123 and data["values"] == ["123", "abc"]
    assert rows[0]["text"] == "SELECT * FROM T"


def test_part_swapped_integers_have_their_halves_exchanged():
    assert i4(0x01020304, PART) == bytes.fromhex("03040102")
    # The package's builder agrees with the spec's byte order for every swap kind.
    for swap in (NORMAL, FULL, PART):
        built = build_packet([SegmentSpec({"mess_type": 2, "with_info": True}, [PartSpec(3, EXAMPLE_1_SQL)])],
                             swap=swap, varpart_size=0)
        spec = packet([command_segment([part(3, EXAMPLE_1_SQL, swap=swap, size=len(EXAMPLE_1_SQL))], swap=swap)],
                      swap=swap)
        assert built[32:] == spec[32:] and built[:12] == spec[:12]


@pytest.mark.parametrize("kind,name,variant", [(1, "cmd", "command"), (2, "return", "return"),
                                               (3, "proccall", "command"), (4, "procreply", "return")])
def test_every_segment_kind(tmp_path, kind, name, variant):
    if variant == "command":
        segment = command_segment([part(3, b"CALL P")], mess_type=13, kind=kind, mass_cmd=True, sqlmode=5)
    else:
        segment = return_segment([part(6, b"oops")], returncode=100, sqlstate=b"02000", kind=kind)
    [row] = rows_of(stream_file(tmp_path, rte(REQUEST if variant == "command" else REPLY, packet([segment]))))
    assert row["segment_kind"] == name
    if variant == "command":
        assert ((row["mess_type"], row["sqlmode"], row["mass_cmd"], row["returncode"])
                == ("execute", "oracle", True, None))
    else:
        assert (row["returncode"], row["sqlstate"], row["mess_type"]) == (100, "02000", None)


def test_every_part_kind_is_named_and_unknown_kinds_are_kept_raw(tmp_path):
    kinds = list(range(1, 36)) + [99, 200]
    bufs = {kind: bytes([kind]) * (kind % 11) for kind in kinds}
    bufs.update({2: b"\x01A", 5: _field("00 C1 10 00 00 00 00"), 12: _field("00 C2 12 00 00 00 00"),
                 14: param_info(1, 0, 10, 7, 1)})
    parts = [part(kind, bufs[kind]) for kind in kinds]
    rows = rows_of(stream_file(tmp_path, rte(REPLY, packet([return_segment(parts)]))))
    assert [r["part_kind"] for r in rows] == [PART_KINDS.get(k, str(k)) for k in kinds]
    assert [r["buf"] for r in rows] == [bufs[k] for k in kinds]
    assert rows[2]["part_kind"] == "command" and rows[13]["part_kind"] == "shortinfo"
    assert rows[4]["values"] == ["1"] and rows[11]["result_count"] == 12
    assert rows[1]["columns"] == rows[4]["columns"] == ["A"]  # the columnnames part names the data's one column
    assert rows[-2]["part_kind"] == "99" and rows[-1]["part_kind"] == "200"
    assert all(r["problem"] is None for r in rows)


def test_a_segment_with_no_parts_still_has_its_row(tmp_path):
    [row] = rows_of(stream_file(tmp_path, rte(REPLY, packet([return_segment([], function_code=54)]))))
    assert (row["segment"], row["function_code"], row["part"], row["part_kind"]) == (1, "commit", None, None)


def _field(hex_text):
    return bytes.fromhex(hex_text)


VALUES = [  # (data type, length, frac, field bytes with defined byte) -> text
    ((0, 10, 0), "00 C4 47 11 00 00 00", "4711"),
    ((0, 10, 0), "00 3C 52 89 00 00 00", "-4711"),
    ((0, 10, 0), "00 3F 90 00 00 00 00", "-1"),
    ((0, 10, 0), "00 80 00 00 00 00 00", "0"),
    ((0, 10, 2), "00 C2 12 50 00 00 00", "12.50"),
    ((0, 10, 2), "00 3E 87 50 00 00 00", "-12.50"),
    ((0, 10, 2), "00 80 00 00 00 00 00", "0.00"),
    ((0, 10, 2), "00 C0 50 00 00 00 00", "0.50"),
    ((1, 10, 0), "00 BE 12 30 00 00 00", "0.00123"),
    ((1, 10, 0), "00 C9 25 00 00 00 00", "250000000"),
    ((1, 10, 0), "00 3D 74 50 00 00 00", "-255"),
    ((29, 5, 0), "00 C5 32 76 70", "32767"),
    ((30, 10, 0), "00 36 78 52 51 63 52", "-2147483648"),
    ((2, 6, 0), "20 6B 65 79 20 20 E9", "key  é"),
    ((4, 3, 0), "00 DE AD 00", "DEAD00"),
    ((24, 2, 0), "01 00 41 20 AC", "A€"),
    ((10, 8, 0), "20 32 30 32 36 31 31 32 33", "20261123"),
    ((11, 8, 0), "20 30 30 31 34 33 39 34 34", "00143944"),
    ((13, 20, 0), "20 " + " ".join(f"{ord(c):02X}" for c in "20261123143944123456"), "20261123143944123456"),
    ((23, 1, 0), "00 01", "true"),
    ((23, 1, 0), "00 00", "false"),
    ((0, 10, 0), "FF 00 00 00 00 00 00", None),
    ((2, 6, 0), "FF 20 20 20 20 20 20", None),
    ((0, 10, 0), "FE 00 00 00 00 00 00", None),
]


def test_values_of_every_type_in_one_data_part(tmp_path):
    fields = [_field(h) for _, h, _ in VALUES]
    positions, at = [], 1
    for f in fields:
        positions.append(at)
        at += len(f)
    shortinfo = b"".join(param_info(1, t, length, len(f), pos, frac=frac)
                         for ((t, length, frac), _, _), f, pos in zip(VALUES, fields, positions))
    reply = packet([return_segment([part(14, shortinfo, arg_count=len(VALUES)), part(5, b"".join(fields))])],
                   mess_code=20)  # a unicode (UCS-2 big-endian) session
    [_, data] = rows_of(stream_file(tmp_path, rte(REPLY, reply)))
    assert data["values"] == [text for _, _, text in VALUES]
    assert data["problem"] is None


def test_unicode_sessions_read_texts_and_dates_as_ucs2_in_their_order(tmp_path):
    for mess_code, codec in ((19, "utf-16-le"), (20, "utf-16-be")):
        sql = "SELECT 'Grüße' FROM DUAL".encode(codec)
        date = b"\x01" + "20261123".encode(codec)
        shortinfo = param_info(1, 10, 8, len(date), 1, swap=NORMAL)
        reply = packet([return_segment([part(14, shortinfo, swap=NORMAL), part(5, date, swap=NORMAL)], swap=NORMAL)],
                       mess_code=mess_code, swap=NORMAL)
        request = packet([command_segment([part(3, sql, swap=NORMAL)], swap=NORMAL)], mess_code=mess_code, swap=NORMAL)
        rows = rows_of(stream_file(tmp_path, rte(REQUEST, request), rte(REPLY, reply), name=f"u{mess_code}.rte"))
        assert rows[0]["text"] == "SELECT 'Grüße' FROM DUAL"
        assert rows[-1]["values"] == ["20261123"]


def test_a_mass_fetch_data_part_holds_arg_count_records(tmp_path):
    shortinfo = param_info(1, 0, 5, 4, 1) + param_info(1, 2, 2, 3, 5)
    records = (_field("00 C1 10 00") + b" ab" + _field("00 C2 20 00") + _field("FF 00 00")
               + _field("00 C3 30 00") + b" cd")
    reply = packet([return_segment([part(14, shortinfo, arg_count=2), part(5, records, arg_count=3)],
                                   function_code=1208)])
    rows = rows_of(stream_file(tmp_path, rte(REPLY, reply)))
    assert rows[-1]["values"] == ["1", "ab", "20", None, "300", "cd"]
    assert rows[-1]["function_code"] == "mfetch_next"


def test_a_reply_with_its_own_shortinfo_uses_it(tmp_path):
    shortinfo = param_info(1, 0, 10, 7, 1)
    reply = packet([return_segment([part(14, shortinfo), part(5, _field("00 C2 42 00 00 00 00"))])])
    path = stream_file(tmp_path, rte(REQUEST, EXAMPLE_2_PARSE), rte(REPLY, EXAMPLE_2_PARSE_REPLY),
                       rte(REQUEST, EXAMPLE_2_EXECUTE), rte(REPLY, reply))
    assert rows_of(path)[-1]["values"] == ["42"]


def test_column_names_of_a_parse_name_the_values_of_its_executes(tmp_path):
    path = stream_file(tmp_path, rte(REQUEST, EXAMPLE_2_PARSE), rte(REPLY, EXAMPLE_2_PARSE_REPLY_NAMED),
                       rte(REQUEST, EXAMPLE_2_EXECUTE), rte(REPLY, EXAMPLE_2_REPLY))
    rows = rows_of(path)
    [names] = [r for r in rows if r["part_kind"] == "columnnames"]
    assert (names["arg_count"], names["buf"]) == (2, b"\x04NUMB\x04TIME")  # the raw part stays in buf
    assert (names["columns"], names["values"], names["problem"]) == (["NUMB", "TIME"], None, None)
    request_data, reply_data = [r for r in rows if r["part_kind"] == "data"]
    assert (request_data["values"], request_data["columns"]) == (["keyval1 "], None)  # the kernel names no inputs
    assert (reply_data["values"], reply_data["columns"]) == (["4711", "00143944"], ["NUMB", "TIME"])
    assert all(r["columns"] is None for r in rows if r["part_kind"] not in ("data", "columnnames"))


def test_one_name_per_entry_names_inputs_and_every_record(tmp_path):
    shortinfo = param_info(0, 0, 5, 4, 1) + param_info(0, 2, 2, 3, 5)
    parse_id = bytes(range(12))
    parse_reply = packet([return_segment([part(10, parse_id), part(14, shortinfo, arg_count=2),
                                          part(2, column_names(b"ORDERNO", b"ITEM"), arg_count=2)],
                                         function_code=1003)])
    records = _field("00 C1 10 00") + b" ab" + _field("00 C2 20 00") + _field("FF 00 00")
    execute = packet([command_segment([part(10, parse_id), part(5, records, arg_count=2)], mess_type=13,
                                      mass_cmd=True)])
    rows = rows_of(stream_file(tmp_path, rte(REQUEST, EXAMPLE_2_PARSE), rte(REPLY, parse_reply),
                               rte(REQUEST, execute)))
    assert rows[-1]["values"] == ["1", "ab", "20", None]
    assert rows[-1]["columns"] == ["ORDERNO", "ITEM", "ORDERNO", "ITEM"]  # one name per value, record after record


@pytest.mark.parametrize("mess_code, codec", [(19, "utf-16-le"), (20, "utf-16-be")])
def test_unicode_sessions_send_column_names_in_ucs2(tmp_path, mess_code, codec):
    shortinfo = param_info(1, 0, 5, 4, 1, swap=NORMAL)
    names = column_names("Größe".encode(codec))
    reply = packet([return_segment([part(14, shortinfo, swap=NORMAL), part(2, names, swap=NORMAL),
                                    part(5, _field("00 C1 70 00"), swap=NORMAL)], swap=NORMAL)],
                   mess_code=mess_code, swap=NORMAL)
    rows = rows_of(stream_file(tmp_path, rte(REPLY, reply)))
    assert rows[1]["columns"] == rows[2]["columns"] == ["Größe"] and rows[2]["values"] == ["7"]


def test_a_describe_reply_names_the_statement_of_its_parse_id(tmp_path):
    describe = packet([command_segment([part(3, b"DESCRIBE"), part(10, PARSE_ID)])])
    described = packet([return_segment([part(14, EXAMPLE_2_SHORTINFO, arg_count=3),
                                        part(2, column_names(b"KEYC", b"NUMB", b"TIME"), arg_count=3)],
                                       function_code=224)])
    path = stream_file(tmp_path, rte(REQUEST, EXAMPLE_2_PARSE), rte(REPLY, EXAMPLE_2_PARSE_REPLY),
                       rte(REQUEST, describe), rte(REPLY, described), rte(REQUEST, EXAMPLE_2_EXECUTE),
                       rte(REPLY, EXAMPLE_2_REPLY))
    request_data, reply_data = [r for r in rows_of(path) if r["part_kind"] == "data"]
    assert request_data["columns"] == ["KEYC"] and reply_data["columns"] == ["NUMB", "TIME"]
    assert reply_data["values"] == ["4711", "00143944"]


@pytest.mark.parametrize("arg_count, buf, columns, problem", [
    (3, column_names(b"NUMB", b"TIME"), ["NUMB", "TIME"], "columnnames declares 3 names; its 10 bytes hold 2"),
    (2, b"\x04NUMB\x09TIME", ["NUMB"], "columnnames name 2 declares 9 bytes; 4 remain in the part"),
    (2, column_names(b"NUMB", b"TIME") + b"\0\0", ["NUMB", "TIME"], "2 bytes follow the last"),
    (1, column_names(b"NUMB"), ["NUMB"], "columnnames holds 1 names for a shortinfo of 3 entries (2 outputs)"),
    (32767, b"\x01A\x01B\x01C", ["A", "B", "C"], "columnnames declares 32767 names; its 6 bytes hold 3"),
    (0, b"", [], "columnnames holds 0 names for a shortinfo of 3 entries (2 outputs)"),
])
def test_damaged_column_names_are_a_problem_and_name_nothing(tmp_path, arg_count, buf, columns, problem):
    parse_reply = packet([return_segment([part(10, PARSE_ID), part(14, EXAMPLE_2_SHORTINFO, arg_count=3),
                                          part(2, buf, arg_count=arg_count)], function_code=244)])
    rows = rows_of(stream_file(tmp_path, rte(REQUEST, EXAMPLE_2_PARSE), rte(REPLY, parse_reply),
                               rte(REQUEST, EXAMPLE_2_EXECUTE), rte(REPLY, EXAMPLE_2_REPLY)))
    [names] = [r for r in rows if r["part_kind"] == "columnnames"]
    assert names["buf"] == buf and names["columns"] == (columns or None)
    assert problem in names["problem"]
    reply_data = rows[-1]
    assert reply_data["values"] == ["4711", "00143944"] and reply_data["problem"] is None  # the data is read still
    assert reply_data["columns"] is None  # a damaged part names nothing


SELECT_INFO = param_info(1, 0, 5, 4, 1) + param_info(1, 2, 3, 4, 5)  # A FIXED(5), B CHAR(3)
SELECT_ROWS = _field("00 C1 10 00") + b" ab " + _field("00 C2 20 00") + b" cd "


def fetch(sql: bytes) -> bytes:
    return packet([command_segment([part(3, sql)], mass_cmd=True)])


def test_a_fetch_reads_its_rows_by_the_cursor_its_execute_opened(tmp_path):
    parse_id = bytes(range(12))
    parse = packet([command_segment([part(3, b"SELECT A, B FROM T")], mess_type=3)])
    parse_reply = packet([return_segment([part(10, parse_id), part(14, SELECT_INFO, arg_count=2),
                                          part(2, column_names(b"A", b"B"), arg_count=2)], function_code=4)])
    execute = packet([command_segment([part(10, parse_id), part(13, b"JDBC_CURSOR_1")], mess_type=13)])
    opened = packet([return_segment([part(12, _field("00 3F 90 00 00 00 00"))], function_code=4)])
    fetched = packet([return_segment([part(5, SELECT_ROWS, arg_count=2)], function_code=1208)])
    rows = rows_of(stream_file(tmp_path, rte(REQUEST, parse), rte(REPLY, parse_reply), rte(REQUEST, execute),
                               rte(REPLY, opened), rte(REQUEST, fetch(b'FETCH NEXT "JDBC_CURSOR_1" INTO ?, ?')),
                               rte(REPLY, fetched), rte(REQUEST, fetch(b'FETCH NEXT "JDBC_CURSOR_2" INTO ?, ?')),
                               rte(REPLY, fetched)))
    known, unknown = [r for r in rows if r["part_kind"] == "data"]
    assert (known["function_code"], known["values"]) == ("mfetch_next", ["1", "ab ", "20", "cd "])
    assert known["columns"] == ["A", "B", "A", "B"]
    assert (unknown["values"], unknown["columns"]) == (None, None)  # a cursor whose opening was not captured


def test_a_describe_of_a_cursor_names_its_fetches(tmp_path):
    select = packet([command_segment([part(3, b"SELECT A, B FROM T")])])
    opened = packet([return_segment([part(13, b"C1\0\0")], function_code=4)])  # the kernel's cursor name
    described = packet([return_segment([part(14, SELECT_INFO, arg_count=2), part(2, column_names(b"A", b"B"),
                                                                                 arg_count=2)], function_code=224)])
    fetched = packet([return_segment([part(5, SELECT_ROWS[:8], arg_count=1)], function_code=206)])
    rows = rows_of(stream_file(tmp_path, rte(REQUEST, select), rte(REPLY, opened),
                               rte(REQUEST, fetch(b'DESCRIBE "C1"')), rte(REPLY, described),
                               rte(REQUEST, fetch(b"fetch first c1 into ?, ?")),
                               rte(REPLY, fetched)))
    assert (rows[-1]["values"], rows[-1]["columns"]) == (["1", "ab "], ["A", "B"])


@pytest.mark.parametrize("sql, verb, cursor", [
    ('FETCH NEXT "JDBC_CURSOR_1" INTO ?, ?', "FETCH", "JDBC_CURSOR_1"),
    ("  fetch pos (3) c2 into :a", "FETCH", "C2"),
    ("FETCH ABSOLUTE -2 \"a\"\"b\" INTO ?", "FETCH", 'a"b'),
    ("FETCH RELATIVE 5 cur# INTO ?", "FETCH", "CUR#"),
    ("FETCH NEXT INTO ?", "FETCH", None),
    ("FETCH INTO ?", "FETCH", None),
    ("FETCH nextcursor INTO ?", "FETCH", "NEXTCURSOR"),
    ('DESCRIBE "C1"', "DESCRIBE", "C1"),
    ("DESCRIBE ", "DESCRIBE", None),
    ("SELECT * FROM FETCHES", None, None),
    ("FETCHES", None, None),
])
def test_the_cursor_a_fetch_or_describe_names(sql, verb, cursor):
    assert cursor_command(sql) == (verb, cursor)


def test_vdn_kernel_numbers_at_their_limits():
    plan = FieldPlan()
    cases = [("00 FF 99 99", FLOAT, 0, "9999" + "0" * 59), ("00 81 10", FLOAT, 0, "0." + "0" * 63 + "1"),
             ("00 C1 1A", FIXED, 0, None), ("00 40 00", FIXED, 0, None)]
    for hex_text, kind, frac, _ in cases:
        buf = _field(hex_text)
        plan.add(plan.add_buffer(buf), len(buf), kind, frac)
    text, status = plan.render()
    assert text.to_pylist()[:2] == [c[3] for c in cases[:2]]
    assert status.tolist() == [0, 0, 1, 2]
    assert text.to_pylist()[2:] == ["C11A", "4000"]  # kept as hex, their status says why


# -- bad input ------------------------------------------------------------------------------------

def test_a_part_past_its_segment_keeps_what_came_before(tmp_path):
    bad = packet([command_segment([part(3, b"SELECT 1"), part(5, b"xx", buf_len=500)])])
    rows = rows_of(stream_file(tmp_path, rte(REQUEST, bad), rte(REPLY, EXAMPLE_1_REPLY)))
    assert rows[0]["text"] == "SELECT 1" and rows[0]["problem"] is None
    assert "part 2 of segment 1 declares buf_len 500" in rows[1]["problem"] and rows[1]["packet"] == 1
    assert rows[2]["packet"] == 2 and rows[2]["returncode"] == -3014  # the next packet is read


def test_segment_counts_that_disagree_with_the_lengths(tmp_path):
    one = command_segment([part(3, b"SELECT 1")])
    too_many = packet([one], no_of_segm=2)
    too_few = packet([one, one], no_of_segm=1)
    parts_disagree = packet([command_segment([part(3, b"SELECT 1")], no_of_parts=3)])
    problems = [r["problem"] for r in rows_of(stream_file(tmp_path, rte(REQUEST, too_many), rte(REQUEST, too_few),
                                                           rte(REQUEST, parts_disagree)))]
    assert problems[0] is None and "no_of_segm is 2 but the varpart ends after 1 segments" in problems[1]
    assert problems[2] is None and "no_of_segm is 1 but 64 bytes of the varpart follow" in problems[3]
    assert problems[4] is None and "segment 1 declares 3 parts but ends after 1" in problems[5]


def test_a_truncated_rte_frame_is_reported_not_dropped(tmp_path):
    whole = rte(REQUEST, EXAMPLE_1_REQUEST)
    path = stream_file(tmp_path, rte(REPLY, EXAMPLE_1_REPLY), whole[:-10])
    rows = rows_of(path)
    assert rows[0]["returncode"] == -3014
    assert rows[1]["packet"] == 2 and rows[1]["offset"] == 24 + len(EXAMPLE_1_REPLY)
    assert f"declares {len(whole)} bytes; {len(whole) - 10} remain" in rows[1]["problem"]
    messages = read(Capture.open(path, use_index_cache=False), view="messages").to_pylist()
    assert [m["problem"] is not None for m in messages] == [False, True]


def test_garbage_and_impossible_lengths_end_the_stream_with_a_problem(tmp_path):
    frame = bytearray(rte(REQUEST, EXAMPLE_1_REQUEST))
    frame[0:4] = struct.pack("<i", 3)  # shorter than its own header
    rows = rows_of(stream_file(tmp_path, rte(REPLY, EXAMPLE_1_REPLY), bytes(frame)))
    assert "no RTE header at stream byte" in rows[-1]["problem"]
    junk = rows_of(stream_file(tmp_path, rte(REPLY, EXAMPLE_1_REPLY), b"\x00" * 7, name="junk.rte"))
    assert len(junk) == 2 and "no RTE header" in junk[1]["problem"]


def test_huge_declared_counts_allocate_nothing(tmp_path):
    header = bytearray(packet([command_segment([part(3, b"X")])]))
    header[22:24] = struct.pack("<h", 32767)  # no_of_segm
    shortinfo_claims = packet([return_segment([part(14, param_info(1, 0, 10, 7, 1), arg_count=30000),
                                               part(5, _field("00 C1 10 00 00 00 00"), arg_count=30000)])])
    rows = rows_of(stream_file(tmp_path, rte(REQUEST, bytes(header)), rte(REPLY, shortinfo_claims)))
    assert "no_of_segm is 32767" in rows[1]["problem"]
    shortinfo, data = rows[2], rows[3]
    assert "shortinfo declares 30000 entries; its 12 bytes hold 1" in shortinfo["problem"]
    assert "data part declares 30000 records of 7 bytes; its 7 bytes hold 1" in data["problem"]
    assert data["values"] == ["1"]  # the one record there is


def test_big_endian_rte_headers_and_packets_split_over_frames(tmp_path):
    body = EXAMPLE_1_REQUEST
    first, second = body[:50], body[50:]
    total = 24 + len(body)
    split = rte(REQUEST, first, big_endian=True, residual=1, total=total) + rte(REQUEST, second, big_endian=True,
                                                                                 total=total)
    path = stream_file(tmp_path, split, rte(REPLY, EXAMPLE_1_REPLY, big_endian=True))
    rows = rows_of(path)
    assert rows[0]["text"] == EXAMPLE_1_SQL.decode() and rows[1]["packet"] == 2 and rows[1]["returncode"] == -3014
    broken = stream_file(tmp_path, rte(REQUEST, first, residual=1, total=total), name="cut.rte")
    assert "announces 1 more frames; the stream ends" in rows_of(broken)[0]["problem"]


def test_connect_and_release_frames_have_a_row_of_their_own(tmp_path):
    connect = rte(61, b"\x00\x02" + b"\0" * 38)
    release = rte(66, b"")
    rows = rows_of(stream_file(tmp_path, connect, rte(REQUEST, EXAMPLE_1_REQUEST), release))
    assert [(r["packet"], r["rte_class"], r["part_kind"]) for r in rows] == [
        (1, "user_conn_request", None), (2, "user_data_request", "command"), (3, "user_release_request", None)]


def test_the_messages_view_shows_each_packet(tmp_path):
    path = stream_file(tmp_path, rte(REQUEST, EXAMPLE_1_REQUEST), rte(REPLY, EXAMPLE_1_REPLY))
    capture = Capture.open(path, use_index_cache=False)
    assert capture.attachments == []
    rows = read(capture, view="messages").to_pylist()
    assert [(r["transport"], r["direction"], r["sql"], r["msg_type"]) for r in rows] == [
        ("sapdb", "request", "dbs", None), ("sapdb", "reply", "return -3014", None)]
    assert rows[0]["payload"] == EXAMPLE_1_REQUEST


# -- pcaps --------------------------------------------------------------------------------------

CLIENT, SERVER = ("10.1.0.5", 41000), ("10.1.0.9", 7210)


def sapdb_conversation(client=CLIENT, server=SERVER, handshake=True, size=60):
    c = Conversation(client, server, handshake=handshake)
    for request, reply in ((EXAMPLE_2_PARSE, EXAMPLE_2_PARSE_REPLY), (EXAMPLE_2_EXECUTE, EXAMPLE_2_REPLY)):
        c.send(client, rte(REQUEST, request), size=size)
        c.send(server, rte(REPLY, reply), size=size)
    return c


def test_a_pcap_of_a_sapdb_connection(tmp_path):
    path = write_pcap(tmp_path / "sapdb.pcap", sapdb_conversation().frames)
    rows = rows_of(path)
    assert [r["packet"] for r in rows] == [1, 2, 2, 3, 3, 4, 4]
    assert {r["connection"] for r in rows} == {"10.1.0.5:41000 -> 10.1.0.9:7210"}
    assert [r["direction"] for r in rows] == ["request"] + ["reply"] * 2 + ["request"] * 2 + ["reply"] * 2
    assert rows[-1]["values"] == ["4711", "00143944"] and rows[-3]["values"] == ["keyval1 "]
    assert rows[0]["frame"] == 3 and rows[0]["offset"] > 24  # the frame after the handshake, where it lies
    assert [r["offset"] for r in rows] == sorted(r["offset"] for r in rows)


def test_another_port_by_its_opening_bytes_or_by_option(tmp_path):
    server = ("10.1.0.9", 7269)
    path = write_pcap(tmp_path / "port.pcap", sapdb_conversation(server=server).frames)
    assert rows_of(path)[-1]["values"] == ["4711", "00143944"]  # recognised by its RTE header
    # Captured after the first request began: nothing but the port says SAP DB (a reply opens the other side).
    c = sapdb_conversation(server=server, handshake=False)
    late = write_pcap(tmp_path / "late.pcap", c.frames[1:])
    assert rows_of(late) == []
    reported = rows_of(late, **{"sapdb.port": "7269"})
    assert {r["connection"] for r in reported} == {"10.1.0.5:41000 -> 10.1.0.9:7269"}
    assert "no RTE header at stream byte 0" in reported[0]["problem"]  # what was cut, said, not skipped
    replies = [r for r in reported if r["direction"] == "reply"]
    assert [r["part_kind"] for r in replies] == ["parsid", "shortinfo", "resultcount", "data"]  # the replies are read
    assert replies[-1]["values"] is None  # its execute was lost with the cut stream: no statement to read it by
    with pytest.raises(CmiOptionError, match="sapdb.port"):
        rows_of(late, **{"sapdb.port": "ten"})


def test_a_pcap_holding_mqtt_and_sapdb_gives_each_view_its_own(tmp_path):
    from test_mqtt_pcap import mqtt5_conversation
    from test_mqtt_stream import TABLE
    frames = mqtt5_conversation().frames + sapdb_conversation().frames
    path = write_pcap(tmp_path / "both.pcap", frames)
    capture = Capture.open(path, use_index_cache=False)
    assert read(capture).equals(TABLE)
    assert {r["connection"] for r in read(capture, view="messages").to_pylist()} == {"10.0.0.2:50123 -> 10.0.0.1:1883"}
    assert {r["connection"] for r in rows_of(path)} == {"10.1.0.5:41000 -> 10.1.0.9:7210"}


def test_a_real_tcp_conversation_captured_by_tcpdump(tmp_path, loopback_capture):
    """A kernel stand-in answers each request frame with the next reply over loopback; tcpdump captures it."""
    port = free_port()
    pcap, stop = loopback_capture(port)
    replies = [rte(REPLY, EXAMPLE_2_PARSE_REPLY), rte(REPLY, EXAMPLE_2_REPLY)]
    server = socket.create_server(("127.0.0.1", port))

    def kernel():
        connection, _ = server.accept()
        with connection:
            for reply in replies:
                header = connection.recv(24, socket.MSG_WAITALL)
                size = struct.unpack("<i", header[:4])[0]
                connection.recv(size - 24, socket.MSG_WAITALL)
                connection.sendall(reply)

    thread = threading.Thread(target=kernel)
    thread.start()
    with socket.create_connection(("127.0.0.1", port)) as client:
        for request in (EXAMPLE_2_PARSE, EXAMPLE_2_EXECUTE):
            client.sendall(rte(REQUEST, request))
            got = b""
            while len(got) < 24 or len(got) < struct.unpack("<i", got[:4])[0]:
                got += client.recv(65536)
    thread.join(10)
    server.close()
    stop()
    rows = rows_of(str(pcap), **{"sapdb.port": str(port)})
    assert [r["direction"] for r in rows if r["part"] == 1] == ["request", "reply", "request", "reply"]
    assert rows[-1]["values"] == ["4711", "00143944"] and rows[-1]["connection"].endswith(f":{port}")
    assert [r["values"] for r in rows if r["part_kind"] == "data"] == [["keyval1 "], ["4711", "00143944"]]


def test_a_number_that_is_no_number_is_kept_as_hex_and_named(tmp_path):
    shortinfo = param_info(1, 2, 2, 3, 1) + param_info(1, 0, 5, 4, 4)
    records = b" ok" + _field("00 C2 1F 00") + b" no" + _field("00 C1 50 00")
    reply = packet([return_segment([part(14, shortinfo, arg_count=2), part(5, records, arg_count=2)])])
    [_, data] = rows_of(stream_file(tmp_path, rte(REPLY, reply)))
    assert data["values"] == ["ok", "C21F00", "no", "5"]
    assert data["problem"] == "value 2 holds a nibble that is no decimal digit (kept as hex)"


# -- found by fuzzing and review -----------------------------------------------------------------

def test_result_counts_that_are_no_whole_int64_are_null_with_a_problem(tmp_path):
    frames = [rte(REPLY, packet([return_segment([part(12, _field(count))])]))
              for count in ("00 C0 50 00 00 00 00", "00 FF 10 00 00 00 00", "00", "00 C5")]
    rows = rows_of(stream_file(tmp_path, *frames))
    assert [r["result_count"] for r in rows] == [None] * 4
    assert "0.5 is no whole number" in rows[0]["problem"] and "is no whole number" in rows[1]["problem"]
    assert [r["problem"] for r in rows[2:]] == ["the result count is a number with no digits (kept as hex)"] * 2


def test_number_fields_too_short_for_digits_read_nothing_beyond_themselves(tmp_path):
    shortinfo = param_info(1, 0, 1, 1, 1) + param_info(1, 0, 1, 2, 2) + param_info(1, 2, 2, 3, 4)
    reply = packet([return_segment([part(14, shortinfo, arg_count=3), part(5, _field("00 00 C5 20 61 62"))])])
    [_, data] = rows_of(stream_file(tmp_path, rte(REPLY, reply)))
    assert data["values"] == ["", "C5", "ab"]  # neither number borrows the next field's bytes
    assert data["problem"] == ("value 1 is a number with no digits (kept as hex); "
                               "value 2 is a number with no digits (kept as hex)")


def test_overlapping_shortinfo_entries_are_refused_not_multiplied(tmp_path):
    count = 3000  # entries and records: 9M fields if taken at their word
    reply = packet([return_segment([part(14, param_info(1, 0, 1, 1, 1) * count, arg_count=count),
                                    part(5, b"\xff" * count, arg_count=count)])])
    [_, data] = rows_of(stream_file(tmp_path, rte(REPLY, reply)))
    assert data["values"] is None and "3000 fields overlap in a record of 1 bytes" in data["problem"]


def test_a_big_endian_sender_that_names_no_order(tmp_path):
    frame = bytearray(rte(REQUEST, EXAMPLE_1_REQUEST, big_endian=True))
    frame[18] = 0  # new_swap_type unset, as some drivers send it
    rows = rows_of(stream_file(tmp_path, bytes(frame), rte(REPLY, EXAMPLE_1_REPLY)))
    assert rows[0]["text"] == EXAMPLE_1_SQL.decode() and rows[1]["returncode"] == -3014


def test_texts_by_session_and_column_code(tmp_path):
    shortinfo = param_info(1, 2, 2, 3, 1) + param_info(1, 3, 3, 4, 4) + param_info(1, 24, 2, 4, 8)
    utf8 = packet([return_segment([part(14, shortinfo, arg_count=3),
                                   part(5, b" \xc3\xa9" + b" ABC" + b"\x01A\x00\x00")])], mess_code=22)
    ascii_session = packet([return_segment([part(14, shortinfo, arg_count=3),
                                            part(5, b" \xff\xfe" + b"\x40\xc1\xc2\xc3" + b"\x01\x00A\x00")])])
    rows = rows_of(stream_file(tmp_path, rte(REPLY, utf8), rte(REPLY, ascii_session)))
    # UTF-8; CHE sent in ASCII; UCS-2 in the packet's (little-endian) order, its 3 bytes ending in half a char
    assert rows[1]["values"] == ["é", "ABC", "A\ufffd"]
    assert rows[1]["problem"] == "value 3 ends in half a UCS-2 character (read as U+FFFD)"
    assert rows[3]["values"][:2] == ["\xff\xfe", "ABC"]  # Latin-1; CHE with the EBCDIC blank is cp500
    invalid = packet([return_segment([part(14, param_info(1, 2, 3, 4, 1)), part(5, b" \xc3(\xff")])], mess_code=22)
    assert rows_of(stream_file(tmp_path, rte(REPLY, invalid), name="bad-utf8.rte"))[1]["values"] == ["\ufffd(\ufffd"]


def test_packets_of_no_segments_and_data_with_no_outputs_keep_a_row(tmp_path):
    empty = packet([])
    no_outputs = packet([return_segment([part(14, param_info(0, 0, 10, 7, 1)),
                                         part(5, _field("00 C1 10 00 00 00 00"))])])
    rows = rows_of(stream_file(tmp_path, rte(REQUEST, empty), rte(REPLY, no_outputs)))
    assert (rows[0]["packet"], rows[0]["segment"], rows[0]["problem"]) == (1, None, None)
    assert rows[-1]["values"] is None and "names no outputs" in rows[-1]["problem"]


def test_a_broken_first_header_is_no_sapdb_file_unless_the_format_says_so(tmp_path):
    frame = bytearray(rte(REQUEST, EXAMPLE_1_REQUEST))
    frame[4] = 9  # no TCP protocol id
    path = stream_file(tmp_path, bytes(frame), rte(REPLY, EXAMPLE_1_REPLY))
    assert rows_of(path) == []
    [row] = rows_of(path, format="sapdb")
    assert row["packet"] == 1 and "no RTE header at stream byte 0" in row["problem"]


def test_a_pcap_whose_first_data_segment_was_lost(tmp_path):
    c = sapdb_conversation()
    frames = c.frames[:2] + c.frames[3:]  # the handshake, then the client's first segment is missing
    rows = rows_of(write_pcap(tmp_path / "lost.pcap", frames))
    gaps = [r for r in rows if r["problem"] and "were not captured" in r["problem"]]
    assert len(gaps) == 1 and gaps[0]["direction"] == "unknown"
    assert [r["part_kind"] for r in rows if r["direction"] == "reply"][:2] == ["parsid", "shortinfo"]
