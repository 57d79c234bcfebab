"""Declared lengths and counts are untrusted: each lie raises a typed error naming where it is."""
from __future__ import annotations

import struct

import pyarrow as pa
import pytest

from cmi_datasource import read
from cmi_datasource.engine.capture import Capture
from cmi_datasource.engine.write import DatasetToWrite, FileToWrite
from cmi_datasource.errors import AttachmentError, CmiFormatError, TruncatedError
from cmi_datasource.transports.mq.errors import DumpSyntaxError
from cmi_datasource.transports.mq.dmpmqmsg import write_dump

from support import build_mq_messages, capture_of, physical


def capture(pairs) -> Capture:
    return capture_of(physical(pairs))


def patched(pairs, index, payload):
    pairs = list(pairs)
    pairs[index] = (pairs[index][0], payload)
    return pairs


def dataset_pairs():
    table = pa.table({"X": pa.array([1.0, 2.0]), "NAME": ["a", "bb"]})
    return build_mq_messages([DatasetToWrite(table, "LIB", "DS", label="A label")])


def test_string_length_pointing_past_the_end_of_the_definition():
    pairs = dataset_pairs()
    definition = pairs[2][1]  # sequenced 1: record type, version, dataset type, label, ...
    # The dataset-type length (a little-endian long after type and version) claims 1 GB.
    lying = definition[:8] + struct.pack("<i", 1 << 30) + definition[12:]
    cap = capture(patched(pairs, 2, lying))
    with pytest.raises(TruncatedError) as e:
        read(cap)
    assert e.value.source == "memory.dmp" and e.value.message_index == 2
    assert e.value.offset == 12  # right after the length field that lied
    assert "remain" in str(e.value)


def test_variable_count_larger_than_the_definitions_can_hold():
    pairs = dataset_pairs()
    definition = bytearray(pairs[2][1])
    # nvars follows version, two strings and nobs; find it as the long after nobs = 2.
    nobs_at = bytes(definition).index(struct.pack("<ii", 2, 2))
    definition[nobs_at + 4:nobs_at + 8] = struct.pack("<i", 10_000_000)
    cap = capture(patched(pairs, 2, bytes(definition)))
    with pytest.raises(CmiFormatError, match="10000000 variables") as e:
        read(cap)
    assert e.value.message_index == 3


def test_header_attachment_count_larger_than_the_header():
    pairs = dataset_pairs()
    header = bytearray(pairs[0][1])
    header[76:80] = struct.pack("<i", 2 ** 31 - 1)  # after 24 + long + 24 + 24 bytes
    cap = capture(patched(pairs, 0, bytes(header)))
    [row] = read(cap, view="attachments").to_pylist()
    assert row["kind"] == "header" and row["complete"] is False
    assert "no CMI layout" in row["problem"] and "message 1," in row["problem"]
    with pytest.raises(AttachmentError, match="1 unreadable headers") as e:
        read(cap)
    assert e.value.message_number == 1 and "option('view', 'attachments') lists every header" in e.value.hint


def test_file_record_length_past_the_end():
    pairs = build_mq_messages(files=[FileToWrite("a.bin", content=b"0123456789", lrecl=4)])
    records = bytearray(pairs[3][1])  # sequenced 2: {long length, bytes}...
    records[0:4] = struct.pack("<i", 999)
    cap = capture(patched(pairs, 3, bytes(records)))
    with pytest.raises(TruncatedError) as e:
        read(cap, view="files")
    assert e.value.message_index == 3 and e.value.offset == 4


def test_dump_cut_in_the_middle_of_a_line(tmp_path):
    path = tmp_path / "cut.dmp"
    with open(path, "wb") as f:
        write_dump(f, dataset_pairs())
    data = path.read_bytes()
    cut = data.index(b"X ", len(data) // 2) + 7  # 5 hex digits into an X line
    path.write_bytes(data[:cut])
    cap = Capture.open(str(path))  # the capture opens: its messages are listed, the cut one with its problem
    bad_line = data.index(b"X ", len(data) // 2)
    [damaged] = [row for row in read(cap, view="messages").to_pylist() if row["problem"]]
    assert damaged["index"] == len(cap.messages) and "not an even run of hex digits" in damaged["problem"]
    assert damaged["payload"] == b"" and damaged["attachment"] is not None  # its attribute lines still read
    with pytest.raises(DumpSyntaxError) as e:
        read(cap)  # FAILFAST, the default
    assert e.value.source == str(path) and e.value.offset == bad_line
    assert e.value.attachment == damaged["attachment"] and e.value.sequence == damaged["sequence"]


def test_dump_cut_at_a_line_end_loses_no_rows_silently(tmp_path):
    table = pa.table({"X": pa.array([float(i) for i in range(3000)])})
    path = tmp_path / "cut.dmp"
    with open(path, "wb") as f:
        write_dump(f, build_mq_messages([DatasetToWrite(table, "LIB", "DS")]))
    data = path.read_bytes()
    last_data_line = data.rindex(b"\nX ", 0, data.rindex(b"* Index")) + 1
    path.write_bytes(data[:last_data_line])  # the last observation message loses its last line
    cap = Capture.open(str(path))
    with pytest.raises(CmiFormatError) as e:
        read(cap)
    assert "incomplete" in str(e.value) or "observation" in str(e.value)
    assert not cap.attachments[0].complete or e.value.message_index is not None
