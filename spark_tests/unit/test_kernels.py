"""The compiled decode kernels against the plain implementations they replace, on real bytes.

* ``read_dump_spans`` (hex of many planned messages per kernel call) must give exactly the
  payloads of ``parse_dump`` (line by line), for every line kind, width, line end, head
  length and piece size, and the same typed errors.
* ``decode_number_fields`` / ``string_fields`` (row-by-row field kernels) must give what
  ``struct`` and ``bytes.decode`` give per value.
"""
from __future__ import annotations

import os
import random
import re
import struct
import zlib

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cmi_datasource.arrow.strings import string_fields
from cmi_datasource.transports.mq.dmpmqmsg import format_message, parse_dump
from cmi_datasource.transports.mq.dump_spans import read_dump_spans
from cmi_datasource.transports.base import parse_span
from cmi_datasource.charsets import code_page
from cmi_datasource.errors import CmiFormatError, Location
from cmi_datasource.transports.mq.errors import DumpSyntaxError
from cmi_datasource.encoding import FloatFormat
from cmi_datasource.transports.mq.mqmd import MQMD
from cmi_datasource.payload.sas_numbers import decode_number_fields
from conftest import ROOT, SAMPLES
from test_mq_dmpmqmsg import HEADER, _random_dump


def _spans_of(path, data):
    return [(path, m.index, m.file_offset, m.file_end) for m in parse_dump(data, path)]


def _payloads(spans, heads, **kw):
    """Each span's whole payload put back together from its head and data parts; the content
    keys of each piece (from a byte within the head) are checked against zlib's CRC-32."""
    out = []
    for piece in read_dump_spans(spans, heads, **kw):
        wholes = [bytes(piece.head_of(i)) + bytes(piece.data_of(i)) for i in range(len(piece.spans))]
        assert [len(w) for w in wholes] == list(piece.lengths)
        skip = np.minimum(piece.heads, piece.lengths) // 2
        assert piece.content_keys(skip) == ([len(w) - k for w, k in zip(wholes, skip)],
                                             [zlib.crc32(w[k:]) for w, k in zip(wholes, skip)])
        out.extend(wholes)
    return out


def test_random_dumps_give_the_line_parsers_payloads(tmp_path):
    # X lines of any width (hex case, ASCII columns), S and T lines, comments, CRLF, N messages:
    # whatever the kernel does not take itself goes through the line parser, with equal results.
    rng = random.Random(7)
    for case in range(150):
        data, _ = _random_dump(rng)
        if rng.random() < 0.3:  # lower-case hex digits
            data = re.sub(rb"(?m)^X ([0-9A-F]+)", lambda m: b"X " + m.group(1).lower(), data)
        path = tmp_path / f"case{case}.dmp"
        path.write_bytes(data)
        messages = list(parse_dump(data, str(path)))
        spans = _spans_of(str(path), data)
        heads = [rng.choice([0, 0, 1, 4, 30, 500]) for _ in spans]
        got = _payloads(spans, heads, room=rng.choice([0, 3, 131]), piece_bytes=rng.choice([1, 200, 1 << 20]))
        assert got == [m.payload for m in messages], case


def test_data_parts_are_end_to_end_and_room_is_in_front(tmp_path):
    payloads = [bytes(range(256)) * 3, b"", b"\x00\x01", bytes(range(100, 200)) * 40]
    data = HEADER + b"".join(format_message(MQMD(msg_type=8), p, i + 1) for i, p in enumerate(payloads))
    path = tmp_path / "q.dmp"
    path.write_bytes(data)
    [piece] = read_dump_spans(_spans_of(str(path), data), [4] * len(payloads), room=50)
    assert piece.room == 50 and len(piece.buffer) >= 50 + len(piece.data)
    assert bytes(piece.data) == b"".join(p[4:] for p in payloads)
    assert [bytes(piece.head_of(i)) for i in range(4)] == [p[:4] for p in payloads]
    assert list(piece.lengths) == [len(p) for p in payloads]


def test_spans_far_apart_or_in_other_files_are_read_separately(tmp_path):
    messages = [(MQMD(msg_type=8), bytes([i]) * (1000 + i)) for i in range(6)]
    texts = [HEADER + b"".join(format_message(d, p, i) for i, (d, p) in enumerate(messages[k::2])) for k in (0, 1)]
    paths = []
    for k, text in enumerate(texts):
        paths.append(str(tmp_path / f"f{k}.dmp"))
        (tmp_path / f"f{k}.dmp").write_bytes(text)
    spans = [s for pair in zip(_spans_of(paths[0], texts[0]), _spans_of(paths[1], texts[1])) for s in pair]
    # Alternating files, backwards: no two spans share a read. (A piece's buffers are reused by
    # the next piece, so each is copied out before the next is asked for.)
    pieces = [(len(p.spans), bytes(p.data)) for p in read_dump_spans(spans[::-1], [0] * 6)]
    assert pieces == [(1, p) for _, p in messages][::-1]


@pytest.mark.parametrize("replacement, message", [
    (b"X 41G2", "not an even run of hex digits"),
    (b"X 414", "not an even run of hex digits"),  # an odd number of digits
    (b"Q 4142", "not a comment, attribute or data line"),
])
def test_bad_lines_raise_the_line_parsers_error_with_the_offset(tmp_path, replacement, message):
    good = HEADER + format_message(MQMD(msg_type=8), b"\x00" * 30, 1) \
        + format_message(MQMD(msg_type=8), b"AB" * 20, 2)
    spans = _spans_of("q.dmp", good)
    bad = good.replace(b"X 4142", replacement, 1)
    path = tmp_path / "q.dmp"
    path.write_bytes(bad)
    spans = [(str(path), i, start, end + len(bad) - len(good) if i == 1 else end) for _, i, start, end in spans]
    with pytest.raises(DumpSyntaxError, match=message) as raised:
        _payloads(spans, [0, 0])
    assert raised.value.location.source == str(path)
    assert raised.value.location.message_index == 1
    assert raised.value.location.file_offset == bad.index(replacement)


def test_a_span_holding_two_messages_or_a_short_file_is_an_error(tmp_path):
    data = HEADER + format_message(MQMD(msg_type=8), b"one", 1) + format_message(MQMD(msg_type=8), b"two", 2)
    path = tmp_path / "q.dmp"
    path.write_bytes(data)
    first, second = _spans_of(str(path), data)
    with pytest.raises(CmiFormatError, match="expected one message"):
        _payloads([(str(path), 0, first[2], second[3])], [0])
    with pytest.raises(CmiFormatError, match="file ends at byte"):
        _payloads([(str(path), 1, second[2], second[3] + 100)], [0])


def test_head_longer_than_the_payload_holds_all_of_it(tmp_path):
    data = HEADER + format_message(MQMD(msg_type=8), b"xyz", 1)
    path = tmp_path / "q.dmp"
    path.write_bytes(data)
    [piece] = read_dump_spans(_spans_of(str(path), data), [10])
    assert bytes(piece.head_of(0)) == b"xyz" and bytes(piece.data_of(0)) == b"" and piece.lengths[0] == 3


# ---------------------------------------------------------------------------------------------
# Field kernels


FORMATS = {FloatFormat.IEEE_BIG: ">d", FloatFormat.IEEE_LITTLE: "<d"}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(allow_nan=False, width=64), min_size=1, max_size=40),
       st.sampled_from([FloatFormat.IEEE_BIG, FloatFormat.IEEE_LITTLE]),
       st.lists(st.integers(2, 8), min_size=1, max_size=4), st.integers(0, 5))
def test_number_fields_match_struct(values, fmt, widths, gap):
    # Rows of several numeric fields of different widths, with junk bytes between them.
    code = FORMATS[fmt]
    offsets, at = [], gap
    for w in widths:
        offsets.append(at)
        at += w + gap
    rows = np.full((len(values), at), 0xAB, dtype=np.uint8)
    expected = []
    for f, (offset, width) in enumerate(zip(offsets, widths)):
        column = []
        for r, v in enumerate(values[f:] + values[:f]):
            full = struct.pack(code, v)
            stored = full[:width] if fmt is FloatFormat.IEEE_BIG else full[8 - width:]
            rows[r, offset:offset + width] = list(stored)
            kept = stored + bytes(8 - width) if fmt is FloatFormat.IEEE_BIG else bytes(8 - width) + stored
            column.append(struct.unpack(code, kept)[0])
        expected.append(column)
    got, missing = decode_number_fields(rows, fmt, offsets, widths)
    assert got.shape == (len(widths), len(values)) and not missing.any()
    for f in range(len(widths)):
        assert [struct.pack("<d", v) for v in got[f]] == [struct.pack("<d", v) for v in expected[f]]


def test_number_fields_flag_nan_patterns_as_missing():
    missing_dot = bytes.fromhex("FFFFFE0000000000")
    rows = np.frombuffer(missing_dot + struct.pack(">d", 1.5) + bytes.fromhex("7FF8000000000000")
                         + struct.pack(">d", float("inf")), dtype=np.uint8).reshape(4, 8)
    values, missing = decode_number_fields(rows, FloatFormat.IEEE_BIG, [0], [8])
    assert missing[0].tolist() == [True, False, True, False]
    assert values[0][1] == 1.5 and values[0][3] == float("inf")


def test_number_fields_outside_the_rows_are_refused():
    rows = np.zeros((2, 10), dtype=np.uint8)
    for offsets, widths in (([4], [8]), ([-1], [4]), ([0], [9]), ([0], [0])):
        with pytest.raises(ValueError, match="lie outside"):
            decode_number_fields(rows, FloatFormat.IEEE_BIG, offsets, widths)
    with pytest.raises(ValueError, match="lie outside"):
        string_fields(rows, code_page(1208), [8], [3])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="ab Zé€\x00ß", max_size=6), min_size=1, max_size=30),
       st.sampled_from([1208, 819, 37, 1252]), st.integers(0, 3))
def test_string_fields_match_per_value_decoding(texts, ccsid, gap):
    cp = code_page(ccsid)
    encoded, backwards = [], []
    for t in texts:
        try:
            cp.encode(t)
        except UnicodeEncodeError:
            t = "?"
        encoded.append(cp.encode(t))
        backwards.append(cp.encode(t[::-1]))
    width = max(1, max(len(e) for e in encoded))
    # Two fields per row: the value, then the value backwards, each blank padded.
    rows = np.full((len(texts), gap + 2 * width + gap), 0x11, dtype=np.uint8)
    for r, (e, b) in enumerate(zip(encoded, backwards)):
        rows[r, gap:gap + width] = list(e.ljust(width, bytes([cp.space])))
        rows[r, gap + width:gap + 2 * width] = list(b.ljust(width, bytes([cp.space])))

    def trimmed(raw):
        while raw and raw[-1] in (cp.space, 0):
            raw = raw[:-1]
        return cp.decode(raw) or None

    first, second = string_fields(rows, cp, [gap, gap + width], [width, width])
    assert first.to_pylist() == [trimmed(e.ljust(width, bytes([cp.space]))) for e in encoded]
    assert second.to_pylist() == [trimmed(b.ljust(width, bytes([cp.space]))) for b in backwards]


def test_invalid_utf8_names_the_field_and_row():
    rows = np.frombuffer(b"ok  ok  " + b"ok  \xc3(  ", dtype=np.uint8).reshape(2, 8)
    with pytest.raises(UnicodeDecodeError) as raised:
        string_fields(rows, code_page(1208), [0, 4], [4, 4])
    assert raised.value.field == 1 and raised.value.start == 1


_UTF8_EDGES = [b"a", b" ", b"\x00", b"\xc2\x80", b"\xdf\xbf", b"\xc0\x80", b"\xc1\xbf", b"\xe0\xa0\x80",
               b"\xe0\x9f\xbf",
               b"\xed\x9f\xbf", b"\xed\xa0\x80", b"\xef\xbf\xbf", b"\xf0\x90\x80\x80", b"\xf0\x8f\xbf\xbf",
               b"\xf4\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\x80", b"\xbf", b"\xe2\x82",
               b"\xe2\x82\xac", b"\xf0\x9f\x98", b"\xff", b"\xfe"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=6), st.lists(st.sampled_from(_UTF8_EDGES), max_size=4).map(b"".join)),
                min_size=1, max_size=12))
def test_utf8_check_agrees_with_pythons_strict_decoder(values):
    width = max(1, max(len(v) for v in values))
    rows = np.full((len(values), width), 0x20, dtype=np.uint8)
    for r, v in enumerate(values):
        rows[r, :len(v)] = list(v)
    expected = []
    for v in values:
        v = v.rstrip(b" \x00")
        try:
            expected.append(v.decode("utf-8") or None)
        except UnicodeDecodeError:
            expected.append(UnicodeDecodeError)
    if UnicodeDecodeError in expected:
        with pytest.raises(UnicodeDecodeError) as raised:
            string_fields(rows, code_page(1208), [0], [width])
        assert raised.value.start == expected.index(UnicodeDecodeError)
    else:
        assert string_fields(rows, code_page(1208), [0], [width])[0].to_pylist() == expected


def _line_parser_payload(text, span, data_lines_only: bool):
    """A span's payload by the line parser, or None when it refuses the text (or the file is
    too short); with ``data_lines_only``, whatever the span's attribute lines say."""
    if text is None:
        return None
    if data_lines_only:
        text = b"N\n" + b"\n".join(line for line in text.split(b"\n") if not line.startswith((b"A", b"N")))
    source, index, start, _ = span
    try:
        found = list(parse_dump(text, source, start, index))
    except CmiFormatError:
        return None
    return found[0].payload if len(found) == 1 else None


def _line_parser_error(text, span):
    """(type, location) of the error reading a span by the line parser (a file too short for
    the span is an error at the span's start)."""
    source, index, start, _ = span
    if text is None:
        return CmiFormatError, Location(source, index, start)
    try:
        parse_span(parse_dump, text, span)
    except CmiFormatError as e:
        return type(e), e.location
    raise AssertionError("the line parser reads this span")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10 ** 6), st.sampled_from(b"0aFGX \n\r*AN~<\x00\xff")), max_size=8),
       st.integers(0, 64))
@example(edits=[(4220, ord("A"))], cut=0)  # an X line of message 0 turned into a broken A line
def test_corrupted_spans_decode_like_the_line_parser_or_raise_typed_errors(tmp_path_factory, edits, cut):
    # Bytes of a planned dump changed or cut off: the kernel never reads or writes outside its
    # buffers, and gives what the line parser finds in the data lines, or a typed error. (It
    # does not read attribute lines again: planning parsed them, and partitions check each
    # payload against the length and CRC-32 planning recorded.)
    payloads = [bytes(range(7, 250)) * 2, b"short", b"", bytes(100)]
    good = HEADER + b"".join(format_message(MQMD(msg_type=8), p, i + 1) for i, p in enumerate(payloads))
    bad = bytearray(good)
    for position, byte in edits:
        bad[len(HEADER) + position % (len(good) - len(HEADER))] = byte
    bad = bytes(bad[:len(bad) - cut])
    path = tmp_path_factory.mktemp("corrupt") / "q.dmp"
    path.write_bytes(bad)
    spans = [(str(path), i, start, end) for _, i, start, end in _spans_of("x", good)]

    texts = [bad[start:end] if end <= len(bad) else None for _, _, start, end in spans]
    whole = [_line_parser_payload(text, span, False) for text, span in zip(texts, spans)]
    data_only = [_line_parser_payload(text, span, True) for text, span in zip(texts, spans)]
    try:
        got = _payloads(spans, [4] * len(spans), room=8)
    except CmiFormatError as raised:
        # The span named is one the line parser refuses too, with the same error and place; a
        # span before it that the line parser refuses had only its attribute lines damaged.
        i = raised.location.message_index
        assert whole[i] is None
        assert (type(raised), raised.location) == _line_parser_error(texts[i], spans[i])
        if texts[i] is not None:  # (a file too short is found as it is read, before any decoding)
            assert all(data_only[j] is not None for j in range(i) if whole[j] is None)
        return
    assert got == data_only


def test_kernels_compile_without_a_writable_cache(monkeypatch):
    # numba refuses a cached function as it is defined when it finds nowhere to write its cache
    # (read-only install and home): the kernel must then compile for this process only.
    import numba

    from cmi_datasource import compiled
    njit = numba.njit

    def no_locator(*args, cache=False, **options):
        if cache:
            raise RuntimeError("cannot cache function 'add': no locator available for file")
        return njit(*args, cache=cache, **options)

    monkeypatch.setattr(numba, "njit", no_locator)

    @compiled.kernel
    def add(a, b):
        return a + b

    assert add(2, 3) == 5 and type(add.compiled()._cache).__name__ == "NullCache"


def test_planning_a_read_imports_no_numba():
    """numba is imported at a kernel's first call: a worker that only plans (Spark's discovery,
    schema and partitions) never loads it. (CMI_NATIVE=0: the read runs numba's kernels, not their
    C twins, which import no numba at all: test_native_kernels.py.)"""
    import subprocess
    import sys
    script = ("import sys\nimport pyspark_cmi\n"
              "source = pyspark_cmi.DefaultSource({'path': %r})\n"
              "source.reader(source.schema()).partitions()\n"
              "assert 'numba' not in sys.modules, 'planning imported numba'\n"
              "from cmi_datasource import read\n"
              "assert read([%r]).num_rows == 6 and 'numba' in sys.modules\n"
              % (os.path.join(SAMPLES, "mixed_types.dmp"), os.path.join(SAMPLES, "mixed_types.dmp")))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=ROOT, CMI_NATIVE="0"))
    assert done.returncode == 0, done.stderr[-2000:]
