"""The C kernels (cmi_datasource/_native.c, issue 30) against their numba references.

Each C kernel is run beside the numba kernel it replaces (``Kernel.compiled()``, the reference)
on the same inputs, copies of the same output buffers filled alike, and must give the same
return value and leave every output byte the same: on dumps written by the independent encoder
and the samples, on hypothesis-made and garbled inputs, through every refusal (-1, a failed span,
an ill-formed value, a date out of range). The extension must be built and used in the project's
own environment (``make`` builds it in place): a broken build cannot pass for numba's kernels.
"""
from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import independent_encoder as enc
import rv_messages as rv
from cmi_datasource import compiled
from cmi_datasource.arrow import strings
from cmi_datasource.charsets import code_page
from cmi_datasource.engine.write import DatasetToWrite, WriteOptions, write_attachments_dump
from cmi_datasource.payload import sas_dataset, sas_numbers
from cmi_datasource.transports.mq import dump_spans, hex_lines
from cmi_datasource.transports.mq.dmpmqmsg import parse_dump
from cmi_datasource.transports.tibrv import observations
from cmi_datasource.transports.tibrv.wire import read_message
from conftest import ROOT, SAMPLES

NATIVE_KERNELS = {hex_lines.x_run: "x_run", dump_spans._decode_spans: "decode_spans",
                  strings._trim_and_gather: "trim_and_gather",
                  sas_numbers._gather_fields: "gather_fields", sas_dataset._sas_to_arrow_time: "sas_to_arrow_time",
                  observations._ato_rows: "ato_rows", hex_lines._x_lines: "x_lines", hex_lines._x_records: "x_records",
                  sas_numbers._put_high_bytes: "put_high_bytes", strings._put_padded: "put_padded",
                  sas_numbers._put_arrow_numbers: "put_arrow_numbers"}
DUMPS = ("mixed_types.dmp", "big_endian_273_819.dmp", "zos_785_37.dmp", "nightly_batch.dmp", "files.dmp",
         "seed000_external_file.dmp")


def _twins(kernel, *args):
    """(C result, numba result, C outputs, numba outputs): each array argument is copied for each
    side, so that both start from the same bytes and what each writes can be compared."""
    results, outputs = [], []
    for run in (kernel.native_function(), kernel.compiled()):
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        results.append(run(*copies))
        outputs.append([c for c in copies if isinstance(c, np.ndarray)])
    return results[0], results[1], outputs[0], outputs[1]


def _same(kernel, *args):
    native, reference, native_out, reference_out = _twins(kernel, *args)
    assert native == reference
    for a, b in zip(native_out, reference_out):
        np.testing.assert_array_equal(a, b)
    return native


# ---- built and used ---------------------------------------------------------------------------------

def test_the_c_kernels_are_built_and_run_by_default():
    assert os.environ.get("CMI_NATIVE", "1") != "0", "the tests run with the C kernels"
    native = compiled.native_module()
    assert native is not None, "cmi_datasource._native is not built: run make (setup.py build_ext --inplace)"
    # scripts/sanitize_native.sh loads its sanitizer build, kept outside the tree, in the tree's place.
    assert (os.path.dirname(native.__file__) == os.path.join(ROOT, "cmi_datasource")
            or native.__file__ == os.environ.get("CMI_NATIVE_SANITIZED")), native.__file__
    for kernel, name in NATIVE_KERNELS.items():
        assert kernel.native == name and kernel.native_function() is not None
    sample = os.path.join(SAMPLES, "mixed_types.dmp")
    from cmi_datasource import read
    assert read(sample).num_rows == 6
    assert dump_spans._decode_spans.chosen is native.decode_spans
    assert sas_numbers._gather_fields.chosen is native.gather_fields


_TWIN = compiled.kernel(native="x_run")(lambda: 0)


def _calls_the_twin():
    return _TWIN()


def test_a_kernel_with_a_c_twin_cannot_be_called_by_a_numba_kernel():
    # numba compiles a call to another kernel only when that is its dispatcher, which would replace
    # the C twin for every Python caller of the module: refused.
    with pytest.raises(TypeError, match="C twin"):
        compiled._dispatcher_of(_calls_the_twin)


def _fresh_read(paths, native):
    script = ("import sys\nfrom cmi_datasource import read\n"
              "rows = [read(p).num_rows for p in sys.argv[1:]]\n"
              "print(rows, 'numba' in sys.modules)\n")
    env = dict(os.environ, PYTHONPATH=ROOT, CMI_NATIVE="1" if native else "0")
    done = subprocess.run([sys.executable, "-c", script, *paths], capture_output=True, text=True, timeout=180,
                          env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split()[-1]


def test_a_fresh_process_reads_a_dump_an_mqget_and_a_tibrv_capture_without_numba(tmp_path):
    table = pa.table({"name": ["a", "é", None], "x": [1.5, None, -2.0],
                      "day": [dt.date(2001, 2, 3), None, dt.date(1960, 1, 1)],
                      "at": pa.array([dt.datetime(2020, 5, 6, 7, 8, 9, 123456)] * 3, pa.timestamp("us"))})
    mqget = tmp_path / "rows.mqget"
    with open(mqget, "wb") as out:
        write_attachments_dump(out, [DatasetToWrite(table, "WORK", "ROWS")], format="mqget")
    paths = [os.path.join(SAMPLES, "mixed_types.dmp"), str(mqget), os.path.join(SAMPLES, "tibrv_capture.rv")]
    assert _fresh_read(paths, native=True) == "False"
    assert _fresh_read(paths, native=False) == "True"  # CMI_NATIVE=0: numba's kernels


# ---- the write's kernels -------------------------------------------------------------------------------

_FRESH_WRITE = """
import datetime as dt, hashlib, io, sys
import pyarrow as pa
from cmi_datasource.engine.write import DatasetToWrite, WriteOptions, write_attachments_dump
table = pa.table({"name": ["a", "\\u00e9t\\u00e9", None, "x" * 12], "x": [1.5, None, -2.0, 1e70],
                  "n": pa.array([1, None, -7, 2 ** 40], pa.int64()),
                  "day": [dt.date(2001, 2, 3), None, dt.date(1960, 1, 1), dt.date(2099, 12, 31)],
                  "at": pa.array([dt.datetime(2020, 5, 6, 7, 8, 9, 123456)] * 4, pa.timestamp("us"))})
digests = []
for encoding, ccsid in ((546, 1208), (273, 819), (785, 37)):
    for form in ("dmpmqmsg", "mqget"):
        out = io.BytesIO()
        write_attachments_dump(out, [DatasetToWrite(table, "WORK", "ROWS")], format=form,
                               options=WriteOptions(encoding=encoding, ccsid=ccsid, deterministic_seed="t"))
        digests.append(hashlib.sha256(out.getvalue()).hexdigest()[:16])
print(",".join(digests), "numba" in sys.modules)
"""


def _fresh_write(native: bool):
    env = dict(os.environ, PYTHONPATH=ROOT, CMI_NATIVE="1" if native else "0")
    done = subprocess.run([sys.executable, "-c", _FRESH_WRITE], capture_output=True, text=True, timeout=180, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split()[-2:]


def test_a_fresh_process_writes_dumps_without_numba():
    """A write's commit (a fresh Spark Python worker) places numbers and text into the rows and writes
    X lines: with the C kernels it imports no numba (0.35-0.4 s); with numba's (CMI_NATIVE=0) it does,
    and writes the same bytes, IEEE little and big-endian and S/390 numbers, UTF-8 and EBCDIC text."""
    digests, numba_imported = _fresh_write(native=True)
    assert numba_imported == "False"
    assert _fresh_write(native=False) == [digests, "True"]


@settings(max_examples=150)
@given(st.binary(max_size=700), st.integers(1, 80), st.sampled_from([b"0123456789ABCDEF", b"0123456789abcdef",
                                                                     bytes(range(200, 216))]))
@example(b"\x00\xff" * 5000, 25, b"0123456789ABCDEF")  # more than the C's block of 8 KiB
def test_x_lines_alike(payload, width, digits):
    n = len(payload)
    total = 2 * n + 3 * -(-n // width)
    out = np.full(total + 70, 0xA5, np.uint8)
    assert _same(hex_lines._x_lines, np.frombuffer(payload, np.uint8), width, out,
                 np.frombuffer(digits, np.uint8)) == total
    if payload and digits == b"0123456789ABCDEF":  # as dmpmqmsg writes them
        lines = [b"X " + payload[i:i + width].hex().upper().encode() for i in range(0, n, width)]
        assert hex_lines.x_lines(payload, width) == b"\n".join(lines) + b"\n"


def _record_arrays(records):
    """(heads, head_ends, payloads, payload_ends) of (head, payload) pairs, as x_records passes them."""
    heads, payloads = [h for h, _ in records], [p for _, p in records]
    return (np.frombuffer(b"".join(heads), np.uint8), np.cumsum([len(h) for h in heads], dtype=np.int64),
            np.frombuffer(b"".join(payloads), np.uint8), np.cumsum([len(p) for p in payloads], dtype=np.int64))


@settings(max_examples=150)
@given(st.lists(st.tuples(st.binary(max_size=40), st.binary(max_size=300)), max_size=8), st.integers(1, 80),
       st.sampled_from([b"0123456789ABCDEF", bytes(range(200, 216))]), st.integers(0, 70))
@example([(b"* Index 1\nN\n", b"\x00\xff" * 5000), (b"", b"")], 25, b"0123456789ABCDEF", 0)  # past the C's block
def test_x_records_alike(records, width, digits, slack):
    """The group formatter's C and numba write the same records: each head, its payload's X lines
    (or a bare X line) and an empty line, the bytes after them untouched."""
    total = sum(len(h) + (2 * len(p) + 3 * -(-len(p) // width) if p else 3) + 1 for h, p in records)
    out = np.full(total + slack, 0xA5, np.uint8)
    arrays = _record_arrays(records)
    assert _same(hex_lines._x_records, *arrays, width, out, np.frombuffer(digits, np.uint8)) == total
    hex_lines._x_records(*arrays, width, out, np.frombuffer(digits, np.uint8))
    assert not (out[total:] != 0xA5).any()
    if digits == b"0123456789ABCDEF":
        assert bytes(out[:total]) == b"".join(h + hex_lines.x_lines(p, width) + b"\n" for h, p in records)
        assert hex_lines.x_records([h for h, _ in records], [p for _, p in records], width).tobytes() \
            == bytes(out[:total])


def test_x_records_refuses_ends_out_of_their_buffers_and_a_short_out():
    x_records, digits = hex_lines._x_records.native_function(), hex_lines._UPPER_DIGITS
    heads, head_ends, payloads, payload_ends = _record_arrays([(b"h\n", b"abc"), (b"", b"")])
    assert x_records(heads, head_ends, payloads, payload_ends, 2, np.zeros(19, np.uint8), digits) == 19
    with pytest.raises(ValueError, match="too small"):
        x_records(heads, head_ends, payloads, payload_ends, 2, np.zeros(18, np.uint8), digits)
    for bad_heads, bad_payloads in (([3, 2], [3, 3]), ([2, 2], [4, 4]), ([-1, 2], [3, 3]), ([2, 2], [3, 1])):
        with pytest.raises(ValueError, match="do not rise within"):
            x_records(heads, np.array(bad_heads, np.int64), payloads, np.array(bad_payloads, np.int64), 2,
                      np.zeros(99, np.uint8), digits)
    with pytest.raises(ValueError, match="differ in length"):
        x_records(heads, head_ends, payloads, payload_ends[:1], 2, np.zeros(99, np.uint8), digits)
    with pytest.raises(ValueError, match="at least 1"):
        x_records(heads, head_ends, payloads, payload_ends, 0, np.zeros(99, np.uint8), digits)
    with pytest.raises(TypeError, match="head_ends"):
        x_records(heads, head_ends.astype(np.int32), payloads, payload_ends, 2, np.zeros(99, np.uint8), digits)
    with pytest.raises(ValueError, match="heads for"):
        hex_lines.x_records([b"h"], [], 25)


@settings(max_examples=150)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=40), st.integers(1, 8),
       st.integers(0, 5), st.integers(0, 5), st.booleans())
def test_numbers_placed_alike(values, width, at, slack, big_endian):
    bits = np.array(values, np.float64).view(np.uint64)
    row_length = at + width + slack
    flat = np.full(len(values) * row_length + 3, 0xEE, np.uint8)
    _same(sas_numbers._put_high_bytes, bits, flat, row_length, at, width, big_endian)


@settings(max_examples=150)
@given(st.sampled_from([np.float64, np.float32, np.int32, np.int64]), st.binary(max_size=320), st.integers(1, 8),
       st.integers(0, 5), st.integers(0, 5), st.booleans(), st.sampled_from([None, 0, 1, 7, 8, 13]),
       st.sampled_from([0, 3653, 315_619_200_000_000, 2 ** 63 - 1]), st.sampled_from([1.0, 1e6, 1e9, 0.0]))
def test_arrow_slots_placed_alike(dtype, raw, width, at, slack, big_endian, validity_offset, add, divisor):
    values = np.frombuffer(raw[:len(raw) // np.dtype(dtype).itemsize * np.dtype(dtype).itemsize], dtype)
    add = add if np.dtype(dtype).kind == "i" else 0
    bitmap = (np.resize(np.frombuffer(bytes(reversed(raw)), np.uint8), (validity_offset + len(values) + 7) // 8 + 1)
              if validity_offset is not None and len(raw) else np.zeros(0, np.uint8))
    row_length = at + width + slack
    flat = np.full(len(values) * row_length + 3, 0xEE, np.uint8)
    _same(sas_numbers._put_arrow_numbers, values, bitmap, validity_offset or 0, add, divisor, flat, row_length, at,
          width, big_endian)


def test_the_arrow_slots_kernel_refuses_what_does_not_fit():
    put = sas_numbers._put_arrow_numbers.native_function()
    values, bitmap = np.arange(4, dtype=np.int64), np.array([0b1011], np.uint8)
    flat = np.zeros(32, np.uint8)
    put(values, bitmap, 4, 3653, 1.0, flat, 8, 0, 8, False)
    assert flat.view(np.int64)[::1].tolist() == [0xFFFFFE0000000000 - (1 << 64)] * 4  # bits 4-7: all null
    put(values, bitmap, 0, 3653, 1.0, flat, 8, 0, 8, False)
    assert flat.view(np.float64)[[0, 1, 3]].tolist() == [3653.0, 3654.0, 3656.0]
    for call, match in (((values, bitmap, 5, 0, 1.0, flat, 8, 0, 8, False), "bitmap does not hold"),
                        ((values, bitmap, -1, 0, 1.0, flat, 8, 0, 8, False), "bitmap does not hold"),
                        ((values.view(np.float64), bitmap, 0, 1, 1.0, flat, 8, 0, 8, False), "added to floating"),
                        ((values, bitmap, 0, 0, 1.0, flat[:31], 8, 0, 8, False), "do not hold"),
                        ((values, bitmap, 0, 0, 1.0, flat, 8, 1, 8, False), "do not hold"),
                        ((values, bitmap, 0, 0, 1.0, flat, 8, 0, 9, False), "not 1 to 8"),
                        ((values, bitmap, 0, 0, 1.0, values.view(np.uint8), 8, 0, 8, False), "overlaps"),
                        ((values[:1], bitmap, 0, 0, 1.0, bitmap, 1, 0, 1, False), "overlaps")):
        with pytest.raises(ValueError, match=match):
            put(*call)
    for wrong in (values.view(np.uint64), values.astype(np.int16), values.astype(np.float16), values.reshape(2, 2)):
        with pytest.raises(TypeError, match="values"):
            put(wrong, bitmap, 0, 0, 1.0, flat, 8, 0, 8, False)
    with pytest.raises(ValueError, match="aligned"):
        put(np.zeros(33, np.uint8)[1:].view(np.int64), bitmap, 0, 0, 1.0, flat, 8, 0, 8, False)


@settings(max_examples=150)
@given(st.lists(st.text(max_size=30), max_size=40), st.integers(0, 5), st.integers(0, 5),
       st.sampled_from([0x20, 0x40, 0]), st.integers(0, 70))
def test_text_placed_alike(values, at, slack, space, spare):
    encoded = [v.encode() for v in values]
    width = max([len(e) for e in encoded] + [spare])
    offsets = np.concatenate([[0], np.cumsum([len(e) for e in encoded])]).astype(np.int64)
    data = np.frombuffer(b"".join(encoded) + bytes(spare), np.uint8)  # values ending near or far from its end
    row_length = at + width + slack
    flat = np.full(len(values) * row_length + 3, 0xEE, np.uint8)
    _same(strings._put_padded, data, offsets, space, flat, row_length, at, width)


def test_the_write_kernels_refuse_what_does_not_fit():
    x_lines, put_high_bytes, put_padded = (k.native_function() for k in (hex_lines._x_lines,
                                                                          sas_numbers._put_high_bytes,
                                                                          strings._put_padded))
    payload, digits = np.frombuffer(b"abc", np.uint8), hex_lines._UPPER_DIGITS
    assert x_lines(payload, 2, np.zeros(12, np.uint8), digits) == 12  # "X 6162\nX 63\n"
    with pytest.raises(ValueError, match="too small"):
        x_lines(payload, 2, np.zeros(11, np.uint8), digits)
    with pytest.raises(ValueError, match="at least 1"):
        x_lines(payload, 0, np.zeros(99, np.uint8), digits)
    with pytest.raises(ValueError, match="16 digits"):
        x_lines(payload, 2, np.zeros(12, np.uint8), digits[:15])
    bits = np.zeros(2, np.uint64)
    put_high_bytes(bits, np.zeros(16, np.uint8), 8, 0, 8, True)
    for flat, row_length, at, width in ((15, 8, 0, 8), (16, 8, 1, 8), (16, 8, -1, 1), (99, 8, 0, 9), (99, 8, 0, 0),
                                        (99, (1 << 62) + 1, 0, 8)):
        with pytest.raises(ValueError, match="do not fit"):
            put_high_bytes(bits, np.zeros(flat, np.uint8), row_length, at, width, True)
    with pytest.raises(TypeError, match="bits"):
        put_high_bytes(bits.view(np.float64), np.zeros(16, np.uint8), 8, 0, 8, True)
    data, offsets = np.frombuffer(b"abcdef", np.uint8), np.array([0, 2, 6], np.int64)
    put_padded(data, offsets, 32, np.zeros(8, np.uint8), 4, 0, 4)
    for call, match in (((data, offsets, 32, np.zeros(8, np.uint8), 4, 0, 3), "no longer than the width"),
                        ((data, np.array([0, 4, 2], np.int64), 32, np.zeros(8, np.uint8), 4, 0, 4), "rise"),
                        ((data, np.array([0, 2, 7], np.int64), 32, np.zeros(8, np.uint8), 4, 0, 4), "inside data"),
                        ((data, offsets, 32, np.zeros(7, np.uint8), 4, 0, 4), "do not hold"),
                        ((data, offsets, 32, np.zeros(8, np.uint8), 4, 1, 4), "do not hold"),
                        ((data, offsets, 256, np.zeros(8, np.uint8), 4, 0, 4), "not a byte")):
        with pytest.raises(ValueError, match=match):
            put_padded(*call)
    rows = np.zeros(64, np.uint8)  # the rows written over the values they are made of: refused
    with pytest.raises(ValueError, match="overlaps"):
        put_padded(rows[:6], offsets, 32, rows, 8, 0, 8)


# ---- hex of dumps ------------------------------------------------------------------------------------

def _independent_dump(tmp_path, width, seed):
    e = enc.Encoder(encoding=546, long_size=4, nul=True, seq_big_endian=True, ccsid=1208)
    rows = [[i * 1.5, "row %d %s" % (i, "é" * (i % 3))] for i in range(40 + seed)]
    variables = [enc.Var("X", "num", 8), enc.Var("NAME", "char", 12)]
    msgs = e.transmission(b"\x11" * 24, b"\x22" * 24, b"app", [
        e.dataset_attachment(b"K" * 16, "WORK", "T", variables, rows, max_payload=97 + seed)])
    return enc.write_dump(tmp_path / f"indep{width}.dmp", msgs, width=width)


def _dump_texts(tmp_path):
    for name in DUMPS:
        with open(os.path.join(SAMPLES, name), "rb") as f:
            yield f.read()
    for width, seed in ((25, 0), (16, 3), (1, 1), (4000, 2)):
        with open(_independent_dump(tmp_path, width, seed), "rb") as f:
            yield f.read()


def _decode_spans_twins(text: bytes, spans, heads, first=0, room=5):
    """``_decode_spans`` in C and numba over text, as dump_spans._decode_piece calls it; returns
    the C kernel's result."""
    starts = np.array([s for s, _ in spans], dtype=np.int64)
    ends = np.array([e for _, e in spans], dtype=np.int64)
    heads = np.array(heads, dtype=np.int64)
    view = np.frombuffer(text, dtype=np.uint8)
    out = np.full(room + int(((ends - starts) // 2).sum()), 0xA5, dtype=np.uint8)
    head = np.full(int(heads.sum()), 0x5A, dtype=np.uint8)
    lengths = np.full(len(spans), -7, dtype=np.int64)
    return _same(dump_spans._decode_spans, view, starts, ends, heads, first, out, room, head, 0, lengths)


def _spans(text):
    return [(m.file_offset, m.file_end) for m in parse_dump(text, "x.dmp")]


def test_dump_spans_decode_alike(tmp_path):
    for text in _dump_texts(tmp_path):
        spans = _spans(text)
        assert spans
        for heads in ([0] * len(spans), [4] * len(spans), [10 ** 6] * len(spans)):
            done, _, _ = _decode_spans_twins(text, spans, heads)
            assert done == len(spans)
        assert _decode_spans_twins(text, spans, [1] * len(spans), first=len(spans) // 2)[0] == len(spans)


def test_x_runs_decode_alike(tmp_path):
    for text in _dump_texts(tmp_path):
        view = np.frombuffer(text, dtype=np.uint8)
        starts = [i for i in range(len(text)) if text[i:i + 2] == b"X " and (i == 0 or text[i - 1] == 10)]
        for pos in starts[:200]:
            end, written = _same(hex_lines.x_run, view, pos, len(text), np.zeros(len(text) // 2, np.uint8))
            assert end > pos and written >= 0


def test_a_message_larger_than_the_digit_block(tmp_path):
    payload = bytes(range(256)) * 200  # 100 KiB of digits: three blocks
    for width in (25, 3000, len(payload)):
        text = b"A MST 8\n" + b"".join(b"X " + payload[i:i + width].hex().encode() + b"\n"
                                        for i in range(0, len(payload), width))
        assert _decode_spans_twins(text, [(0, len(text))], [100])[:1] == (1,)
        at = text.index(b"X ")
        out = np.zeros(len(text), np.uint8)
        assert _same(hex_lines.x_run, np.frombuffer(text, np.uint8), at, len(text), out) == (len(text) - 1,
                                                                                               len(payload))


REFUSED = [b"A MST 8\nX 0G\n", b"A MST 8\nX 012\n", b"A MST 8\nX\n", b"A MST 8\nS text\n", b"A MST 8\n",
           b"A MST 8\nX 00\nA CCS 1\n", b"A MST 8\nX 00\r\n\rX 00\n", b"X 00\nX 0\n\nX 00\n", b"N\nT abc\n",
           b"X 0A\nX 0A0\n", b"X 0A0B\nX 0A\nX 0A0BZZ\n"]


@pytest.mark.parametrize("text", REFUSED)
def test_spans_and_runs_the_kernels_refuse_are_refused_alike(text):
    done, w, hw = _decode_spans_twins(text, [(0, len(text))], [1])
    assert (done, w, hw) == (0, 5, 0)
    at = text.find(b"X ")
    if at >= 0:
        _same(hex_lines.x_run, np.frombuffer(text, np.uint8), at, len(text), np.zeros(len(text), np.uint8))


@settings(max_examples=300)
@given(st.sampled_from(range(len(DUMPS))),
       st.lists(st.tuples(st.integers(0, 10 ** 6), st.sampled_from(b"0aFGX \n\r*AN~<\x00\xff")), max_size=10),
       st.integers(0, 64), st.integers(0, 50))
@example(0, [(4220, ord("A"))], 0, 0)
def test_garbled_dumps_decode_alike(which, edits, cut, head):
    with open(os.path.join(SAMPLES, DUMPS[which]), "rb") as f:
        good = f.read()
    spans = _spans(good)
    bad = bytearray(good)
    for position, byte in edits:
        bad[position % len(bad)] = byte
    text = bytes(bad[:len(bad) - cut])
    spans = [(s, min(e, len(text))) for s, e in spans if s <= len(text)]
    _decode_spans_twins(text, spans, [head] * len(spans))
    view = np.frombuffer(text, np.uint8)
    for pos in [i for i in range(len(text) - 1) if text[i:i + 2] == b"X "][:40]:
        _same(hex_lines.x_run, view, pos, len(text), np.zeros(len(text) // 2 + 1, np.uint8))


@settings(max_examples=300)
@given(st.binary(max_size=300), st.lists(st.tuples(st.integers(0, 300), st.integers(0, 300)), max_size=5),
       st.integers(0, 8))
def test_any_bytes_decode_alike(text, cuts, head):
    text = b"A MST 8\nX " + text
    spans = sorted((min(a, b) % (len(text) + 1), max(a, b) % (len(text) + 1)) for a, b in cuts) or [(0, len(text))]
    spans = [(s, max(s, e)) for s, e in spans]
    _decode_spans_twins(text, spans, [head] * len(spans))
    _same(hex_lines.x_run, np.frombuffer(text, np.uint8), 8, len(text), np.zeros(len(text), np.uint8))


def test_the_c_kernels_refuse_buffers_too_small_or_of_another_type():
    text = b"X 0A0B\n"
    view = np.frombuffer(text, np.uint8)
    one = np.array([0], np.int64)
    with pytest.raises(ValueError, match="does not fit"):
        dump_spans._decode_spans.native_function()(view, one, np.array([7], np.int64), one, 0,
                                                   np.zeros(1, np.uint8), 0, np.zeros(0, np.uint8), 0, one.copy())
    with pytest.raises(ValueError, match="outside"):
        dump_spans._decode_spans.native_function()(view, one, np.array([8], np.int64), one, 0,
                                                   np.zeros(4, np.uint8), 0, np.zeros(0, np.uint8), 0, one.copy())
    with pytest.raises(TypeError, match="starts"):
        dump_spans._decode_spans.native_function()(view, one.astype(np.int32), one, one, 0,
                                                   np.zeros(4, np.uint8), 0, np.zeros(0, np.uint8), 0, one.copy())
    with pytest.raises(ValueError, match="too small"):
        hex_lines.x_run.native_function()(view, 0, len(text), np.zeros(1, np.uint8))
    with pytest.raises(ValueError, match="outside"):
        hex_lines.x_run.native_function()(view, 0, len(text) + 1, np.zeros(9, np.uint8))
    with pytest.raises(ValueError, match="outside"):
        sas_numbers._gather_fields.native_function()(np.zeros(8, np.uint8), 8, 1, np.array([4], np.int64),
                                                     np.array([8], np.int64), True, np.zeros((1, 1), np.uint64),
                                                     np.zeros((1, 1), bool))
    with pytest.raises(ValueError, match="outside"):
        strings._trim_and_gather.native_function()(np.zeros(8, np.uint8), 8, 1, np.array([0], np.int64),
                                                   np.array([8], np.int64), 32, *strings._NO_TABLE, True,
                                                   np.zeros((1, 2), np.int64), np.zeros(7, np.uint8),
                                                   np.array([0, 8], np.int64), np.zeros(1, np.int64))
    with pytest.raises(ValueError, match="sizes"):  # no bad row for the field
        strings._trim_and_gather.native_function()(np.zeros(8, np.uint8), 8, 1, np.array([0], np.int64),
                                                   np.array([8], np.int64), 32, *strings._NO_TABLE, True,
                                                   np.zeros((1, 2), np.int64), np.zeros(8, np.uint8),
                                                   np.array([0], np.int64), np.zeros(0, np.int64))
    with pytest.raises(TypeError, match="out"):
        sas_dataset._sas_to_arrow_time.native_function()(np.zeros(2), np.zeros(2, bool), 0, np.zeros(2))


def _misaligned(values, dtype) -> np.ndarray:
    """``values`` as an array of ``dtype`` 3 bytes past an aligned address (np.frombuffer at an offset)."""
    raw = np.zeros(np.dtype(dtype).itemsize * len(values) + 16, np.uint8)
    start = (-raw.ctypes.data) % 8 + 3
    array = raw[start:start + np.dtype(dtype).itemsize * len(values)].view(dtype)
    array[:] = values
    assert not array.flags.aligned
    return array


def test_misaligned_arrays_are_refused_not_read():
    # Found by fuzz/native_diff.py under UBSan: decode_spans read ``starts`` through an int64_t
    # pointer 3 bytes off its alignment ("load of misaligned address"), undefined behaviour in C.
    # The C kernels now refuse such arrays; numba, the reference, reads them (the project's callers
    # never make them: numpy allocates aligned).
    text = np.frombuffer(b"A MST 8\nX 0A0B\n", np.uint8)
    starts, ends, heads = _misaligned([0], np.int64), np.array([len(text)], np.int64), np.zeros(1, np.int64)
    lengths, out = np.zeros(1, np.int64), np.zeros(8, np.uint8)
    with pytest.raises(ValueError, match="starts: the array is not aligned to its 8-byte items"):
        dump_spans._decode_spans.native_function()(text, starts, ends, heads, 0, out, 0, out[:0], 0, lengths)
    assert dump_spans._decode_spans.compiled()(text, starts, ends, heads, 0, out, 0, out[:0], 0, lengths) == (1, 2, 0)
    assert out[:2].tobytes() == b"\x0a\x0b"
    flat, widths = np.zeros(8, np.uint8), np.array([8], np.int64)
    with pytest.raises(ValueError, match="offsets: the array is not aligned"):
        sas_numbers._gather_fields.native_function()(flat, 8, 1, _misaligned([0], np.int64), widths, True,
                                                     np.zeros((1, 1), np.uint64), np.zeros((1, 1), bool))
    with pytest.raises(ValueError, match="values: the array is not aligned"):
        sas_dataset._sas_to_arrow_time.native_function()(_misaligned([1.0], np.float64), np.zeros(1, bool), 0,
                                                         np.zeros(1, np.int32))
    with pytest.raises(ValueError, match="bad_rows: the array is not aligned"):
        strings._trim_and_gather.native_function()(np.zeros(8, np.uint8), 8, 1, np.array([0], np.int64),
                                                   np.array([8], np.int64), 32, *strings._NO_TABLE, True,
                                                   np.zeros((1, 2), np.int64), np.zeros(8, np.uint8),
                                                   np.array([0], np.int64), _misaligned([0], np.int64))
    # One-byte items are aligned anywhere: a text at an odd address is read.
    odd_text = np.frombuffer(b"_A MST 8\nX 0A0B\n", np.uint8)[1:]
    _decode_spans_twins(odd_text.tobytes(), [(0, len(odd_text))], [0])
    assert hex_lines.x_run.native_function()(odd_text, 8, len(odd_text), np.zeros(8, np.uint8)) == (14, 2)


def test_heads_larger_than_head_out_are_refused_before_any_sum_overflows():
    # Found by fuzz/native_diff.py under UBSan: spans of empty X lines (no digit: nothing written)
    # with heads of 2**63 - 1 each made decode_spans add them to hw, "signed integer overflow:
    # 1 + 9223372036854775807" (undefined behaviour in C). The slots of every head must lie in
    # head_out (the caller reserves them): checked before decoding.
    text = np.frombuffer(b"X \nX \n", np.uint8)
    starts, ends, lengths = np.array([0, 3], np.int64), np.array([3, 6], np.int64), np.zeros(2, np.int64)
    decode = dump_spans._decode_spans.native_function()
    for heads, hw in (([2 ** 63 - 1, 2 ** 63 - 1], 1), ([2, 3], 0), ([0, 0], 5)):
        with pytest.raises(ValueError, match="outside head_out|hw"):
            decode(text, starts, ends, np.array(heads, np.int64), 0, np.zeros(4, np.uint8), 0, np.zeros(4, np.uint8),
                   hw, lengths)
    # Heads with their slots: both kernels give the empty payloads.
    assert _decode_spans_twins(b"X \nX \n", [(0, 3), (3, 6)], [2, 2]) == (2, 5, 4)


# ---- numeric, character and temporal fields --------------------------------------------------------------

@settings(max_examples=200)
@given(st.binary(min_size=1, max_size=400), st.integers(1, 40), st.data())
def test_number_fields_gather_alike(data, stride, draw):
    count = len(data) // stride
    flat = np.frombuffer(data[:count * stride], np.uint8)
    fields = draw.draw(st.lists(st.tuples(st.integers(0, stride - 1), st.integers(1, 8)), max_size=6))
    fields = [(o, min(w, stride - o)) for o, w in fields if stride - o >= 1]
    offsets = np.array([o for o, _ in fields], np.int64)
    widths = np.array([w for _, w in fields], np.int64)
    for little in (True, False):
        bits = np.full((len(fields), count), 3, np.uint64)
        nan = np.zeros((len(fields), count), bool)
        _same(sas_numbers._gather_fields, flat, stride, count, offsets, widths, little, bits, nan)


def test_number_fields_of_nan_patterns_gather_alike():
    values = np.array([np.nan, -np.inf, 1.0, 0.0, -0.0], np.float64)
    patterns = np.concatenate([values.view(np.uint64), [0x7FF0000000000001, 0xFFF8000000000000, 0x7FF0000000000000]])
    for order in ("<u8", ">u8"):
        flat = patterns.astype(order).view(np.uint8)
        bits, nan = np.zeros((1, len(patterns)), np.uint64), np.zeros((1, len(patterns)), bool)
        _same(sas_numbers._gather_fields, flat, 8, len(patterns), np.array([0], np.int64), np.array([8], np.int64),
              order == "<u8", bits, nan)


CODE_PAGES = (1208, 37, 819, 273, 1047)


@settings(max_examples=200)
@given(st.binary(max_size=300), st.integers(1, 30), st.sampled_from(CODE_PAGES), st.booleans(), st.data())
def test_character_fields_gather_alike(data, stride, ccsid, check_utf8, draw):
    count = len(data) // stride
    # Blanks and NULs are what trimming looks at: make plenty of them.
    flat = np.frombuffer(data[:count * stride], np.uint8).copy()
    codepage = code_page(ccsid)
    flat[flat % 3 == 0] = codepage.space
    flat[flat % 7 == 1] = 0
    fields = draw.draw(st.lists(st.tuples(st.integers(0, stride - 1), st.integers(0, stride)), max_size=5))
    fields = [(o, min(w, stride - o)) for o, w in fields]
    offsets = np.array([o for o, _ in fields], np.int64)
    widths = np.array([w for _, w in fields], np.int64)
    expansion = 1 if codepage.is_utf8 else 4
    regions = np.concatenate([[0], np.cumsum(count * widths * expansion)]).astype(np.int64)
    table = strings._NO_TABLE if codepage.is_utf8 else (codepage.utf8_bytes, codepage.utf8_length)
    ends = np.full((len(fields), count + 1), -1, np.int64)
    out = np.full(int(regions[-1]), 0xEE, np.uint8)
    _same(strings._trim_and_gather, flat, stride, count, offsets, widths, codepage.space, table[0], table[1],
          check_utf8, ends, out, regions, np.full(len(fields), 7, np.int64))


@pytest.mark.parametrize("blank", [0x20, 0x40, 0, -1])
def test_character_fields_of_every_width_to_100_gather_alike(blank):
    # The C kernel copies and trims a field of up to 64 bytes in 16-byte blocks, its last bytes by
    # stores of 16, 8, 4 or 1 bytes by the width: each width 0-100, with values of every length
    # ending in a blank, a NUL, ASCII, a 2-byte character or a lead byte cut off, fields side by
    # side and the last at the row's end (the blocks would run past the rows there: the byte loop).
    # ``out`` starts as 0xEE: a byte written past a value's field would differ from numba's.
    pad = blank if 0 <= blank < 256 else 0x20
    endings = [b"", b"x", b"\x00", bytes([pad]), "é".encode(), b"\xc3", b"\x80", "€".encode()[:2]]
    for width in range(0, 101):
        values = [(b"ab" * 60)[:length] + ending for length in sorted({0, 1, 7, 15, 16, 31, 63, width})
                  for ending in endings]
        values = [v[:width].ljust(width, bytes([pad])) for v in values]
        widths = [width, 3, width]
        stride = 2 * width + 3 + 5  # five bytes of lead bytes between the first two fields
        offsets = [0, width + 5, width + 8]
        flat = np.full(len(values) * stride, 0xC3, np.uint8)
        for r, value in enumerate(values):
            mirrored = values[-1 - r]
            flat[r * stride:r * stride + width] = list(value)
            flat[r * stride + width + 5:r * stride + width + 8] = list(b"\x00 a")
            flat[r * stride + width + 8:(r + 1) * stride] = list(mirrored)
        count = len(values)
        regions = np.concatenate([[0], np.cumsum(count * np.array(widths))]).astype(np.int64)
        for check_utf8 in (True, False):
            _same(strings._trim_and_gather, flat, stride, count, np.array(offsets, np.int64),
                  np.array(widths, np.int64), blank, *strings._NO_TABLE, check_utf8,
                  np.full((3, count + 1), -1, np.int64), np.full(int(regions[-1]), 0xEE, np.uint8), regions,
                  np.full(3, 7, np.int64))


# Ill-formed UTF-8 of every kind, and characters that are not: a field's first bad row must be the
# one Python's strict decoder refuses, wherever in the field (and in a 16-byte block) it lies.
_UTF8_PIECES = [b"a", b" ", b"\x00", "é".encode(), "ß".encode(), "€".encode(), "東".encode(), "😀".encode(),
                b"\xc2\x80", b"\xdf\xbf", b"\xe0\xa0\x80", b"\xed\x9f\xbf", b"\xef\xbf\xbf", b"\xf0\x90\x80\x80",
                b"\xf4\x8f\xbf\xbf",  # the limits of each length, well formed
                b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\x80", b"\xe0\x9f\xbf", b"\xf0\x8f\xbf\xbf",  # overlong
                b"\xed\xa0\x80", b"\xed\xbf\xbf",  # surrogates
                b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xff", b"\xfe",  # past U+10FFFF, never bytes
                b"\x80", b"\xbf",  # a continuation byte alone
                b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98", b"\xe2\x82 ", b"\xc3\x00"]  # cut short, by a blank or a NUL


def _bad_rows_by_python(flat, stride, count, offsets, widths, blank):
    bad = []
    for at, width in zip(offsets, widths):
        rows = [bytes(flat[r * stride + at:r * stride + at + width]).rstrip(bytes([blank, 0])) for r in range(count)]
        bad.append(next((r for r, v in enumerate(rows) if not _decodes(v)), -1))
    return bad


def _decodes(value: bytes) -> bool:
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@settings(max_examples=300)
@given(st.lists(st.lists(st.sampled_from(_UTF8_PIECES), max_size=30).map(b"".join), min_size=1, max_size=14),
       st.lists(st.sampled_from([1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 47, 63, 64, 65, 100]), min_size=1, max_size=3),
       st.integers(0, 20))
@example([b"ok", "naïve".encode(), b"a\xc3"], [3], 0)  # a lead byte at the field's end
@example(["Straße über".encode()] * 3 + [b"\xe0\x80\x80"], [63, 64, 65], 0)  # ASCII and 2-byte text, then overlong
@example([b"\xed\xa0\x80", b"x"], [4, 20], 5)  # a surrogate
@example(["é".encode() * 32, "é".encode() * 31 + b"a\xc3"], [64], 0)  # a lead byte as the 64th
def test_utf8_of_character_fields_is_checked_as_pythons_decoder_does(values, widths, gap):
    # Row r holds values r, r + 1, ... in fields of ``widths``, each value cut to its field and the
    # rest blanks; ``gap`` bytes of lead and continuation bytes between the fields and at the row's
    # end: the 16-byte blocks the check loads must not make the bytes past a value count.
    offsets, at = [], gap
    for width in widths:
        offsets.append(at)
        at += width + gap
    stride = at
    flat = np.resize(np.array([0xC3, 0xA9, 0x80, 0xE2], np.uint8), len(values) * stride)
    for r in range(len(values)):
        for j, (o, width) in enumerate(zip(offsets, widths)):
            value = values[(r + j) % len(values)][:width]
            flat[r * stride + o:r * stride + o + width] = list(value.ljust(width, b" "))
    offsets, widths = np.array(offsets, np.int64), np.array(widths, np.int64)
    count = len(values)
    regions = np.concatenate([[0], np.cumsum(count * widths)]).astype(np.int64)
    args = (flat, stride, count, offsets, widths, 0x20, *strings._NO_TABLE, True,
            np.zeros((len(widths), count + 1), np.int64), np.zeros(int(regions[-1]), np.uint8), regions,
            np.zeros(len(widths), np.int64))
    _same(strings._trim_and_gather, *args)
    bad_rows = args[-1].copy()
    strings._trim_and_gather.native_function()(*args[:-1], bad_rows)
    assert bad_rows.tolist() == _bad_rows_by_python(flat, stride, count, offsets, widths, 0x20)



LIMITS = [sas_dataset.MIN_SAS_DAY, sas_dataset.MAX_SAS_DAY + 1, sas_dataset.MIN_SAS_DAY * 86400.0,
          (sas_dataset.MAX_SAS_DAY + 1) * 86400.0, 86400.0, sas_dataset.MAX_INTERVAL_SECONDS]


@settings(max_examples=300)
@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                          st.sampled_from(LIMITS).flatmap(lambda x: st.sampled_from([x, -x, np.nextafter(x, 0),
                                                                                     np.nextafter(x, 2 * x)])),
                          st.floats(-1e6, 1e6), st.floats(0, 86400), st.floats(-3e11, 3e11)), max_size=20),
       st.lists(st.booleans(), max_size=20), st.integers(0, 3))
def test_dates_and_times_convert_alike(values, missing, kind):
    values = np.array(values, np.float64)
    missing = np.array((missing + [False] * len(values))[:len(values)], bool)
    out = np.full(len(values), 77, np.int32 if kind == 0 else np.int64)
    _same(sas_dataset._sas_to_arrow_time, values, missing, kind, out)


def test_values_out_of_range_are_found_alike():
    for kind, bad in ((0, sas_dataset.MAX_SAS_DAY + 1), (1, -1e20), (2, 86400.0), (3, np.inf), (3, np.nan)):
        values = np.array([1.0, 2.5, bad, 3.0])
        out = np.zeros(4, np.int32 if kind == 0 else np.int64)
        assert _same(sas_dataset._sas_to_arrow_time, values, np.zeros(4, bool), kind, out) == 2


# ---- TIB/RV ATO rows ------------------------------------------------------------------------------------------

# Two numerics (one of 4 bytes) and character variables below, at and past the fast path's
# 64-byte block and one-byte size; three bytes of padding the rows leave as they find them.
RV_NUMERIC = np.array([True, True, False, False, False, False, False])
RV_LENGTHS = np.array([8, 4, 1, 12, 64, 65, 130], np.int64)
RV_LAYOUT = (RV_NUMERIC, RV_LENGTHS, int(RV_LENGTHS.sum()) + 3)


def _ato_pairs(rows) -> bytes:
    """The (vtype, value) fields of ``rows``, each (values, field name, whether strings end in NUL),
    built by rv_messages from the wire rules alone."""
    fields, fid = [], 3
    for values, name, nul in rows:
        for numeric, value in zip(RV_NUMERIC, values):
            fields.append(rv.i32(name, fid, 1 if numeric else 2))
            fields.append(rv.f64(name, fid + 1, value) if numeric else
                          rv.string(name, fid + 1, value) if nul else rv.field(name, fid + 1, 8, value))
            fid += 2
    return b"".join(fields)


def _ato_rows_twins(buffer: bytes, starts, ends, counts, layout=RV_LAYOUT, room=5):
    """``_ato_rows`` in C and numba over the messages at buffer[starts[m]:ends[m]], their rows
    written one after the other into a buffer of 0xA5; returns the C kernel's result."""
    numeric, lengths, obs_length = layout
    view = np.frombuffer(buffer, np.uint8)
    counts = np.array(counts, np.int64)
    out_starts = (room + np.concatenate([[0], np.cumsum(counts * obs_length)[:-1]])).astype(np.int64)
    out = np.full(room + int((counts * obs_length).sum()) + 7, 0xA5, np.uint8)
    return _same(observations._ato_rows, view, np.array(starts, np.int64), np.array(ends, np.int64), counts,
                 out_starts, numeric, lengths, (np.cumsum(lengths) - lengths).astype(np.int64), obs_length, out, 32)


def _rv_text(width: int):
    """Up to ``width`` bytes; now and then one more, which the variable cannot hold."""
    return st.tuples(st.binary(max_size=width), st.integers(0, 40)).map(
        lambda drawn: drawn[0].ljust(width + 1, b"!") if drawn[1] == 0 else drawn[0])


_RV_ROW = st.tuples(
    st.tuples(st.floats(), st.floats(), *(_rv_text(int(n)) for n in RV_LENGTHS[2:])),
    st.sampled_from(["ATO", "", "A-longer-field-name"]), st.booleans())


@settings(max_examples=300)
@given(st.lists(_RV_ROW, max_size=5), st.lists(_RV_ROW, max_size=5),
       st.lists(st.tuples(st.integers(0, 4000), st.integers(0, 255)), max_size=3),
       st.none() | st.integers(0, 4000), st.integers(-1, 1))
@example([(((1.0, 2.0, b"a", b"b" * 12, b"c" * 64, b"d" * 65, b"e" * 130), "ATO", True))] * 3, [], [], None, 0)
def test_ato_rows_read_alike(first, second, edits, cut, miscount):
    """Two ATO messages in one call, rows in every field shape the wire allows (unnamed fields,
    strings with and without their NUL, one a byte too long, sizes of 0x79 and a u16), garbled by
    a few bytes, the last cut short, a count that may be wrong by one."""
    one, two = _ato_pairs(first), _ato_pairs(second)
    buffer = bytearray(b"\x07" * 3 + one + two + b"\x00" * 4)
    for at, byte in edits:
        if at < len(buffer):
            buffer[at] = byte
    starts = [3, 3 + len(one)]
    ends = [starts[1], starts[1] + len(two) if cut is None else min(starts[1] + len(two), cut)]
    counts = [max(0, len(first) + miscount), len(second)]
    _ato_rows_twins(bytes(buffer), starts, ends, counts)


def test_ato_rows_of_our_writer_read_alike(tmp_path):
    short, long = ["", "é", "x" * 40, "y" * 62], ["", "z" * 65, "w" * 130]
    table = pa.table({"N": [float(i) for i in range(12)], "S": [short[i % len(short)] for i in range(12)],
                      "L": [long[i % len(long)] for i in range(12)]})
    path = tmp_path / "rows.rv"
    with open(path, "wb") as out:
        write_attachments_dump(out, [DatasetToWrite(table, "WORK", "ROWS")], format="tibrv",
                               options=WriteOptions(encoding=273))
    data = path.read_bytes()
    pos, atos = 0, []
    while pos < len(data):
        fields, end = read_message(data, pos)
        if fields and fields[0].name == "ATO":
            atos.append((fields[1].data_offset + len(fields[1].data), end, fields[0].value))
        pos = end
    assert atos and sum(count for *_, count in atos) == 12
    layout = (np.array([True, False, False]), np.array([8, 63, 260], np.int64), 331)
    assert _ato_rows_twins(data, *zip(*atos), layout=layout) == (0, 0, 0, 0, 0)


def test_the_ato_rows_kernel_refuses_arrays_that_do_not_match():
    one = np.zeros(1, np.int64)
    numeric, lengths, obs_length = RV_LAYOUT
    offsets = (np.cumsum(lengths) - lengths).astype(np.int64)
    run = observations._ato_rows.native_function()
    with pytest.raises(ValueError, match="sizes do not match"):
        run(np.zeros(8, np.uint8), one, one, np.zeros(2, np.int64), one, numeric, lengths, offsets, obs_length,
            np.zeros(obs_length, np.uint8), 32)
    with pytest.raises(ValueError, match="sizes do not match"):
        run(np.zeros(8, np.uint8), one, one, one, one, numeric[1:], lengths, offsets, obs_length,
            np.zeros(obs_length, np.uint8), 32)
    with pytest.raises(TypeError, match="starts"):
        run(np.zeros(8, np.uint8), one.astype(np.int32), one, one, one, numeric, lengths, offsets, obs_length,
            np.zeros(obs_length, np.uint8), 32)
    # rows that would not fit out: problem 8 before anything is written, as numba's kernel says
    out = np.zeros(obs_length, np.uint8)
    assert _same(observations._ato_rows, np.zeros(8, np.uint8), one, one + 8, one + 2, one, numeric, lengths,
                 offsets, obs_length, out, 32) == (8, 0, 0, 0, 0)


def _ato_call(rows):
    """The arguments of ``_ato_rows`` over one ATO message of ``rows`` (rv_messages' fields), out
    of 0xA5 bytes: (buf, starts, ends, counts, out_starts, numeric, lengths, offsets, obs_length, out, blank)."""
    numeric, lengths, obs_length = RV_LAYOUT
    pairs = _ato_pairs(rows)
    buf = np.frombuffer(b"\x07" * 3 + pairs, np.uint8)
    one = np.ones(1, np.int64)
    return [buf, one * 3, one * len(buf), one * len(rows), one * 0, numeric, lengths,
            (np.cumsum(lengths) - lengths).astype(np.int64), obs_length,
            np.full(obs_length * len(rows), 0xA5, np.uint8), 32]


_ATO_ROW = ((1.5, -2.0, b"a", b"b" * 12, b"c" * 64, b"d" * 65, b"e" * 130), "ATO", True)


def test_the_ato_rows_kernel_refuses_a_blank_that_is_not_a_byte():
    args = _ato_call([_ATO_ROW] * 2)
    assert _same(observations._ato_rows, *args) == (0, 0, 0, 0, 0)
    run = observations._ato_rows.native_function()
    for blank in (-1, 256, 32 + 256):  # numba writes 32 + 256 as 32: a caller's mistake, not a blank
        with pytest.raises(ValueError, match="not a byte"):
            run(*args[:-1], blank)


def test_the_ato_rows_kernel_refuses_rows_written_over_the_bytes_it_reads():
    # The rows go to out through restrict pointers, buf read through others: out within buf (a
    # caller passing one buffer twice) is refused, not undefined behaviour.
    args = _ato_call([_ATO_ROW] * 2)
    buf = args[0].copy()
    run = observations._ato_rows.native_function()
    for out in (buf, buf[1:], buf[len(buf) - 5:]):
        with pytest.raises(ValueError, match="overlaps"):
            run(buf, *args[1:9], out, 32)
    apart = np.concatenate([buf, np.full(len(args[9]), 0xA5, np.uint8)])  # one array, disjoint parts
    assert run(apart[:len(buf)], *args[1:9], apart[len(buf):], 32) == (0, 0, 0, 0, 0)


def test_ato_rows_of_no_variables_do_not_walk_a_huge_count():
    # No variable: a row reads and writes nothing, so however many the count says, the kernel
    # gives numba's answer (fields left over: problem 7 at the count) without a loop of that many
    # turns. The -O3 build dropped that empty loop anyway; built at -O0, the kernel before this
    # check did not return within a minute for a count of 2**40.
    buf, starts, ends, _, out_starts, *_ = _ato_call([_ATO_ROW])
    none = np.zeros(0, np.int64)
    for count in (0, 3):
        _same(observations._ato_rows, buf, starts, ends, np.array([count], np.int64), out_starts,
              np.zeros(0, bool), none, none, 0, np.zeros(4, np.uint8), 32)
    run = observations._ato_rows.native_function()
    huge = np.array([(1 << 63) - 1], np.int64)
    assert run(buf, starts, ends, huge, out_starts, np.zeros(0, bool), none, none, 0, np.zeros(4, np.uint8),
               32) == (7, 0, (1 << 63) - 1, 0, 3)
    assert run(buf, starts, starts, huge, out_starts, np.zeros(0, bool), none, none, 0, np.zeros(4, np.uint8),
               32) == (0, 0, 0, 0, 0)
