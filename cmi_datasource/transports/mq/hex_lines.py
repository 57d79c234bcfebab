"""Hex data lines of dmpmqmsg dumps (``X 0A1B...``) decoded by compiled kernels.

``decode_hex`` turns an even run of hex digits into bytes through a table of all 65536
two-character pairs (one lookup per byte, which also flags non-hex characters), and
``x_run`` decodes a whole run of plain ``X`` lines for the line parser. Anything a kernel
does not take (ASCII columns, CR line ends, odd or bad digits) is left to the line-by-line
path, which gives the same bytes or a precise error. ``x_lines`` writes a payload as the
``X`` lines dmpmqmsg writes.
"""
from __future__ import annotations

import numpy as np

from ...compiled import kernel

_NL, _SPACE, _X = (ord(c) for c in "\n X")
_BAD_PAIR = 0x100


def _pair_values() -> np.ndarray:
    """Byte value of each two-character hex pair, indexed by first | second << 8; 0x100 if not hex."""
    digit = np.full(256, _BAD_PAIR, dtype=np.uint16)
    for value, char in enumerate(b"0123456789ABCDEF"):
        digit[char] = value
    for value, char in enumerate(b"abcdef", start=10):
        digit[char] = value
    first, second = digit[np.arange(65536) & 0xFF], digit[np.arange(65536) >> 8]
    return np.where((first | second) & _BAD_PAIR, _BAD_PAIR, (first << 4) | second).astype(np.uint16)


PAIR_VALUES = _pair_values()


@kernel
def decode_hex(text, start, stop, out, at, pairs):
    """Decode text[start:stop) (an even count of characters) to out[at:]; returns 0x100 when a
    character is not hex. Unsigned indexes: numba then skips its negative-index handling,
    which otherwise costs more than the decoding."""
    bad = np.uint16(0)
    first = np.uint64(start)
    to = np.uint64(at)
    for i in range(np.uint64((stop - start) >> 1)):
        j = first + np.uint64(2) * i
        v = pairs[np.uint64(text[j]) | (np.uint64(text[j + np.uint64(1)]) << np.uint64(8))]
        bad |= v
        out[to + i] = np.uint8(v & 0xFF)
    return bad & _BAD_PAIR


@kernel
def head_apart(out, span_w, w, h, head_out, hw):
    """Move the first ``h`` bytes a span decoded into out[span_w:w] to head_out[hw:] and close the
    gap; returns the new end of out. Bounds: w - span_w >= h, and head_out has h slots at hw."""
    for i in range(h):
        head_out[hw + i] = out[span_w + i]
    for i in range(w - span_w - h):
        out[span_w + i] = out[span_w + h + i]
    return w - h


@kernel
def all_head(out, span_w, w, head_out, hw):
    """A span's payload shorter than its head: all of it goes to head_out[hw:]; returns the new
    end of out (span_w)."""
    for i in range(w - span_w):
        head_out[hw + i] = out[span_w + i]
    return span_w


@kernel
def line_end(text, p, e):
    """Index of the first line end at or after p, or e."""
    while p < e and text[p] != _NL:
        p += 1
    return p


@kernel
def x_run(text, pos, size, out, pairs):
    """Decode the run of plain X lines (``X `` then an even number of hex digits, LF ends) that
    starts at text[pos] into out[0:]; returns (index of the last line's end, bytes written),
    or (-1, 0) when a line of the run is not plain. Bounds: the run's bytes lie in
    text[pos:size) and take at most (size - pos) // 2 bytes of ``out``, which the caller
    provides."""
    p = pos
    written = 0
    end = -1
    width = 0  # digits of the previous line: most lines are as wide, so that end is tried first
    while p < size and text[p] == _X:
        if p + 1 >= size or text[p + 1] != _SPACE:
            return -1, 0
        start = p + 2
        stop = start + width
        if not (stop < size and text[stop] == _NL and decode_hex(text, start, stop, out, written, pairs) == 0):
            stop = line_end(text, start, size)
            if (stop - start) & 1 or decode_hex(text, start, stop, out, written, pairs) != 0:
                return -1, 0
            width = stop - start
        written += (stop - start) >> 1
        end = stop
        p = stop + 1
    return end, written


def text_line(data: bytes, pos: int, size: int):
    """(the line starting at data[pos], without its LF or CRLF; where its LF is, or ``size``):
    how the line parsers of text dumps step through ``data[:size]``."""
    end = data.find(b"\n", pos, size)
    end = size if end < 0 else end
    line = data[pos:end]
    return (line[:-1] if line.endswith(b"\r") else line), end


_UPPER_DIGITS = np.frombuffer(b"0123456789ABCDEF", dtype=np.uint8)


@kernel
def _x_lines(payload, width, out, digits):
    """``X `` + upper-case hex of each ``width`` bytes of payload + a line end, into ``out``.
    Bounds: the caller sizes out for 3 bytes a line and 2 a payload byte."""
    n = np.uint64(payload.shape[0])
    step = np.uint64(width)
    w = np.uint64(0)
    for start in range(np.uint64(0), n, step):
        out[w] = _X
        out[w + np.uint64(1)] = _SPACE
        w += np.uint64(2)
        for i in range(start, min(start + step, n)):
            b = payload[i]
            out[w] = digits[b >> np.uint8(4)]
            out[w + np.uint64(1)] = digits[b & np.uint8(15)]
            w += np.uint64(2)
        out[w] = _NL
        w += np.uint64(1)
    return w


def x_lines(payload: bytes, width: int) -> bytes:
    """The data lines of a message as dmpmqmsg writes them, each ending with a line end: ``width``
    payload bytes a line, upper-case hex; a bare ``X `` for an empty payload."""
    if width < 1:
        raise ValueError(f"data width must be at least 1 byte, not {width}")
    if not payload:
        return b"X \n"
    out = np.empty(-(-len(payload) // width) * 3 + 2 * len(payload), dtype=np.uint8)
    _x_lines(np.frombuffer(payload, dtype=np.uint8), width, out, _UPPER_DIGITS)
    return out.tobytes()
