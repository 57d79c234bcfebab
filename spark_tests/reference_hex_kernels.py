"""The hex kernels of dumps as they were before issue 30, kept as the reference the faster ones
are compared against (spark_tests/unit/test_hex_kernels_reference.py): a 128 KiB table of every
two-character pair, one lookup per byte, one loop per line. Copied unchanged from
cmi_datasource/transports/mq/hex_lines.py and dump_spans.py (commit 9c8dcec), so they repeat
the package's line handling on purpose; what issue 30 left unchanged is imported from the package
(``line_end``, ``head_apart``, ``all_head``, and the pair table with its ``decode_hex``, which
amqsbcg's rows still use)."""
from __future__ import annotations

from cmi_datasource.compiled import kernel
from cmi_datasource.transports.mq.amqsbcg import PAIR_VALUES, decode_hex  # noqa: F401 (PAIR_VALUES: the tests')
from cmi_datasource.transports.mq.hex_lines import all_head, head_apart, line_end

_NL, _CR, _SPACE, _X, _A, _N, _STAR = (ord(c) for c in "\n\r XAN*")


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



@kernel
def _decode_spans(text, starts, ends, heads, first, out, w, head_out, hw, lengths, pairs):
    """Decode spans ``first``.. of ``text``; returns (failed span or len(starts), w, hw).

    Bounds: every text index is checked against the span end, which the caller checked
    against len(text). A span writes at most (end - start) // 2 bytes, which the caller
    reserved in ``out`` past ``w``, and exactly heads[s] slots of ``head_out``.
    On failure, w and hw are where the failed span began."""
    width = 0  # digits of the previous full line: most lines are as wide, so guess first
    for s in range(first, starts.shape[0]):
        p, e, h = starts[s], ends[s], heads[s]
        span_w, span_hw = w, hw
        moved = h == 0
        data_seen = False
        failed = False
        while p < e:
            c = text[p]
            if c == _X:
                if p + 1 >= e or text[p + 1] != _SPACE:
                    failed = True
                    break
                q = p + 2
                stop = q + width
                if stop < e and text[stop] == _NL and decode_hex(text, q, stop, out, w, pairs) == 0:
                    p = stop + 1
                else:
                    stop = line_end(text, q, e)
                    digits_end = stop - 1 if stop > q and text[stop - 1] == _CR else stop
                    if (digits_end - q) & 1 or decode_hex(text, q, digits_end, out, w, pairs) != 0:
                        failed = True
                        break
                    stop = digits_end
                    width = stop - q
                    p = line_end(text, stop, e) + 1
                w += (stop - q) >> 1
                data_seen = True
                if not moved and w - span_w >= h:
                    w = head_apart(out, span_w, w, h, head_out, hw)
                    moved = True
            elif c == _NL:
                p += 1
            elif c == _CR and p + 1 < e and text[p + 1] == _NL:
                p += 2
            elif c == _STAR or ((c == _A or c == _N) and not data_seen):
                p = line_end(text, p, e) + 1
            else:
                failed = True
                break
        if failed or not data_seen:
            return s, span_w, span_hw
        lengths[s] = w - span_w + (h if moved else 0)
        if not moved:
            w = all_head(out, span_w, w, head_out, hw)
        hw += h
    return starts.shape[0], w, hw


PIECE_BYTES = 8 << 20  # file text read and decoded per kernel call
