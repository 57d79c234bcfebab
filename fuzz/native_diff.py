"""Differential fuzzing of the C kernels (``cmi_datasource/_native.c``) against their numba
references (issue 30): "a faster path that returns one wrong byte is a regression".

One input drives one call of one kernel that has a C twin (``KERNELS``). Its first byte picks the
kernel, the next ``PARAMETER_BYTES`` are the call's parameters (read by ``Parameters``: lengths,
offsets, widths, heads, cuts, code pages, byte orders, output types, misaligned copies, a hex text
made of many copies of its lines or with CR line ends...) and the rest is the kernel's data: a
dump's text for the hex kernels, rows of observations, UTF-8 values, doubles. Both kernels then
run on copies of the same arguments and output buffers, filled with the same bytes:

* a call inside the kernel's contract (the bounds its numba docstring states and its callers
  keep) must give the same return value (the same refusal: the span, value or row that failed,
  the same ``-1``) and leave every output byte the same;
* a call outside it (an array not aligned to its items, a field past the row, a region past
  ``out``, ends that do not rise, a buffer smaller than what the call writes, huge declared
  heads...) is made to the C kernel alone,
  which must refuse it with ``ValueError`` or ``TypeError`` before writing out of bounds; the
  numba kernel, which trusts its callers, cannot take it. The hex kernels write as they go, so a
  buffer cut short is judged by what numba writes with room enough: the C kernel must refuse
  exactly when that reaches past the cut, and otherwise give numba's bytes.

A difference raises ``KernelMismatch``, which the harness records as a bug. ``fuzz/harness.py``
runs this under atheris (``make fuzz FUZZ_TARGETS=native_kernels``), ``scripts/sanitize_native.sh``
under AddressSanitizer and UBSan, and ``spark_tests/unit/test_native_diff.py`` for a bounded
number of Hypothesis examples.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Callable, Dict, List, Sequence, Tuple

import numpy as np

from cmi_datasource.arrow import strings
from cmi_datasource.charsets import code_page
from cmi_datasource.compiled import Kernel
from cmi_datasource.errors import Location
from cmi_datasource.payload import sas_dataset, sas_numbers
from cmi_datasource.transports import capture_format
from cmi_datasource.transports.mq import dump_spans, hex_lines
from cmi_datasource.transports.tibrv import observations
from cmi_datasource.transports.tibrv.wire import HEADER, RvField, field_bytes, read_fields

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(ROOT, "sample_queues")
PARAMETER_BYTES = 40
MAX_TEXT = 4 << 20  # a text inflated past this is cut: one input stays under a second
# Characters that change what the hex kernels take: digits of both cases, not-digits, line ends,
# the starts of the other lines of a dump.
HEX_DAMAGE = b"0aFfGgX \n\r*AN~<\x00\x80\xff"
CODE_PAGES = (None, 37, 819, 273, 1047, 1252, 850)  # None: UTF-8, no table
REFUSALS = (ValueError, TypeError, BufferError)


class KernelMismatch(AssertionError):
    """The C kernel and its numba reference disagree, or the C kernel took a call outside its
    bounds. ``signature`` names the kernel and the kind of difference (one bug per signature)."""

    def __init__(self, kernel: str, what: str, detail: str = ""):
        super().__init__(f"{kernel}: {what}" + (f": {detail}" if detail else ""))
        self.signature = f"native {kernel}: {what}"


class Parameters:
    """The parameter block of an input, read front to back; past its end every read is 0."""

    def __init__(self, block: bytes):
        self.block = block
        self.at = 0

    def integer(self, low: int, high: int) -> int:
        """An integer in [low, high], from as many bytes as the range needs."""
        span = high - low + 1
        size = 1 if span <= 1 << 8 else 2 if span <= 1 << 16 else 4 if span <= 1 << 32 else 8
        raw = self.block[self.at:self.at + size].ljust(size, b"\0")
        self.at += size
        return low + int.from_bytes(raw, "little") % span

    def choice(self, options: Sequence):
        return options[self.integer(0, len(options) - 1)]

    def chance(self, eighths: int) -> bool:
        """True with probability eighths / 8 over the byte's values."""
        return self.integer(0, 7) < eighths


def split_input(data: bytes) -> Tuple[int, Parameters, bytes]:
    """(kernel index, parameters, data) of a fuzz input."""
    which = data[0] if data else 0
    return which, Parameters(data[1:1 + PARAMETER_BYTES]), data[1 + PARAMETER_BYTES:]


def make_input(kernel: str, parameters: bytes, data: bytes) -> bytes:
    return bytes([list(KERNELS).index(kernel)]) + parameters[:PARAMETER_BYTES].ljust(PARAMETER_BYTES, b"\0") + data


def placed(array: np.ndarray, misaligned: int) -> np.ndarray:
    """A copy of ``array`` ``misaligned`` bytes past an aligned address (C-contiguous): odd alignments."""
    raw = np.zeros(array.nbytes + 8 + misaligned, np.uint8)
    start = (-raw.ctypes.data) % 8 + misaligned
    out = raw[start:start + array.nbytes].view(array.dtype).reshape(array.shape)
    out[...] = array
    return out


def odd_offset(p: Parameters) -> int:
    """Bytes past alignment for the arrays of wider items (0 most of the time: a misaligned array
    is refused by the C kernels, and only that is compared)."""
    offset = p.integer(0, 31)
    return offset if offset < 8 else 0


# -- running both ------------------------------------------------------------------------------------


def _plain(value):
    """A kernel's return value as plain ints (numba returns numpy integers, C Python ints)."""
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if value is None or isinstance(value, bool):
        return value
    return int(value)


def _copies(args: Sequence) -> list:
    return [placed(a, a.ctypes.data % 8) if isinstance(a, np.ndarray) else a for a in args]


def _outputs(args: Sequence) -> List[bytes]:
    return [a.tobytes() for a in args if isinstance(a, np.ndarray)]


def reference(kernel: Kernel, args: Sequence):
    """(result, every array argument's bytes after the call) of the numba kernel on copies of args."""
    copies = _copies(args)
    return _plain(kernel.compiled()(*copies)), _outputs(copies)


def native(kernel: Kernel, args: Sequence, name: str, refused_ok: bool = False):
    """The same for the C kernel; None when it refused the call (only when ``refused_ok``)."""
    function = kernel.native_function()
    if function is None:
        raise RuntimeError("cmi_datasource._native is not built or CMI_NATIVE=0: nothing to compare")
    copies = _copies(args)
    try:
        result = function(*copies)
    except REFUSALS as e:
        if refused_ok:
            return None
        raise KernelMismatch(name, "refused a call within its bounds", f"{type(e).__name__}: {e}") from e
    return _plain(result), _outputs(copies)


def misaligned(args: Sequence) -> bool:
    """Whether an array of ``args`` is not aligned to its items: numba takes it, the C kernels refuse
    it (their typed loads must be aligned), so only the refusal is compared."""
    return any(isinstance(a, np.ndarray) and a.ctypes.data % a.itemsize for a in args)


def same(kernel: Kernel, args: Sequence, name: str):
    """Both kernels on ``args`` (within the contract): same result, same bytes in every array;
    numba's result."""
    expected = reference(kernel, args)
    if misaligned(args):
        refused(kernel, args, name, "a misaligned array")
        return expected[0]
    got = native(kernel, args, name)
    _compare(name, got, expected)
    return expected[0]


# Arrays are compared by numpy's functions, not ``==``: atheris hooks every comparison operator
# of this (instrumented) module, and its hook on megabytes of bytes made the harness grow by
# about 30 KiB an input.
def _as_bytes(data: bytes) -> np.ndarray:
    return np.frombuffer(data, np.uint8)


def _same_bytes(a: bytes, b: bytes) -> bool:
    return len(a) == len(b) and bool(np.array_equal(_as_bytes(a), _as_bytes(b)))


def _compare(name: str, got, expected) -> None:
    if got[0] != expected[0]:
        raise KernelMismatch(name, "results differ", f"C {got[0]!r}, numba {expected[0]!r}")
    for i, (a, b) in enumerate(zip(got[1], expected[1])):
        if not _same_bytes(a, b):
            at = int(np.flatnonzero(_as_bytes(a) ^ _as_bytes(b))[0]) if len(a) == len(b) else -1
            raise KernelMismatch(name, "output bytes differ", f"array argument {i}, first at byte {at}")


def refused(kernel: Kernel, args: Sequence, name: str, why: str) -> None:
    """The C kernel alone on a call outside its contract: it must refuse it."""
    if native(kernel, args, name, refused_ok=True) is not None:
        raise KernelMismatch(name, "took a call outside its bounds", why)


def changed(array: np.ndarray, index: int, value: int) -> np.ndarray:
    """A copy of ``array`` with one item changed."""
    copy = array.copy()
    copy[index] = value
    return copy


def one_refused(p: Parameters, kernel: Kernel, args: Sequence, name: str, wrongs: Sequence[Tuple[str, int, object]]):
    """The C kernel on ``args`` with one argument made wrong, chosen among (why, argument index,
    wrong value): it must refuse the call."""
    why, position, value = p.choice(wrongs)
    bad = list(args)
    bad[position] = value
    refused(kernel, bad, name, why)


def written_extent(kernel: Kernel, args: Sequence, outputs: Sequence[int]) -> List[int]:
    """For each argument index in ``outputs`` (byte buffers): one past the last byte the numba
    kernel writes there, found by running it on buffers filled with 0x00, then 0xFF."""
    extents = [0] * len(outputs)
    for fill in (0x00, 0xFF):
        copies = _copies(args)
        for i in outputs:
            copies[i][...] = fill
        kernel.compiled()(*copies)
        for n, i in enumerate(outputs):
            changed = np.flatnonzero(np.not_equal(copies[i], fill))
            if len(changed):
                extents[n] = max(extents[n], int(changed[-1]) + 1)
    return extents


def cut_short(kernel: Kernel, args: list, outputs: Sequence[int], cuts: Sequence[int], name: str,
              reserved: Sequence[int] = ()) -> None:
    """The C kernel with the byte buffers at ``outputs`` cut to ``cuts`` bytes: it must refuse the
    call exactly when numba, with room, writes past a cut or a cut leaves less than ``reserved``
    bytes (what the kernel checks before it starts), and otherwise give numba's bytes."""
    if misaligned(args):  # refused whatever the buffers (``same``)
        return
    extents = written_extent(kernel, args, outputs)
    expected = reference(kernel, args)
    short = list(args)
    for i, cut in zip(outputs, cuts):
        short[i] = args[i][:cut]
    got = native(kernel, short, name, refused_ok=True)
    overflows = any(max(extent, need) > cut for extent, need, cut in zip(extents, [*reserved, *[0] * len(cuts)], cuts))
    if got is None:
        if not overflows:
            raise KernelMismatch(name, "refused a buffer large enough", f"writes end at {extents}, cut to {list(cuts)}")
        return
    if overflows:
        raise KernelMismatch(name, "wrote past a buffer cut short", f"writes end at {extents}, cut to {list(cuts)}")
    cut_expected = []
    array_index = 0
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            data = expected[1][array_index]
            cut_expected.append(data[:short[i].nbytes])
            array_index += 1
    _compare(name, got, (expected[0], cut_expected))


# -- real bytes under the input's -----------------------------------------------------------------------

DUMP_SAMPLES = ("mixed_types.dmp", "zos_785_37.dmp", "big_endian_273_819.dmp", "files.dmp",
                "seed000_external_file.dmp", "nightly_batch.dmp")


def _sample(name: str) -> bytes:
    with open(os.path.join(SAMPLES, name), "rb") as f:
        return f.read()


@functools.lru_cache(maxsize=None)
def dump_material() -> Tuple[bytes, ...]:
    return tuple(_sample(n) for n in DUMP_SAMPLES)


@functools.lru_cache(maxsize=None)
def row_material() -> Tuple[bytes, ...]:
    """Rows of observations and character values: every byte value, UTF-8 of several scripts (cut
    characters included), EBCDIC and ASCII text of the samples."""
    return (bytes(range(256)) * 2, "Zürich, 東京, Ωmega and a cut \xe9 \U0001F600".encode() * 9,
            "naïve".encode("cp037") * 40, dump_material()[1][:3000], ILL_FORMED_UTF8 * 4)


# Text of ASCII and 2-byte characters (what the C check decides without its DFA) between ill-formed
# UTF-8 of every kind: overlong forms, surrogates, code points past U+10FFFF, bytes never used,
# continuation bytes alone, characters cut by a blank, a NUL or a value's end.
ILL_FORMED_UTF8 = b"".join([
    "Straße über naïve".encode(), b"\xc0\xaf", "Zürich ".encode(), b"\xe0\x80\x80", b"\xed\xa0\x80 ",
    "déjà vu".encode(), b"\xf4\x90\x80\x80", b"\xf0\x8f\xbf\xbf", b"\xff\xfe", b"\x80 \xbf", "é".encode() * 20,
    b"\xc3 ", b"\xe2\x82 ", b"\xf0\x9f\x98\x00", "€😀東".encode(), b"\xc3"])


@functools.lru_cache(maxsize=None)
def double_material() -> Tuple[bytes, ...]:
    days = np.array([0.0, 21915.0, -1.0, 2936547.0, -138061.0, 86399.999, 1.5e9, 3e11, np.nan, 1e300, -0.0, 0.5])
    return (days.astype("<f8").tobytes() * 4, np.linspace(-3e11, 3e11, 97).astype("<f8").tobytes())


def on_material(p: Parameters, data: bytes, pool: Sequence[bytes]) -> bytes:
    """The input's data as it is, or written over one of ``pool`` (real bytes) at an offset the
    parameters give: libFuzzer shortens its inputs, and a short one still drives a whole dump."""
    # Data of its own (libFuzzer's corpus grows some) is mostly taken as it is: spliced into a
    # sample, a whole dump makes spans that hold a second message, which the kernels refuse.
    which = p.integer(0, (2 if len(data) < 256 else 4) * len(pool) - 1)
    if which >= len(pool):
        return data
    base = bytearray(pool[which])
    at = p.integer(0, 1 << 24) % (len(base) + 1)
    base[at:at + len(data)] = data
    return bytes(base)


# -- hex text ----------------------------------------------------------------------------------------


def hex_text(p: Parameters, data: bytes) -> bytes:
    """The input's text, reshaped as the parameters say: X lines repeated (runs past the 32 KiB
    digit block), joined into one long line, CR line ends, lower-case digits, damage deep inside."""
    text = on_material(p, data, dump_material())
    repeat = p.choice((1, 1, 1, 2, 3, 40, 700))
    if repeat > 1:
        lines = text.split(b"\n")
        text = b"\n".join(b"\n".join([line] * repeat) if line.startswith(b"X ") else line for line in lines)
    if p.chance(1):  # each message's X lines one line
        text = text.replace(b"\nX ", b"")
    if p.chance(1):
        text = text.replace(b"\n", b"\r\n")
    if p.chance(1):
        text = text.lower()
    text = text[:MAX_TEXT]
    damage = p.integer(0, 3) if p.chance(3) else 0
    if damage and text:
        edited = bytearray(text)
        for _ in range(damage):
            edited[p.integer(0, 1 << 24) % len(edited)] = p.choice(HEX_DAMAGE)
        text = bytes(edited)
    return text


def x_line_starts(text: bytes) -> List[int]:
    found, at = [0] if text.startswith(b"X ") else [], text.find(b"\nX ")
    while at >= 0 and len(found) < 10000:
        found.append(at + 1)
        at = text.find(b"\nX ", at + 1)
    return found


def _text_array(text: bytes, p: Parameters) -> np.ndarray:
    return placed(np.frombuffer(text, np.uint8), p.integer(0, 7))


def check_x_run(p: Parameters, data: bytes) -> None:
    text = hex_text(p, data)
    starts = x_line_starts(text)
    pos = p.choice(starts) if starts and p.chance(7) else p.integer(0, 1 << 24) % (len(text) + 1)
    size = len(text) - min(p.integer(0, 255) if p.chance(2) else 0, len(text) - pos)
    array = _text_array(text, p)
    room = (size - pos) // 2 + p.integer(0, 3)
    out = np.full(room, 0xA5, np.uint8)
    args = [array, pos, size, out]
    end, written = same(hex_lines.x_run, args, "x_run")
    if end >= 0 and not (pos < end <= size and 0 <= written <= (size - pos) // 2):
        raise KernelMismatch("x_run", "result outside the run", f"({end}, {written}) for text[{pos}:{size}]")
    if p.chance(2):  # out cut short
        cut_short(hex_lines.x_run, args, [3], [p.integer(0, room)], "x_run")
    if p.chance(1):
        bad_pos, bad_size = p.choice(((-1, size), (pos, len(text) + 1), (size + 1, size), (pos, -1)))
        refused(hex_lines.x_run, [array, bad_pos, bad_size, out], "x_run", f"text[{bad_pos}:{bad_size}]")


def _message_cuts(text: bytes) -> List[int]:
    cuts, at = [], text.find(b"* Index")
    while at >= 0 and len(cuts) < 5000:
        cuts.append(at)
        at = text.find(b"* Index", at + 1)
    return cuts


def _spans(p: Parameters, text: bytes) -> List[Tuple[int, int]]:
    if p.chance(5):  # as planned: one span a message
        cuts = _message_cuts(text) or [0]
        bounds = cuts + [len(text)]
        return [(bounds[i], bounds[i + 1]) for i in range(len(cuts))]
    count = p.integer(1, 8)
    spans = []
    for _ in range(count):
        a, b = p.integer(0, 1 << 24) % (len(text) + 1), p.integer(0, 1 << 24) % (len(text) + 1)
        spans.append((min(a, b), max(a, b)))
    return sorted(spans) if p.chance(6) else spans


def _heads(p: Parameters, count: int) -> List[int]:
    mode = p.integer(0, 3)
    if mode == 0:
        return [0] * count
    if mode == 1:
        return [p.integer(0, 64)] * count
    if mode == 2:
        return [p.integer(0, 1 << 12) for _ in range(count)]
    return [p.choice((1, 4, 28, 36, 100, 4096, 1 << 16)) for _ in range(count)]


def check_decode_spans(p: Parameters, data: bytes) -> None:
    text = hex_text(p, data)
    spans = _spans(p, text)
    heads = _heads(p, len(spans))
    first = p.integer(0, len(spans)) if p.chance(1) else 0
    w, hw = p.integer(0, 16), p.integer(0, 16)
    starts = np.array([s for s, _ in spans], np.int64)
    ends = np.array([e for _, e in spans], np.int64)
    head_array = np.array(heads, np.int64)
    odd = odd_offset(p)
    room = w + int(((ends - starts)[first:] // 2).sum()) + p.integer(0, 3)
    head_room = hw + int(head_array[first:].sum()) + p.integer(0, 3)
    args = [_text_array(text, p), placed(starts, odd), placed(ends, odd),
            placed(head_array, odd), first, np.full(room, 0xA5, np.uint8), w,
            np.full(head_room, 0x5A, np.uint8), hw, placed(np.full(len(spans), -7, np.int64), odd)]
    failed, w_end, hw_end = same(dump_spans._decode_spans, args, "decode_spans")
    if not first <= failed <= len(spans) or w_end < w or hw_end < hw:
        raise KernelMismatch("decode_spans", "result outside the call", f"({failed}, {w_end}, {hw_end})")
    if p.chance(3):  # out or head_out cut short
        cut_short(dump_spans._decode_spans, args, [5, 7], [p.integer(0, room), p.integer(0, head_room)],
                  "decode_spans", reserved=[w, hw + int(head_array[first:].sum())])
    if p.chance(2):  # heads no buffer holds (a damaged length), beside small buffers
        huge = list(args)
        huge[3] = np.array([p.choice((1 << 40, (1 << 62) + 1, (1 << 63) - 1, 1 << 31)) for _ in spans], np.int64)
        huge[8] = p.choice((0, 1 << 62, (1 << 63) - 1))
        if huge[8] > head_room or first < len(spans):  # the heads cannot have their slots
            refused(dump_spans._decode_spans, huge, "decode_spans", "heads larger than head_out")
    if p.chance(1) and first < len(spans):
        one_refused(p, dump_spans._decode_spans, args, "decode_spans",
                    [("a span past the text", 2, ends + len(text) + 1), ("first < 0", 4, -1),
                     ("lengths too short", 9, np.zeros(len(spans) - 1, np.int64))])


# -- fields of observations ----------------------------------------------------------------------------


def _rows(p: Parameters, data: bytes, max_stride: int) -> Tuple[np.ndarray, int, int]:
    """(flat rows, stride, count): rows of ``data`` (``on_material``), perhaps fewer than it holds."""
    data = on_material(p, data, row_material())
    stride = p.integer(0, max_stride)
    count = len(data) // stride if stride else p.integer(0, 4)
    if p.chance(1):
        count = p.integer(0, count)
    return np.frombuffer(data, np.uint8), stride, count


def _fields(p: Parameters, stride: int, max_width: int) -> Tuple[np.ndarray, np.ndarray]:
    offsets, widths = [], []
    for _ in range(p.integer(0, 6)):
        offset = p.integer(0, max(stride, 0))
        offsets.append(offset)
        widths.append(min(p.integer(0, max_width), stride - offset))
    return np.array(offsets, np.int64), np.array(widths, np.int64)


def check_gather_fields(p: Parameters, data: bytes) -> None:
    flat, stride, count = _rows(p, data, 40)
    offsets, widths = _fields(p, stride, 8)
    little = p.chance(4)
    extra_rows, extra_columns = p.integer(0, 2), p.integer(0, 2)
    bits = np.full((len(offsets) + extra_rows, count + extra_columns), 3, np.uint64)
    nan = np.zeros((len(offsets) + extra_rows, count + extra_columns), bool)
    odd = odd_offset(p)
    args = [placed(flat, p.integer(0, 7)), stride, count, placed(offsets, odd), placed(widths, odd),
            little, bits, nan]
    same(sas_numbers._gather_fields, args, "gather_fields")
    if p.chance(2) and len(offsets):
        j = p.integer(0, len(offsets) - 1)
        wrongs = [("a field wider than 8 bytes", 4, changed(widths, j, 9)),
                  ("a field past the row", 3, changed(offsets, j, stride - widths[j] + 1)),
                  ("a negative offset", 3, changed(offsets, j, -1)),
                  ("bits too narrow", 6, np.zeros((len(offsets), count - 1), np.uint64)) if count else
                  ("bits signed", 6, bits.astype(np.int64))]
        if stride:  # rows of no bytes: any number fits
            wrongs.append(("more rows than flat holds", 2, count + 1 + len(flat)))
        one_refused(p, sas_numbers._gather_fields, args, "gather_fields", wrongs)


def _table(p: Parameters):
    """(utf8_bytes, utf8_length, blank, table columns) of a code page, of UTF-8 (no table) or made up."""
    kind = p.integer(0, 9)
    if kind < len(CODE_PAGES):
        ccsid = CODE_PAGES[kind]
        if ccsid is None:
            return strings._NO_TABLE[0], strings._NO_TABLE[1], code_page(1208).space, 1
        page = code_page(ccsid)
        return page.utf8_bytes, page.utf8_length, page.space, page.utf8_bytes.shape[1]
    columns = p.integer(1, 6)
    seed = p.integer(0, 1 << 16)
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 256, (256, columns), dtype=np.uint8), rng.integers(0, columns + 1, 256, dtype=np.int64),
            int(rng.integers(0, 256)), columns)


def check_trim_and_gather(p: Parameters, data: bytes) -> None:
    # Fields up to 90 bytes: the C check of UTF-8 takes up to 64 bytes in 16-byte blocks, longer by its DFA.
    flat, stride, count = _rows(p, data, 90)
    utf8_bytes, utf8_length, blank, columns = _table(p)
    if p.chance(1):
        blank = p.choice((-1, 256, 0, 32, 64, 300))
    flat = flat.copy()
    if p.chance(5) and 0 <= blank < 256:  # blanks and NULs: what trimming looks at
        flat[flat % 3 == 0] = blank
        flat[flat % 7 == 1] = 0
    offsets, widths = _fields(p, stride, 90)
    room = columns if len(utf8_length) else 1
    sizes = count * widths * room
    regions = np.concatenate([[0], np.cumsum(sizes)])[:-1].astype(np.int64) if len(sizes) else np.zeros(0, np.int64)
    extra = p.integer(0, 3)
    if p.chance(1) and len(regions):  # regions overlapping or out of order, each still inside out
        regions = np.array([p.integer(0, int(sizes.sum()) - int(s)) if sizes.sum() >= s else 0 for s in sizes],
                           np.int64)
    out_size = int(max((regions + sizes).max(), 0)) + extra if len(regions) else extra
    ends = np.full((len(offsets) + p.integer(0, 1), count + 1 + p.integer(0, 2)), -1, np.int64)
    check_utf8 = p.chance(6)
    bad_rows = np.full(len(offsets) + p.integer(0, 1), 7, np.int64)
    args = [placed(flat, p.integer(0, 7)), stride, count, offsets, widths, blank, utf8_bytes, utf8_length, check_utf8,
            ends, np.full(out_size, 0xEE, np.uint8), regions, placed(bad_rows, odd_offset(p))]
    same(strings._trim_and_gather, args, "trim_and_gather")
    if check_utf8 and not len(utf8_length) and not misaligned(args):  # and Python's strict decoder agrees
        found = np.frombuffer(reference(strings._trim_and_gather, args)[1][-1], np.int64)[:len(offsets)]
        expected = _first_ill_formed_rows(flat, stride, count, offsets, widths, blank)
        if not np.array_equal(found, expected):
            raise KernelMismatch("trim_and_gather", "differs from Python's UTF-8 decoder",
                                 f"{found.tolist()} != {expected}")
    if p.chance(2) and len(offsets):
        j = p.integer(0, len(offsets) - 1)
        wrongs = [("a field past the row", 4, changed(widths, j, stride - offsets[j] + 1)),
                  ("a region past out", 11, changed(regions, j, out_size - sizes[j] + 1)),
                  ("ends too narrow", 9, np.zeros((len(offsets), count), np.int64)),
                  ("a bad row too few", 12, np.zeros(len(offsets) - 1, np.int64))]
        if len(utf8_length):
            wrongs.append(("a code page entry longer than its table", 7,
                           changed(utf8_length, p.integer(0, 255), utf8_bytes.shape[1] + 1)))
        if stride:
            wrongs.append(("more rows than flat holds", 2, count + 1 + len(flat)))
        one_refused(p, strings._trim_and_gather, args, "trim_and_gather", wrongs)


def _first_ill_formed_rows(flat: np.ndarray, stride: int, count: int, offsets: np.ndarray, widths: np.ndarray,
                           blank: int) -> List[int]:
    """For each field, the first row whose value (trailing blanks and NULs trimmed) Python's strict
    UTF-8 decoder refuses, or -1."""
    trimmed = bytes([blank, 0]) if 0 <= blank < 256 else b"\0"
    found = []
    for at, width in zip(offsets.tolist(), widths.tolist()):
        row = -1
        for r in range(count):
            try:
                flat[r * stride + at:r * stride + at + width].tobytes().rstrip(trimmed).decode("utf-8")
            except UnicodeDecodeError:
                row = r
                break
        found.append(row)
    return found


# -- dates and times ---------------------------------------------------------------------------------

LIMITS = (sas_dataset.MIN_SAS_DAY, sas_dataset.MAX_SAS_DAY + 1, sas_dataset.MIN_SAS_DAY * 86400.0,
          (sas_dataset.MAX_SAS_DAY + 1) * 86400.0, 86400.0, sas_dataset.MAX_INTERVAL_SECONDS, 0.0, 0.5, 1e-300,
          float("inf"), float("nan"), 2.0 ** 63, 2.0 ** 31)


def check_sas_to_arrow_time(p: Parameters, data: bytes) -> None:
    data = on_material(p, data, double_material())
    n = len(data) // 8
    values = np.frombuffer(data[:8 * n], "<f8").copy()
    for _ in range(p.integer(0, 6) if n else 0):  # limits of the ranges, either side, either sign
        limit = p.choice(LIMITS)
        value = np.float64(limit if p.chance(4) else -limit)
        step = p.integer(0, 2)
        if step:
            value = np.nextafter(value, np.float64(0.0) if step == 1 else np.float64(2.0) * value)
        values[p.integer(0, n - 1)] = value
    missing = np.array([p.chance(1) for _ in range(min(n, 64))] + [False] * max(n - 64, 0), bool)
    kind = p.choice((0, 1, 2, 3, 0, 1, 2, 3, 7, -1))
    out_type = p.choice((np.int32, np.int64)) if kind == 0 else p.choice((np.int64, np.int64, np.int32))
    extra = p.integer(0, 2)
    out = np.full(n + extra, 77, out_type)
    odd = odd_offset(p)
    same(sas_dataset._sas_to_arrow_time, [placed(values, odd), placed(missing, p.integer(0, 7)), kind, out],
         "sas_to_arrow_time")
    if p.chance(1) and n:
        one_refused(p, sas_dataset._sas_to_arrow_time, [values, missing, kind, out], "sas_to_arrow_time",
                    [("missing too short", 1, missing[:-1]), ("out too short", 3, out[:n - 1]),
                     ("out of doubles", 3, out.astype(np.float64))])


# -- TIB/RV ATO rows ---------------------------------------------------------------------------------

# Bytes that change how an RV field reads: sizes (0x79 and 0x7A take a u16 or u32 after them),
# type codes (int 11, real 13, string 8), vtypes 1 and 2, a name's NUL, a name length.
RV_DAMAGE = b"\x00\x01\x02\x03\x04\x08\x0b\x0d\x79\x7a\x7b\xff A"
RV_NAMES = ("", "ATO", "A-longer-field-name")  # what a re-encoded field is named (the samples: "ATO")


@dataclass(frozen=True)
class AtoMaterial:
    """The ATO messages of a TIB/RV capture, read as the transport reads them: each row as its
    bytes on the wire and its fields, and their layout (DAT and VAR)."""

    numeric: Tuple[bool, ...]
    lengths: Tuple[int, ...]
    obs_length: int
    rows: Tuple[Tuple[bytes, Tuple[RvField, ...]], ...]


def _ato_material_of(data: bytes) -> List[AtoMaterial]:
    found = []
    for message in capture_format("tibrv").parse(data, "fuzz"):
        layout = message.reread_hint
        if message.details.kind != "ATO" or layout is None:
            continue
        start, end = message.origin.file_offset, message.origin.file_end
        count, pairs_start = observations.ato_count(data, start + HEADER.size, end, layout,
                                                    Location("fuzz", 0, start), message_at=start)
        fields = list(read_fields(data, pairs_start, end))
        pairs = 2 * len(layout.lengths)
        rows = tuple((data[fields[r * pairs].offset:fields[r * pairs + pairs - 1].data_offset
                           + len(fields[r * pairs + pairs - 1].data)], tuple(fields[r * pairs:(r + 1) * pairs]))
                     for r in range(count))
        found.append(AtoMaterial(tuple(layout.numeric), tuple(layout.lengths), layout.obs_length, rows))
    return found


@functools.lru_cache(maxsize=None)
def ato_material() -> Tuple[AtoMaterial, ...]:
    """The ATO rows of the sample capture, and of one our writer makes with the value shapes the
    sample lacks: strings of 0 to 300 bytes (sizes of one byte, 0x79 and a u16), a non-ASCII one,
    numerics NaN and infinite."""
    import io

    import pyarrow as pa

    from cmi_datasource.engine.write import DatasetToWrite, WriteOptions, write_attachments_dump
    short, long = ["", "é", "x" * 40, "y" * 62, "tail "], ["", "z" * 65, "w" * 130, "v" * 300, "ü" * 118]
    n = 24
    table = pa.table({"N": [(float("nan"), float("inf"), -0.0)[i % 3] if i % 5 == 4 else i * 1.5 for i in range(n)],
                      "S": [short[i % len(short)] for i in range(n)], "K": [-float(i) for i in range(n)],
                      "L": [long[i % len(long)] for i in range(n)]})
    written = io.BytesIO()
    write_attachments_dump(written, [DatasetToWrite(table, "WORK", "ROWS")], format="tibrv",
                           options=WriteOptions(encoding=273))
    return tuple(_ato_material_of(_sample("tibrv_capture.rv")) + _ato_material_of(written.getvalue()))


def ato_seed_material() -> Tuple[bytes, ...]:
    """Data for the ATO seeds, written over the messages (most parameter blocks take none): a
    row of the sample, a string's size of 0x79 and its u16."""
    return (ato_material()[0].rows[0][0], b"\x08\x79\x00\x90")


def _ato_row_bytes(p: Parameters, row: Tuple[bytes, Tuple[RvField, ...]], style: int) -> bytes:
    """A row as sent (style 0), or its fields written again: named otherwise, without a field id,
    strings without their NUL (the kernel's field-by-field walk, not its usual shape)."""
    sent, fields = row
    if style == 0:
        return sent
    out = []
    for f in fields:
        name = p.choice(RV_NAMES) if style == 1 else RV_NAMES[style % len(RV_NAMES)]
        data = f.data[:-1] if f.type == 8 and f.data.endswith(b"\0") and style >= 2 else f.data
        out.append(field_bytes(name, None if style == 3 else f.field_id, f.type, data))
    return b"".join(out)


def check_ato_rows(p: Parameters, data: bytes) -> None:
    material = p.choice(ato_material())
    nvars = len(material.lengths)
    # The messages of the call: the material's rows split into 1 to 4 messages, each row as sent
    # or written again, after a few bytes that belong to no message.
    style = p.choice((0, 0, 0, 1, 2, 3, 4))
    rows = [_ato_row_bytes(p, row, style) for row in material.rows]
    splits = sorted(p.integer(0, len(rows)) for _ in range(p.integer(0, 3)))
    bounds = [0, *splits, len(rows)]
    buffer = bytearray(b"\x07" * p.integer(0, 5))
    starts, ends, counts = [], [], []
    for first, stop in zip(bounds, bounds[1:]):
        starts.append(len(buffer))
        buffer += b"".join(rows[first:stop])
        ends.append(len(buffer))
        counts.append(stop - first)
    buffer += b"\x00" * p.integer(0, 4)
    whole = bytes(buffer), list(ends), list(counts)
    # Damage: the input's bytes written over the messages, bytes that change how fields read,
    # a message cut short or longer, a count wrong by one.
    if data and p.chance(3):
        at = p.integer(0, 1 << 24) % (len(buffer) + 1)
        buffer[at:at + len(data)] = data
    for _ in range(p.integer(0, 3) if p.chance(4) else 0):
        buffer[p.integer(0, 1 << 24) % len(buffer)] = p.choice(RV_DAMAGE)
    if p.chance(2):
        m = p.integer(0, len(ends) - 1)
        ends[m] = max(0, min(len(buffer), ends[m] + p.integer(-40, 8)))
    if p.chance(2):
        m = p.integer(0, len(counts) - 1)
        counts[m] = max(0, counts[m] + p.choice((-1, 1, 1, 2)))
    # The layout: as sent, or made to disagree with the rows (a type flipped, a variable narrower
    # or wider, padding, variables in another order in the row).
    numeric, lengths = np.array(material.numeric, bool), np.array(material.lengths, np.int64)
    laid_out = not p.chance(2)
    if not laid_out:
        v = p.integer(0, nvars - 1)
        which = p.integer(0, 3)
        if which == 0:
            numeric[v] = not numeric[v]
        else:
            lengths[v] = max(0, lengths[v] + (-1, 1, -5)[which - 1])
    offsets = (np.cumsum(lengths) - lengths).astype(np.int64)
    obs_length = int(lengths.sum()) + p.choice((0, 0, 0, 1, 3, 8))
    if p.chance(1):
        order = np.array(list(reversed(range(nvars))))
        offsets = (np.cumsum(lengths[order]) - lengths[order])[np.argsort(order)].astype(np.int64)
    counts_array = np.array(counts, np.int64)
    lead, extra = p.integer(0, 16), p.integer(0, 3)
    out_starts = (lead + np.concatenate([[0], np.cumsum(counts_array * obs_length)[:-1]])).astype(np.int64)
    room = lead + int((counts_array * obs_length).sum()) + extra
    if p.chance(1):  # out cut short: the message whose rows do not fit is problem 8, alike
        room = p.integer(0, room)
    odd = odd_offset(p)
    args = [placed(np.frombuffer(bytes(buffer), np.uint8), p.integer(0, 7)), placed(np.array(starts, np.int64), odd),
            placed(np.array(ends, np.int64), odd), placed(counts_array, odd), placed(out_starts, odd),
            numeric, lengths, offsets, obs_length, np.full(room, 0xA5, np.uint8), p.choice((32, 32, 64, 0))]
    result = same(observations._ato_rows, args, "ato_rows")
    if not 0 <= result[0] <= 8 or not 0 <= result[1] < max(len(starts), 1):
        raise KernelMismatch("ato_rows", "result outside the call", f"{result}")
    if laid_out and (bytes(buffer), ends, counts) == whole and room >= lead + int((counts_array * obs_length).sum()):
        _python_rows_agree(material, args, lead, result)
    if misaligned(args) or not p.chance(3):
        return
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]  # aligned
    if p.chance(4):
        _huge_ato_call(p, args)
    else:
        one_refused(p, observations._ato_rows, args, "ato_rows",
                    [("ends shorter than starts", 2, args[2][:-1]), ("counts of int32", 3, args[3].astype(np.int32)),
                     ("numeric shorter than lengths", 5, numeric[:-1]), ("offsets longer", 7, np.append(offsets, 0)),
                     ("numeric as bytes", 5, numeric.astype(np.uint8)), ("out of int64", 9, args[9].view(np.int64)
                      if room % 8 == 0 else args[9].astype(np.int16)),
                     ("a blank that is not a byte", 10, p.choice((-1, 256, 32 + 256, -(1 << 40))))])
    if p.chance(1):  # out over the bytes being read: the C kernel's restrict pointers
        shared = np.concatenate([args[0], np.zeros(room, np.uint8)])
        try:
            observations._ato_rows.native_function()(shared, *args[1:9], shared[p.integer(0, len(args[0]) - 1):], 32)
        except REFUSALS:
            return
        raise KernelMismatch("ato_rows", "took a call outside its bounds", "out overlapping buf")


def _python_rows_agree(material: AtoMaterial, args: list, lead: int, result) -> None:
    """The rows of undamaged messages under their own layout are what the RV spec makes of the
    fields ``read_fields`` reads: a numeric's high-order bytes, a string without its NUL padded
    with blanks; the padding and the room around the rows left as they were."""
    if result != (0, 0, 0, 0, 0):
        raise KernelMismatch("ato_rows", "refused the rows as sent", f"{result}")
    offsets, obs_length, out, blank = args[7].tolist(), args[8], args[9], args[10]
    expected = np.full(len(out), 0xA5, np.uint8)
    for r, (_, fields) in enumerate(material.rows):
        row = lead + r * obs_length
        for v, (numeric, width, offset) in enumerate(zip(material.numeric, material.lengths, offsets)):
            value = fields[2 * v + 1].data
            value = value[:width] if numeric else value[:-1 if value.endswith(b"\0") else None].ljust(width,
                                                                                                   bytes([blank]))
            expected[row + offset:row + offset + width] = np.frombuffer(value, np.uint8)
    written = reference(observations._ato_rows, args)[1][8]  # the C kernel's bytes too, by ``same``
    if not _same_bytes(written, expected.tobytes()):
        raise KernelMismatch("ato_rows", "rows differ from the values read in Python")


def _huge_ato_call(p: Parameters, args: list) -> None:
    """A count, a row start or an observation length that no buffer holds (a damaged count, or
    a caller's sum that overflowed): numba's ``count * obs_length`` may itself overflow, so the C
    kernel alone runs it, and must stop at that message with problem 8, the messages before it
    written as numba writes them (numba run on those alone)."""
    m = p.integer(0, len(args[1]) - 1)
    huge = p.choice(((1 << 62) + 1, (1 << 63) - 1, 1 << 40, 1 << 32))
    bad = list(args)
    which = p.integer(0, 2)
    if which == 0 and args[8] > 0:  # rows of no bytes: any count fits
        bad[3] = changed(args[3], m, huge)
    elif which <= 1:
        bad[4] = changed(args[4], m, huge)
    else:
        bad[8] = huge
        m = int(np.flatnonzero(args[3])[0]) if args[3].any() else len(args[3])
        if m == len(args[3]):
            return  # no message has rows: nothing no buffer holds
    prefix = [a[:m] if i in (1, 2, 3, 4) else a for i, a in enumerate(args)]
    expected, outputs = reference(observations._ato_rows, prefix)
    if expected[0] == 0:
        expected = (8, m, 0, 0, int(args[1][m]))
    got = native(observations._ato_rows, bad, "ato_rows")
    _compare("ato_rows", got, (expected, [*outputs[:1], *_outputs(bad)[1:5], *outputs[5:]]))


# -- the write's kernels: X lines, numbers and text into rows ------------------------------------------

X_LINE_WIDTHS = (25, 25, 1, 16, 32, 33, 64, 4096, 4097, 8193)  # dmpmqmsg's 25; either side of the C's blocks


def _digits(p: Parameters) -> np.ndarray:
    """The 16 digits: the writer's upper case mostly, else lower case or any 16 bytes (the C's table)."""
    kind = p.integer(0, 7)
    if kind < 5:
        return hex_lines._UPPER_DIGITS
    if kind == 5:
        return np.frombuffer(b"0123456789abcdef", np.uint8)
    return np.random.default_rng(p.integer(0, 1 << 16)).integers(0, 256, 16 + p.integer(0, 3), dtype=np.uint8)


def check_x_lines(p: Parameters, data: bytes) -> None:
    payload = on_material(p, data, row_material()) * p.choice((1, 1, 1, 5, 40))
    payload = payload[:p.integer(0, len(payload))] if p.chance(1) else payload
    width = p.choice(X_LINE_WIDTHS) if p.chance(6) else p.integer(1, 300)
    digits = _digits(p)
    n = len(payload)
    total = 2 * n + 3 * -(-n // width)
    room = total + p.integer(0, 3) + (p.integer(0, 80) if p.chance(2) else 0)
    args = [placed(np.frombuffer(payload, np.uint8), p.integer(0, 7)), width, np.full(room, 0xA5, np.uint8), digits]
    written = same(hex_lines._x_lines, args, "x_lines")
    if written != total:
        raise KernelMismatch("x_lines", "wrote other than its lines", f"{written} bytes, not {total}")
    if p.chance(2):  # out cut short: refused before a byte is written when it lacks room for the lines
        cut_short(hex_lines._x_lines, args, [2], [p.integer(0, room)], "x_lines", reserved=[total])
    if p.chance(2):
        wrongs = [("a width of 0", 1, 0), ("a negative width", 1, -p.integer(1, 1 << 16)),
                  ("fewer than 16 digits", 3, digits[:p.integer(0, 15)])]
        if total:
            wrongs.append(("out too small", 2, np.zeros(total - 1, np.uint8)))
        one_refused(p, hex_lines._x_lines, args, "x_lines", wrongs)


def check_x_records(p: Parameters, data: bytes) -> None:
    """A group of records (heads cut from the input, payloads from rows), as write_dump formats them."""
    material = on_material(p, data, row_material())
    width = p.choice(X_LINE_WIDTHS) if p.chance(6) else p.integer(1, 300)
    digits = _digits(p)
    heads, payloads = [], []
    for _ in range(p.integer(0, 6)):
        heads.append(material[:p.integer(0, 60)])
        payload = material * p.choice((1, 1, 5, 40))
        payloads.append(payload[:p.integer(0, len(payload))] if p.chance(2) else payload)
    total = sum(len(h) + (2 * len(x) + 3 * -(-len(x) // width) if x else 3) + 1 for h, x in zip(heads, payloads))
    room = total + p.integer(0, 3) + (p.integer(0, 80) if p.chance(2) else 0)
    head_ends = np.cumsum([len(h) for h in heads], dtype=np.int64)
    payload_ends = np.cumsum([len(x) for x in payloads], dtype=np.int64)
    args = [placed(np.frombuffer(b"".join(heads), np.uint8), p.integer(0, 7)), head_ends,
            placed(np.frombuffer(b"".join(payloads), np.uint8), p.integer(0, 7)), payload_ends, width,
            np.full(room, 0xA5, np.uint8), digits]
    written = same(hex_lines._x_records, args, "x_records")
    if written != total:
        raise KernelMismatch("x_records", "wrote other than its records", f"{written} bytes, not {total}")
    if p.chance(2):  # out cut short: refused before a byte is written when it lacks room for the records
        cut_short(hex_lines._x_records, args, [5], [p.integer(0, room)], "x_records", reserved=[total])
    if p.chance(2) and len(heads):
        last = len(heads) - 1
        wrongs = [("a width of 0", 4, 0), ("fewer than 16 digits", 6, digits[:p.integer(0, 15)]),
                  ("a head past its buffer", 1, changed(head_ends, last, head_ends[last] + p.integer(1, 9))),
                  ("a payload end falling", 3, changed(payload_ends, 0, -p.integer(1, 9))),
                  ("ends of other lengths", 3, payload_ends[:last])]
        if total:
            wrongs.append(("out too small", 5, np.zeros(total - 1, np.uint8)))
        one_refused(p, hex_lines._x_records, args, "x_records", wrongs)


def _row_layout(p: Parameters, count: int, width: int) -> Tuple[int, int, np.ndarray]:
    """(row length, at, flat rows filled with 0xEE, perhaps a few bytes longer) for a column of width."""
    at = p.integer(0, 16)
    row_length = at + width + p.integer(0, 16)
    return row_length, at, np.full(count * row_length + p.integer(0, 3), 0xEE, np.uint8)


def _rows_wrongs(count: int, row_length: int, at: int, width: int, flat_index: int) -> list:
    """The calls outside a column's bounds common to both row kernels (argument indexes as theirs)."""
    wrongs = [("a column past the row", flat_index + 2, row_length - width + 1), ("a negative at", flat_index + 2, -1),
              ("a negative row length", flat_index + 1, -1)]
    if count > 0:
        wrongs.append(("rows no buffer holds", flat_index + 1, (1 << 62) + at))
        if row_length:
            wrongs.append(("fewer rows than values", flat_index, np.zeros(count * row_length - 1, np.uint8)))
    return wrongs


def check_put_high_bytes(p: Parameters, data: bytes) -> None:
    data = on_material(p, data, double_material())
    bits = np.frombuffer(data[:len(data) // 8 * 8], np.uint64).copy()
    for _ in range(p.integer(0, 3) if len(bits) else 0):  # SAS's missing values
        bits[p.integer(0, len(bits) - 1)] = p.choice((sas_numbers.IEEE_MISSING_DOT, sas_numbers.S390_MISSING_DOT, 0))
    width = p.integer(1, 8)
    row_length, at, flat = _row_layout(p, len(bits), width)
    args = [placed(bits, odd_offset(p)), placed(flat, p.integer(0, 7)), row_length, at, width, p.chance(4)]
    same(sas_numbers._put_high_bytes, args, "put_high_bytes")
    if p.chance(2):
        wrongs = [*_rows_wrongs(len(bits), row_length, at, width, 1), ("a width of 0", 4, 0), ("a width of 9", 4, 9),
                  ("bits signed", 0, bits.astype(np.int64)), ("bits of doubles", 0, bits.view(np.float64))]
        one_refused(p, sas_numbers._put_high_bytes, args, "put_high_bytes", wrongs)


def check_put_padded(p: Parameters, data: bytes) -> None:
    data = on_material(p, data, row_material())
    width = p.choice((0, 1, 8, 20, 63, 64, 65, 200)) if p.chance(4) else p.integer(0, 80)
    count = p.integer(0, 64) * p.choice((1, 1, 20))
    rng = np.random.default_rng(p.integer(0, 1 << 16))
    lengths = rng.integers(0, width + 1, count) if width and not p.chance(1) else np.full(count, width)
    first = p.integer(0, 8)
    offsets = np.concatenate([[first], first + np.cumsum(lengths)]).astype(np.int64)
    values = np.resize(np.frombuffer(data or b"\0", np.uint8), int(offsets[-1]) + p.integer(0, 70))
    if p.chance(1) and count:
        offsets = offsets[:p.integer(0, count)]  # fewer values than the rows hold: the rows past them untouched
    space = p.choice((0x20, 0x20, 0x40, 0, 255))
    row_length, at, flat = _row_layout(p, count, width)
    args = [placed(values, p.integer(0, 7)), placed(offsets, odd_offset(p)), space, placed(flat, p.integer(0, 7)),
            row_length, at, width]
    same(strings._put_padded, args, "put_padded")
    if p.chance(2):
        wrongs = [*_rows_wrongs(len(offsets) - 1, row_length, at, width, 3), ("a blank of 256", 2, 256),
                  ("a blank of -1", 2, -1), ("offsets of doubles", 1, offsets.astype(np.float64))]
        if len(offsets) > 1:
            i = p.integer(0, len(offsets) - 2)
            wrongs += [("a value longer than the width", 1, changed(offsets, i + 1, offsets[i] + width + 1)),
                       ("offsets falling", 1, changed(offsets, i + 1, offsets[i] - 1)),
                       ("an offset past the data", 1, changed(offsets, len(offsets) - 1, len(values) + 1)),
                       ("a negative offset", 1, changed(offsets, 0, -1))]
        one_refused(p, strings._put_padded, args, "put_padded", wrongs)


@functools.lru_cache(maxsize=None)
def slot_material() -> Tuple[bytes, ...]:
    """Arrow value slots: doubles of SAS's special missing patterns, NaNs of other payloads, -0.0 and
    the infinities; int64 microseconds and nanoseconds, near the int64 limits too (where adding the
    epoch shift wraps); int32 days."""
    doubles = np.array([0xFFFFE10000000000, 0xFFFFFE0000000000, 0x7FF0000000000001, 0xFFF8000000000000,
                        0x8000000000000000, 0x7FF0000000000000, 0xFFF0000000000000, 1], np.uint64)
    integers = np.array([1_700_000_000_123_456, -315_619_200_000_000, 2 ** 53 + 1, 2 ** 63 - 1, -2 ** 63,
                         86_399_999_999_999, -1, 0], np.int64)
    days = np.array([0, -3653, 2_936_547, -138_061, 2 ** 31 - 1, -2 ** 31, 19_000, 1], np.int32)
    return (doubles.astype("<u8").tobytes() * 3, integers.astype("<i8").tobytes() * 3, days.astype("<i4").tobytes() * 6,
            *double_material())


SLOT_TYPES = (np.float64, np.float32, np.int32, np.int64)


def check_put_arrow_numbers(p: Parameters, data: bytes) -> None:
    data = on_material(p, data, slot_material())
    dtype = np.dtype(p.choice(SLOT_TYPES))
    values = np.frombuffer(data[:len(data) // dtype.itemsize * dtype.itemsize], dtype).copy()
    integers = dtype.kind == "i"
    add = p.choice((0, 0, 3653, 315_619_200_000_000, 1 - 2 ** 63, 2 ** 63 - 1)) if integers else 0
    divisor = p.choice((1.0, 1.0, 1e6, 1e9, 3.0, -0.5, 0.0))
    validity_offset = p.integer(0, 20)
    if p.chance(2):  # no nulls
        bitmap = np.zeros(0, np.uint8)
    else:
        rng = np.random.default_rng(p.integer(0, 1 << 16))
        need = -(-(validity_offset + len(values)) // 8)
        bitmap = rng.integers(0, 256, need + p.integer(0, 3), dtype=np.uint8) if need else np.zeros(1, np.uint8)
    width = p.integer(1, 8)
    row_length, at, flat = _row_layout(p, len(values), width)
    args = [placed(values, odd_offset(p)), placed(bitmap, p.integer(0, 7)), validity_offset, add, divisor,
            placed(flat, p.integer(0, 7)), row_length, at, width, p.chance(4)]
    same(sas_numbers._put_arrow_numbers, args, "put_arrow_numbers")
    if p.chance(2):
        wrongs = [*_rows_wrongs(len(values), row_length, at, width, 5), ("a width of 0", 8, 0), ("a width of 9", 8, 9),
                  ("values of uint64", 0, values.view(np.uint64) if dtype.itemsize == 8 else values.view(np.uint32)),
                  ("values of int16", 0, values.view(np.int16))]
        if not integers:
            wrongs.append(("an integer added to floats", 3, 1))
        if len(bitmap) and len(values):
            wrongs += [("a negative bit offset", 2, -1), ("a bit offset past the bitmap", 2, len(bitmap) * 8 + 1)]
            short = -(-(validity_offset + len(values)) // 8) - 1
            if short:  # (an empty bitmap says: no nulls)
                wrongs.append(("a bitmap short of a bit per value", 1, bitmap[:short]))
        one_refused(p, sas_numbers._put_arrow_numbers, args, "put_arrow_numbers", wrongs)


# -- the target --------------------------------------------------------------------------------------

KERNELS: Dict[str, Tuple[Kernel, Callable[[Parameters, bytes], None]]] = {
    "x_run": (hex_lines.x_run, check_x_run),
    "decode_spans": (dump_spans._decode_spans, check_decode_spans),
    "trim_and_gather": (strings._trim_and_gather, check_trim_and_gather),
    "gather_fields": (sas_numbers._gather_fields, check_gather_fields),
    "sas_to_arrow_time": (sas_dataset._sas_to_arrow_time, check_sas_to_arrow_time),
    "ato_rows": (observations._ato_rows, check_ato_rows),
    "x_lines": (hex_lines._x_lines, check_x_lines),
    "put_high_bytes": (sas_numbers._put_high_bytes, check_put_high_bytes),
    "put_padded": (strings._put_padded, check_put_padded),
    "x_records": (hex_lines._x_records, check_x_records),
    # Last: the inputs kept name kernels by index, so a new one comes after them.
    "put_arrow_numbers": (sas_numbers._put_arrow_numbers, check_put_arrow_numbers),
}


def native_kernels_target(data: bytes) -> None:
    """One input: one kernel called alike in C and numba (see the module's docstring)."""
    which, parameters, rest = split_input(data)
    name = list(KERNELS)[which % len(KERNELS)]
    KERNELS[name][1](parameters, rest)


def native_kernels_seeds() -> List[bytes]:
    """For each kernel, inputs of real bytes (the dump samples for the hex kernels, rows and values,
    doubles of dates and times) and short ones written over them (``on_material``), each with a
    few parameter blocks."""
    blocks = [bytes(PARAMETER_BYTES), bytes(range(7, 7 + PARAMETER_BYTES)), bytes([255] * PARAMETER_BYTES)]
    blocks += [bytes((i * step + 3) % 256 for i in range(PARAMETER_BYTES)) for step in (37, 101)]
    seeds = []
    for name in KERNELS:
        material = (dump_material()[:4] if name in ("x_run", "decode_spans") else double_material()
                    if name == "sas_to_arrow_time" else ato_seed_material() if name == "ato_rows"
                    else slot_material() if name == "put_arrow_numbers" else row_material())
        for data in (*material, b"", b"X 0A\n", b"\xc3\xa9\xff\x00 @"):
            seeds.extend(make_input(name, block, data) for block in blocks)
    return seeds


def prepare() -> None:
    """The harness's warm-up: every kernel compiled (numba) and called once."""
    for seed in native_kernels_seeds()[::4]:
        native_kernels_target(seed)


def mutate(data: bytes, rng) -> bytes:
    """``data`` with a few bytes changed, inserted, deleted or cut; most changes in the kernel
    byte and the parameter block, where one byte changes the whole call."""
    out = bytearray(data or b"\0")
    for _ in range(rng.randint(1, 6)):
        out = out or bytearray(1)  # a deletion may have emptied it
        op = rng.randrange(5)
        at = rng.randrange(min(len(out), 1 + PARAMETER_BYTES)) if rng.random() < 0.6 else rng.randrange(len(out))
        if op <= 1:
            out[at] = rng.randrange(256)
        elif op == 2:
            out[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif op == 3 and len(out) > 1 + PARAMETER_BYTES:
            del out[at:at + rng.randint(1, 64)]
        elif len(out) > 1 + PARAMETER_BYTES:
            del out[rng.randint(1 + PARAMETER_BYTES, len(out)):]
    return bytes(out)


def main(argv=None) -> int:
    """Inputs of a corpus and the seeds, then mutations of them, for a time: the sanitizer run's driver.

    Under ASan, libasan provides the coverage hooks atheris' libFuzzer would read, so libFuzzer
    runs blind and keeps no corpus; this replays what ``make fuzz`` kept (``fuzz/corpus/native_kernels``)
    and mutates it. Each input is written to ``--last`` before it runs: when a sanitizer aborts the
    process, that file holds the input. A difference is kept under ``--crashes`` and the run goes on."""
    import argparse
    import glob
    import hashlib
    import random
    import time
    parser = argparse.ArgumentParser(description=main.__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--corpus", default=os.path.join(ROOT, "fuzz", "corpus", "native_kernels"))
    parser.add_argument("--crashes", default=os.path.join(ROOT, "fuzz", "crashes", "native_kernels"))
    parser.add_argument("--last", default=os.path.join(ROOT, "fuzz", "out", "native_kernels.last"))
    parser.add_argument("--runs", type=int, default=0, help="stop after this many inputs (0: the time alone)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    pool = []
    for path in sorted(glob.glob(os.path.join(args.corpus, "*"))):
        with open(path, "rb") as f:
            pool.append(f.read())
    pool += native_kernels_seeds()
    os.makedirs(os.path.dirname(args.last), exist_ok=True)
    rng = random.Random(args.seed)
    runs, found = 0, {}
    deadline = time.monotonic() + args.seconds
    replayed = iter(pool)  # the corpus as it is first, then mutations of it
    while time.monotonic() < deadline and not (args.runs and runs >= args.runs):
        data = next(replayed, None)
        if data is None:
            data = mutate(rng.choice(pool), rng)
        with open(args.last, "wb") as f:
            f.write(data)
        try:
            native_kernels_target(data)
        except KernelMismatch as e:
            if e.signature not in found:
                os.makedirs(args.crashes, exist_ok=True)
                found[e.signature] = os.path.join(args.crashes, hashlib.sha1(data).hexdigest()[:12] + ".bin")
                with open(found[e.signature], "wb") as f:
                    f.write(data)
                print(f"difference: {e} (input kept in {found[e.signature]})", flush=True)
        runs += 1
    print(f"native_kernels: {runs} inputs ({len(pool)} of the corpus and seeds first) in {args.seconds:g} s, "
          f"{len(found)} differences")
    return 1 if found else 0


if __name__ == "__main__":  # python -m fuzz.native_diff, from the checkout
    raise SystemExit(main())
