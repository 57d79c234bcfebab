"""Damaged TIB/Rendezvous captures: every one is a typed error naming the file, the message and
the byte offset of the field at fault; none crashes the process, leaks a Python error or
allocates what a damaged size declares.

Each input is ``sample_queues/tibrv_capture.rv`` with a few bytes changed, built here: the three
a reviewer reported (a segfault in the ATO kernel, a struct.error, a ValueError), the MemoryError
seen fuzzing (DAT's observation length sizing the rows), and one per distinct failure the fuzzer
(random flips, truncations, insertions) found besides. The sample's messages: 0 HDR, 1 MSG,
2 DAT, 3 VAR, 4 ATO, 5 LST, 6 FDC, 7 ATX, 8 LST.
"""
from __future__ import annotations

import os
import struct
from typing import Dict, Optional

import numpy as np
import pytest

from cmi_datasource import Capture, read
from cmi_datasource.cmi.wire import FieldReader, FieldWriter, WireFormat
from cmi_datasource.errors import CmiEncodeError, CmiError, Location, TruncatedError
from cmi_datasource.transports.tibrv import observations
from cmi_datasource.transports.tibrv.records import RvCmiError
from cmi_datasource.transports.tibrv.wire import MESSAGE, RvFormatError, field_bytes, message_bytes, read_fields, \
    read_message

SAMPLE_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "sample_queues", "tibrv_capture.rv")
with open(SAMPLE_PATH, "rb") as _f:
    SAMPLE = _f.read()
HDR, MSG, DAT, VAR, ATO, LST, FDC, ATX = range(8)


def _messages():
    found, pos = [], 0
    while pos < len(SAMPLE):
        fields, end = read_message(SAMPLE, pos)
        found.append((pos, {f.field_id: f for f in fields}))
        pos = end
    return found


MESSAGES = _messages()


def start(message: int) -> int:
    return MESSAGES[message][0]


def field(message: int, fid: int):
    """The sample's field (its offsets are file offsets: the whole file was the buffer read)."""
    return MESSAGES[message][1][fid]


def type_at(message: int, fid: int) -> int:
    """Where the field's type byte is (its size takes one byte in every field patched here)."""
    return field(message, fid).data_offset - 2


def payload_offset(message: int, fid: int) -> int:
    return field(message, fid).offset - start(message)


def patched(edits: Dict[int, bytes], expect: Optional[Dict[int, bytes]] = None) -> bytes:
    data = bytearray(SAMPLE)
    for at, old in (expect or {}).items():
        assert data[at:at + len(old)] == old, "the sample changed: rebuild this case"
    for at, new in edits.items():
        data[at:at + len(new)] = new
    return bytes(data)


def set_scalar(message: int, fid: int, code: int, value: bytes) -> Dict[int, bytes]:
    """The field retyped and given ``value`` (of the width it had)."""
    f = field(message, fid)
    assert len(value) == len(f.data)
    return {type_at(message, fid): bytes([code]), f.data_offset: value}


def open_all(path: str, format: Optional[str] = None) -> None:
    """List the capture (which never fails on damage), then read its dataset and files views in
    FAILFAST, as Spark does: damage raises from the view of the attachment it lies in."""
    capture = Capture.open([path], use_index_cache=False, format=format)
    read(capture, view="messages")
    read(capture, view="attachments")
    for name in ("dataset", "files"):
        read(path, view=name, mode="FAILFAST", format=format)


# -- the reviewer's three -----------------------------------------------------------------------

# /tmp/rv/crash.rv: VAR's length of ITEM (field 27) 6 -> 1310726 (and two ATO bytes): the kernel
# blank-padded a 1.3 MB "value" into 22-byte rows, writing far past them (a segfault).
CRASH = ({1174: b"\x14", 2142: b"\xd3", 2537: b"\xf4"}, {1174: b"\x00", 2142: b"\x0d", 2537: b"\x4d"})
# /tmp/rv/structerr.rv: FDC field 2's type 11 (int) -> 214, a type RV does not define: its raw bytes
# reached FieldWriter.int32 as the file size, a struct.error.
STRUCTERR = ({3248: b"\xd6"}, {3248: b"\x0b"})
# /tmp/rv/valueerr.rv: HDR field 25 (the 2nd attachment's major version)'s type 11 -> 51, its raw
# bytes then int(b"...") raised ValueError (and an ATO byte).
VALUEERR = ({455: b"\x33", 1607: b"\xc7"}, {455: b"\x0b", 1607: b"\x00"})

CASES = {
    "crash: a VAR length past the row (segfault)": (
        patched(*CRASH), RvCmiError, VAR, payload_offset(VAR, 27), "character variable 2 length 1310726"),
    "struct.error: FDC size of an unknown type": (
        patched(*STRUCTERR), RvCmiError, FDC, payload_offset(FDC, 2),
        "FDC field 2 (type 214, 4 bytes) is not an integer"),
    "ValueError: HDR version of an unknown type": (
        patched(*VALUEERR), RvCmiError, HDR, payload_offset(HDR, 25),
        "HDR field 25 (type 51, 4 bytes) is not an integer"),
    # -- MemoryError: DAT's observation length sized the rows (np.empty(count * obs_length)) ----------
    "MemoryError: a 2 GB observation length": (
        patched({field(DAT, 9).data_offset: struct.pack(">i", 0x7F000016)}), RvCmiError, DAT, payload_offset(DAT, 9),
        "observation length is 2130706454"),
    "a 16 MB observation length (was read, 335 MB of zeros)": (
        patched({field(DAT, 9).data_offset: struct.pack(">i", 0x01000016)}), RvCmiError, DAT, payload_offset(DAT, 9),
        "observation length is 16777238"),
    "a negative observation length (was ValueError: negative dimensions)": (
        patched({field(DAT, 9).data_offset: struct.pack(">i", -22)}), RvCmiError, DAT, payload_offset(DAT, 9),
        "observation length is -22"),
    "a numeric VAR length of 9 (read past the double)": (
        patched({field(VAR, 12).data_offset: struct.pack(">i", 9)}), RvCmiError, VAR, payload_offset(VAR, 12),
        "numeric variable 1 length 9, not 1 to 8"),
    # -- the fuzzer's other distinct failures ------------------------------------------------------
    "TypeError: HDR attachment count a string": (
        patched({type_at(HDR, 5): b"\x08"}), RvCmiError, HDR, payload_offset(HDR, 5), "HDR field 5 (string"),
    "ValueError: HDR attachment type a string": (
        patched({type_at(HDR, 6): b"\x08"}), RvCmiError, HDR, payload_offset(HDR, 6), "HDR field 6 (string"),
    "TypeError: VAR variable count an opaque": (
        patched({type_at(VAR, 1): b"\x07"}), RvCmiError, VAR, payload_offset(VAR, 1), "VAR field 1 (opaque"),
    "TypeError: VAR nsort (a char) a datetime": (
        patched({type_at(VAR, 47): b"\x03"}), RvCmiError, VAR, payload_offset(VAR, 47), "not one character"),
    "struct.error: DAT version (int) a uint past 2**31": (
        patched(set_scalar(DAT, 2, 12, b"\x80\x00\x00\x00")), RvCmiError, DAT, payload_offset(DAT, 2),
        "2147483648) is not a 4-byte CMI int"),
    "struct.error: DAT sort flags (short) a uint past 2**15": (
        patched(set_scalar(DAT, 18, 12, b"\x80\x00")), RvCmiError, DAT, payload_offset(DAT, 18),
        "32768) is not a 2-byte CMI short"),
    "struct.error: DAT nobs (long) a uint past 2**31": (
        patched(set_scalar(DAT, 7, 12, b"\xff\xff\xff\xff")), RvCmiError, DAT, payload_offset(DAT, 7),
        "4294967295) is not a 4-byte CMI long"),
    "TypeError: DAT password (bytes4) a u8 array": (
        patched({type_at(DAT, 24): b"\x23"}), RvCmiError, DAT, payload_offset(DAT, 24),
        "is not a string or opaque of at most 4 bytes"),
    "TypeError: ATX record length a string": (
        patched({type_at(ATX, 2): b"\x08"}), RvCmiError, ATX, payload_offset(ATX, 2), "ATX field 2 (string"),
    "ValueError: LST count a string": (
        patched({type_at(LST, 1): b"\x08"}), RvCmiError, LST, payload_offset(LST, 1), "LST field 1 (string"),
    "OverflowError: a MSG value a datetime of 19 bytes": (
        patched({type_at(MSG, 3): b"\x03"}), RvFormatError, MSG, payload_offset(MSG, 3), "(datetime) of 19 bytes"),
    "struct.error: a MSG value a real of 19 bytes": (
        patched({type_at(MSG, 3): b"\x0d"}), RvFormatError, MSG, payload_offset(MSG, 3), "(real) of 19 bytes"),
}


@pytest.mark.parametrize("format", [None, "tibrv"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_damaged_capture_is_a_typed_error_naming_file_message_and_offset(tmp_path, case, format):
    data, error, message, offset, text = CASES[case]
    path = tmp_path / "damaged.rv"
    path.write_bytes(data)
    with pytest.raises(error) as e:
        open_all(str(path), format)
    assert text in e.value.problem
    assert (e.value.source, e.value.message_index, e.value.location.file_offset, e.value.offset) == (
        str(path), message, start(message), offset)


def test_the_sample_itself_reads():
    capture = Capture.open([SAMPLE_PATH], use_index_cache=False)
    assert read(capture).num_rows == 20 and read(capture, view="files").num_rows == 1


# -- the kernel's own bounds ------------------------------------------------------------------


def _ato_body(values):
    """An ATO message's bytes: (vtype, real) pairs, one observation of len(values) numerics."""
    fields = [field_bytes("ATO", 1, 11, struct.pack(">i", 1)), field_bytes("ATO", 2, 11, struct.pack(">i", 3))]
    for n, v in enumerate(values):
        fields += [field_bytes("ATO", 3 + 2 * n, 11, struct.pack(">i", 1)),
                   field_bytes("ATO", 4 + 2 * n, 13, struct.pack(">d", v))]
    return message_bytes(fields)


@pytest.mark.parametrize("lengths, offsets, room", [
    ([8, 8], [0, 8], 12),  # the second value's place runs past the rows
    ([9, 8], [0, 9], 17),  # a numeric wider than its double
    ([8, 8], [0, -4], 16),  # a place before the rows
])
def test_the_kernel_refuses_a_layout_its_buffers_cannot_hold(lengths, offsets, room):
    """``observation_rows`` checks layouts before the kernel runs; the kernel keeps its own bounds."""
    body = np.frombuffer(_ato_body([1.0, 2.0]), dtype=np.uint8)
    [_, second] = list(read_fields(body.tobytes(), 8, len(body)))[:2]
    out = np.zeros(room, dtype=np.uint8)
    problem, row, variable, _ = observations._rows(
        body, second.data_offset + len(second.data), len(body) + 100, 1, np.array([True, True]),
        np.array(lengths, dtype=np.int64), np.array(offsets, dtype=np.int64), room, out, 32)
    assert problem == 8 and row == 0 and variable in (0, 1)


def test_the_kernel_never_reads_past_the_buffer_it_is_told_ends_later():
    body = np.frombuffer(_ato_body([1.0]), dtype=np.uint8)[:-3]  # the last real cut short
    [_, second] = list(read_fields(_ato_body([1.0]), 8, len(body) + 3))[:2]
    out = np.zeros(8, dtype=np.uint8)
    problem, *_ = observations._rows(body, second.data_offset + len(second.data), len(body) + 1000, 1,
                                     np.array([True]), np.array([8], dtype=np.int64), np.array([0], dtype=np.int64),
                                     8, out, 32)
    assert problem == 1  # "a field runs past the end of the message"


# -- the primitives -----------------------------------------------------------------------------


def test_field_reader_raises_truncated_errors_with_their_location_never_struct_error():
    locate = lambda at: Location("f.dmp", 2, 100, at)  # noqa: E731
    for wire, data, read_field in [
        (WireFormat(), b"\x00\x00\x00\x10ab", lambda r: r.string("name")),
        (WireFormat(long_size=8), b"\x00" * 5, lambda r: r.long("nobs")),
        (WireFormat(), b"\x00", lambda r: r.short("flags")),
        (WireFormat(), b"\x00\x00\x00", lambda r: r.int32("count")),
        (WireFormat(), b"\xff\xff\xff\xff", lambda r: r.string("label")),
    ]:
        reader = FieldReader(data, wire, locate)
        with pytest.raises(TruncatedError) as e:
            read_field(reader)
        assert e.value.source == "f.dmp" and e.value.message_index == 2 and e.value.offset is not None


@pytest.mark.parametrize("write", [lambda w: w.int32(1 << 31), lambda w: w.short(-(1 << 15) - 1),
                                   lambda w: w.long(b"\x00\x00"), lambda w: w.char(256), lambda w: w.char("R")])
def test_field_writer_raises_a_typed_error_for_a_value_its_field_cannot_hold(write):
    with pytest.raises(CmiEncodeError):
        write(FieldWriter(WireFormat()))


def test_a_nested_message_that_is_none_names_where_it_lies():
    inner = (8).to_bytes(4, "big") + b"\x12\x34\x56\x78"  # its size, then no RV magic
    outer = message_bytes([field_bytes("sub", None, MESSAGE, inner)])
    [nested], _ = read_message(outer, 0)
    with pytest.raises(RvFormatError) as e:
        nested.decoded(Location("x.rv", 0, 0).at_payload)
    assert e.value.offset == nested.data_offset and e.value.source == "x.rv"
    assert isinstance(e.value, CmiError)
