"""Hex data lines of dmpmqmsg dumps (``X 0A1B...``) decoded by compiled kernels.

Decoding is arithmetic, not a table: a digit ``c`` is worth ``(c & 0xF) + 9 * (c >> 6)``
(``'7'`` 7, ``'B'`` and ``'b'`` 11), and two unsigned comparisons tell whether it is a hex digit at
all. A loop of that over contiguous digits is what LLVM turns into SIMD (a table lookup per byte
cannot be), but a dmpmqmsg line holds only 50 digits: a loop per line is too short to vectorise
and pays its set-up every 53 bytes. So runs of X lines are decoded in two passes: ``gather``
copies the digits of each line into one block (``DIGIT_BLOCK``, which stays in the cache), then
``decode_gathered`` decodes the whole block in loops that each vectorise.

``x_run`` decodes a whole run of plain ``X`` lines for the line parser. Anything a kernel does
not take (ASCII columns, CR line ends, odd or bad digits) is left to the line-by-line path,
which gives the same bytes or a precise error. ``x_lines`` writes a payload as the ``X`` lines
dmpmqmsg writes.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ...compiled import kernel
from ...threads import SpareBuffers

_NL, _SPACE, _X = (ord(c) for c in "\n X")
_U8, _U64 = np.uint8, np.uint64
_NOT_HEX = 0x80  # set in a digit's value by ``digit_value`` when the character is no hex digit
_NOT_HEX_IN_WORD = 0x8080808080808080
DIGIT_BLOCK = 1 << 15  # digits gathered before they are decoded: 32 KiB stay in the L1/L2 cache


@kernel
def digit_value(c):
    """The value of the hex digit ``c`` (upper or lower case), or'ed with _NOT_HEX when ``c`` is no
    hex digit. Branch-free, so that a loop of it vectorises."""
    not_hex = (_U8(c - _U8(48)) > _U8(9)) & (_U8((c | _U8(0x20)) - _U8(97)) > _U8(5))
    return _U8(((c & _U8(0xF)) + _U8(9) * (c >> _U8(6))) | (_U8(not_hex) << _U8(7)))


@kernel
def _pairs_to_bytes(values, first_pair, count, out, at):
    """out[at + i] = the byte of the digit values values[2 * (first_pair + i)] and the next one."""
    first = _U64(2 * first_pair)
    to = _U64(at)
    for i in range(_U64(count)):
        out[to + i] = _U8((values[first + _U64(2) * i] << _U8(4)) | values[first + _U64(2) * i + _U64(1)])


@kernel
def decode_gathered(digits, count, head_out, head_at, head_bytes, out, at):
    """The second pass: the bytes of the ``count`` hex digits in digits[0:count), the first
    ``head_bytes`` of them to head_out[head_at:], the others to out[at:]. Returns nonzero when a
    character is not a hex digit (what was written is then meaningless).

    Three loops over contiguous memory, each of which vectorises: the digits are replaced by
    their values (``digit_value``), the _NOT_HEX bits are or'ed eight bytes at a time, and each
    pair of values makes a byte. ``digits`` is overwritten. Bounds: ``count`` is even, ``digits``
    has room for it rounded up to a multiple of 8, and the outputs have room for the bytes."""
    padded = (count + 7) & ~7
    for j in range(count, padded):
        digits[j] = 0
    for j in range(_U64(count)):
        digits[j] = digit_value(digits[j])
    flags = _U64(0)
    words = digits[:padded].view(np.uint64)
    for i in range(_U64(padded >> 3)):
        flags |= words[i]
    _pairs_to_bytes(digits, 0, head_bytes, head_out, head_at)
    _pairs_to_bytes(digits, head_bytes, (count >> 1) - head_bytes, out, at)
    return flags & _U64(_NOT_HEX_IN_WORD)


@kernel
def decode_payload_bytes(digits, n, k, h, out, out_at, head_out, head_at):
    """Decode the ``n`` digits gathered as bytes k.. of a payload whose first ``h`` bytes go to
    head_out[head_at:] and the others to out[out_at:]; nonzero when one is not a hex digit."""
    to_head = min(max(h - k, 0), n >> 1)
    return decode_gathered(digits, n, head_out, head_at + k, to_head, out, out_at + max(k - h, 0))


@kernel
def gather(digits, n, text, q, stop):
    """The first pass for one line: copy its digits text[q:stop) after the ``n`` gathered in
    ``digits``; returns how many are gathered. Bounds: they fit (n + stop - q <= DIGIT_BLOCK)."""
    to = _U64(n)
    first = _U64(q)
    for j in range(_U64(stop - q)):
        digits[to + j] = text[first + j]
    return n + stop - q


@kernel
def gather_past_block(digits, n, text, q, stop, k, h, out, out_at, head_out, head_at):
    """``gather`` for a line that does not fit the block: the block is decoded whenever it fills,
    as bytes k.. of the payload (``decode_payload_bytes``). Returns (digits gathered, k, flags of
    what was decoded). Bounds: n and stop - q are even. Kept out of ``gather``, so that the
    compiler inlines the copy of an ordinary line into its caller's loop."""
    flags = _U64(0)
    while n + stop - q > DIGIT_BLOCK:
        take = DIGIT_BLOCK - n
        n = gather(digits, n, text, q, q + take)
        q += take
        flags |= decode_payload_bytes(digits, n, k, h, out, out_at, head_out, head_at)
        k += n >> 1
        n = 0
    return gather(digits, n, text, q, stop), k, flags


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
def _x_run(text, pos, size, out, digits, trust_width):
    """``x_run``'s two passes. With ``trust_width``, a line as wide as the one before is taken to
    end where that width ends when a line end and another X line are there, without looking for
    a line end among its digits (the last line of a run, often shorter, is looked at): a line
    end among them then shows as a digit that is not hex, and ``x_run`` asks again without
    trusting widths, which finds each line's end."""
    p = pos
    written = 0
    end = -1
    width = 0  # digits of the previous line: most lines are as wide
    n = 0  # digits gathered and not yet decoded
    flags = _U64(0)
    while p < size and text[p] == _X:
        if p + 1 >= size or text[p + 1] != _SPACE:
            return -1, 0
        start = p + 2
        stop = start + width
        if not (trust_width and stop + 1 < size and text[stop] == _NL and text[stop + 1] == _X):
            stop = line_end(text, start, size)
            if (stop - start) & 1:
                return -1, 0
            width = stop - start
        if n + stop - start <= DIGIT_BLOCK:  # the line fits the block: nearly always
            n = gather(digits, n, text, start, stop)
        else:
            n, written, line_flags = gather_past_block(digits, n, text, start, stop, written, 0, out, 0, out, 0)
            flags |= line_flags
        end = stop
        p = stop + 1
    flags |= decode_payload_bytes(digits, n, written, 0, out, 0, out, 0)
    written += n >> 1
    if flags:
        return -1, 0
    return end, written


@kernel(native="x_run")
def x_run(text, pos, size, out):
    """Decode the run of plain X lines (``X `` then an even number of hex digits, LF ends) that
    starts at text[pos] into out[0:]; returns (index of the last line's end, bytes written),
    or (-1, 0) when a line of the run is not plain. Bounds: the run's bytes lie in
    text[pos:size) and take at most (size - pos) // 2 bytes of ``out``, which the caller
    provides."""
    digits = np.empty(DIGIT_BLOCK + 8, dtype=np.uint8)
    end, written = _x_run(text, pos, size, out, digits, True)
    if end < 0:
        end, written = _x_run(text, pos, size, out, digits, False)
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
def _data_lines(payload, start, end, width, out, w, digits):
    """``X `` + upper-case hex of each ``width`` bytes of payload[start:end] + a line end, into ``out``
    from ``w``: where they end. One message's data lines, for ``_x_lines`` and ``_x_records``."""
    for line in range(start, end, width):
        out[w] = _X
        out[w + 1] = _SPACE
        w += 2
        for i in range(line, min(line + width, end)):
            b = payload[i]
            out[w] = digits[b >> np.uint8(4)]
            out[w + 1] = digits[b & np.uint8(15)]
            w += 2
        out[w] = _NL
        w += 1
    return w


@kernel(native="x_lines")
def _x_lines(payload, width, out, digits):
    """``X `` + upper-case hex of each ``width`` bytes of payload + a line end, into ``out``.
    Bounds: the caller sizes out for 3 bytes a line and 2 a payload byte."""
    return _data_lines(payload, 0, payload.shape[0], width, out, 0, digits)


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


@kernel(native="x_records")
def _x_records(heads, head_ends, payloads, payload_ends, width, out, digits):
    """Records end to end into ``out``: for each record i, its head heads[head_ends[i - 1]:head_ends[i]]
    (from 0 for the first), then the lines ``_x_lines`` writes for its payload
    payloads[payload_ends[i - 1]:payload_ends[i]], or a bare ``X `` line for an empty one, then an
    empty line (dmpmqmsg's after each message). Returns the bytes written. Bounds: the caller makes
    the ends rise from 0 within their buffers and sizes out for every record (``x_records``)."""
    w = 0
    head_start = 0
    payload_start = 0
    for i in range(head_ends.shape[0]):
        for j in range(head_start, head_ends[i]):
            out[w] = heads[j]
            w += 1
        head_start = head_ends[i]
        payload_end = payload_ends[i]
        if payload_end == payload_start:
            out[w] = _X
            out[w + 1] = _SPACE
            out[w + 2] = _NL
            w += 3
        w = _data_lines(payloads, payload_start, payload_end, width, out, w, digits)
        out[w] = _NL
        w += 1
        payload_start = payload_end
    return w


def x_records(heads: Sequence[bytes], payloads: Sequence[bytes], width: int,
              spare: Optional[SpareBuffers] = None) -> np.ndarray:
    """The text of records end to end, each its head (the text before a message's data lines), its
    payload's data lines as ``x_lines`` writes them and an empty line: a group of a dump's messages in one compiled
    pass, which releases the GIL, into one buffer (formatted message by message, each message's
    lines were copied three times more, holding the GIL: into bytes, into its record, into the group).
    ``spare``: where that buffer is taken from (else it is new)."""
    if width < 1:
        raise ValueError(f"data width must be at least 1 byte, not {width}")
    if len(heads) != len(payloads):
        raise ValueError(f"{len(heads)} heads for {len(payloads)} payloads")
    head_sizes = np.fromiter(map(len, heads), np.int64, len(heads))
    payload_sizes = np.fromiter(map(len, payloads), np.int64, len(payloads))
    lines = np.maximum(-(-payload_sizes // width), 1)  # an empty payload has its bare X line
    size = int(head_sizes.sum() + 2 * payload_sizes.sum() + 3 * lines.sum() + len(heads))
    out = np.empty(size, dtype=np.uint8) if spare is None else spare.take(size)
    _x_records(np.frombuffer(b"".join(heads), dtype=np.uint8), np.cumsum(head_sizes),
               np.frombuffer(b"".join(payloads), dtype=np.uint8), np.cumsum(payload_sizes), width, out,
               _UPPER_DIGITS)
    return out
