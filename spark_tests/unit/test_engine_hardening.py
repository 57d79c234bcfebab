"""Untrusted counts, unreadable headers and text, files rewritten in place, writer encode errors."""
from __future__ import annotations

import datetime as dt
import os
import struct

import pyarrow as pa
import pytest

from cmi_datasource import Capture, read
from cmi_datasource.engine import index
from cmi_datasource.transports.mq.dmpmqmsg import write_dump
from cmi_datasource.engine.tables import messages_table
from cmi_datasource.engine.write import DatasetToWrite, FileToWrite, WriteOptions
from cmi_datasource.errors import CmiEncodeError, CmiFormatError, ValueConversionError
from cmi_datasource.transports.mq.envelope import unwrap
from cmi_datasource.transports.mq.headers import MQDLH
from cmi_datasource.transports.mq.message import mq_message
from cmi_datasource.transports.mq.mqmd import MQMD

from conftest import dump_messages as dump
from support import build_mq_messages, slices_of

ONE = pa.table({"X": [1.0, 2.0]})


def test_a_huge_count_is_reported_without_allocating_it(tmp_path):
    messages = build_mq_messages([DatasetToWrite(ONE, "LIB", "DS")])
    descriptor, _ = messages[-1]
    messages[-1] = (descriptor, struct.pack("<i", 2 ** 31 - 1))
    [row] = read(dump(tmp_path, messages), view="attachments").to_pylist()
    assert row["complete"] is False and row["expected_messages"] == 2 ** 31 - 1
    assert "missing [4, 5, 6" in row["problem"]


def test_an_unreadable_header_is_listed_and_the_rest_still_reads(tmp_path):
    messages = build_mq_messages([DatasetToWrite(ONE, "LIB", "DS")])
    stray = (MQMD(msg_type=100000, correl_id=b"\x01" * 24), b"not a CMI header")
    cap = Capture.open(dump(tmp_path, messages + [stray]))
    assert read(cap).num_rows == 2
    rows = {r["kind"]: r for r in read(cap, view="attachments").to_pylist()}
    assert rows["header"]["complete"] is False and "no CMI layout" in rows["header"]["problem"]
    assert rows["header"]["attachment"] == "01" * 16


def test_a_header_format_that_is_not_text_is_an_envelope_problem():
    dlh = MQDLH.pack({"struc_id": b"DLH ", "format": b"MQ\xffSTR  ", "ccsid": 1208, "encoding": 273}, ">")
    message = mq_message(MQMD(format="MQDEAD  ", encoding=273, ccsid=1208), dlh + b"data", "f.dmp", 0, 0, 1)
    out = unwrap(message)
    assert out.payload == message.payload and "not valid utf-8" in out.details.envelope.problem


def test_text_file_in_another_code_page_is_a_typed_error(tmp_path):
    messages = build_mq_messages(files=[FileToWrite("a.txt", text="caf\u00e9\n")], options=WriteOptions(ccsid=819))
    relabelled = [(d.__class__(**{**d.__dict__, "ccsid": 1208}), p) for d, p in messages]
    cap = Capture.open(dump(tmp_path, relabelled))
    with pytest.raises(ValueConversionError, match="record 1 of the text file is not valid utf-8"):
        read(cap, view="files")
    from cmi_datasource.charsets import CharsetPolicy
    fixed = Capture.open(dump(tmp_path, relabelled, "again.dmp"), CharsetPolicy(override=819))
    assert read(fixed, view="files").column("text").to_pylist() == ["caf\u00e9\n"]


def test_a_file_rewritten_with_the_same_size_and_mtime_is_indexed_again(tmp_path):
    def table(sign):
        return pa.table({"X": pa.array([sign * float(i) for i in range(3000)])})

    path = tmp_path / "q.dmp"
    with open(path, "wb") as f:
        write_dump(f, build_mq_messages([DatasetToWrite(table(1), "LIB", "DS")],
                                     options=WriteOptions(deterministic_seed="a")), created="first")
    stat = os.stat(path)
    assert read(str(path)).column("X").to_pylist()[-1] == 2999.0
    data = path.read_bytes()
    with open(path, "wb") as f:
        write_dump(f, build_mq_messages([DatasetToWrite(table(-1), "LIB", "DS")],
                                     options=WriteOptions(deterministic_seed="a")), created="secnd")
    assert len(path.read_bytes()) == len(data)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # as cp -p or rsync -t would
    assert read(str(path)).column("X").to_pylist()[-1] == -2999.0


def test_reading_a_message_that_changed_since_planning_is_an_error(tmp_path):
    path = dump(tmp_path, build_mq_messages([DatasetToWrite(pa.table({"X": [float(i) for i in range(3000)]}),
                                                         "LIB", "DS")]))
    cap = Capture.open(path)
    [att] = cap.attachments
    [part] = slices_of(cap, att, 1 << 40)
    data = bytearray(open(path, "rb").read())
    at = data.rindex(b"X 0000")  # an observation line: zero bytes become other zero-width bytes
    data[at + 2:at + 6] = b"FFFF"
    with open(path, "wb") as f:
        f.write(bytes(data))
    from cmi_datasource.engine.decode import slice_batches
    with pytest.raises(CmiFormatError, match="differs from the one planned"):
        list(slice_batches(part))
    index._MEMORY.clear()


@pytest.mark.parametrize("what, datasets, files, options", [
    ("the application message", [DatasetToWrite(ONE, "LIB", "DS")], [], {"application_message": "\u20ac"}),
    ("an attachment description", [DatasetToWrite(ONE, "LIB", "DS", description="\u20ac")], [], {}),
    ("text file a.txt", [], [FileToWrite("a.txt", text="\u20ac\n")], {}),
    ("file name", [], [FileToWrite("\u20ac.bin", content=b"x")], {}),
])
def test_characters_the_code_page_lacks_are_typed_errors(what, datasets, files, options):
    with pytest.raises(CmiEncodeError, match="cannot be encoded in iso8859-1"):
        build_mq_messages(datasets, files, WriteOptions(ccsid=819, **options))


def test_zos_two_byte_numerics_and_nanosecond_timestamps_are_written(tmp_path):
    schema = pa.schema([pa.field("N", pa.float64(), metadata={"sas_length": "2"}),
                        pa.field("T", pa.timestamp("ns"))])
    table = pa.table({"N": [1.0, 16.0], "T": pa.array([dt.datetime(2020, 1, 1, 0, 0, 0, 123456), None],
                                                      pa.timestamp("ns"))}, schema=schema)
    messages = build_mq_messages([DatasetToWrite(table, "LIB", "ZOS")], options=WriteOptions(encoding=785, ccsid=37))
    rows = read(dump(tmp_path, messages)).to_pylist()
    assert rows == [{"N": 1.0, "T": dt.datetime(2020, 1, 1, 0, 0, 0, 123456)}, {"N": 16.0, "T": None}]
    with pytest.raises(CmiEncodeError, match="sas_length 2 is not 3..8"):
        build_mq_messages([DatasetToWrite(table, "LIB", "IEEE")])


def test_messages_view_after_the_fixes_still_lists_every_record(tmp_path):
    messages = build_mq_messages([DatasetToWrite(ONE, "LIB", "DS")])
    cap = Capture.open(dump(tmp_path, messages + [(None, b"raw")]))
    assert len(messages_table(cap)) == len(messages) + 1
