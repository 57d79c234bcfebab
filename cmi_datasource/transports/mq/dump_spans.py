"""Payloads of many planned dump messages at once, decoded by a compiled kernel.

A partition knows from planning where each of its messages lies in the dump file
(``MessageSpan``) and what its payload must be (length and CRC-32). It does not need the
descriptor lines again, only the bytes of the ``X`` lines. ``read_dump_spans`` reads the
file in large contiguous pieces and decodes the hex of every span in one kernel call per
piece, writing the payloads end to end into one buffer, so that no Python runs per line or
per message byte.

Each span's first ``heads[i]`` payload bytes (MQ headers, a record type) go to a separate
buffer, so that the main buffer holds only the data the caller wants, end to end.

The kernel takes only what ``dmpmqmsg`` writes: ``A``/``N``/``*``/empty lines, then ``X``
lines of hex digits (LF or CRLF). A span holding anything else in its data (``S``/``T`` lines,
an ASCII column, bad digits, a second message) is handed to ``dmpmqmsg.parse_dump``, which
decodes it or raises the precise ``DumpSyntaxError``: both paths give the same bytes. The
kernel does not read attribute lines again (planning parsed them): a span whose attribute
lines were damaged since planning still gives its data, which the caller checks against the
length and CRC-32 planning recorded.
"""
from __future__ import annotations

from typing import Iterator, List, Optional, Sequence

import numpy as np

from ...compiled import kernel
from ...containers import CaptureReader
from ...errors import CmiFormatError, Location
from ...messages import MessageSpan
from ..base import Parse, SpanPayloads, parse_span
from .dmpmqmsg import parse_dump
from .hex_lines import DIGIT_BLOCK, decode_payload_bytes, gather, gather_past_block, line_end

_NL, _CR, _SPACE, _X, _A, _N, _STAR = (ord(c) for c in "\n\r XAN*")


@kernel
def _decode_span(text, p, e, h, out, span_w, head_out, hw, digits, width, trust_width):
    """Decode the span text[p:e) (``_decode_spans``); returns (its payload's length, or -1 when
    the kernel does not take it; the width of its last line). The X lines' digits are gathered
    into ``digits`` and decoded a block at a time (``hex_lines``). With ``trust_width``, a line
    as wide as the one before is taken to end where that width ends when a line end and another
    X line are there (the last line, often shorter, is looked at): a line end among its digits
    then shows as a digit that is not hex, and the caller asks again without trusting widths,
    which finds each line's end."""
    k = 0  # payload bytes decoded
    n = 0  # digits gathered and not yet decoded
    flags = np.uint64(0)
    data_seen = False
    while p < e:
        c = text[p]
        if c == _X:
            if p + 1 >= e or text[p + 1] != _SPACE:
                return -1, width
            q = p + 2
            stop = q + width
            if trust_width and stop + 1 < e and text[stop] == _NL and text[stop + 1] == _X:
                p = stop + 1
            else:
                stop = line_end(text, q, e)
                p = stop + 1
                if stop > q and text[stop - 1] == _CR:
                    stop -= 1
                if (stop - q) & 1:
                    return -1, width
                width = stop - q
            if n + stop - q <= DIGIT_BLOCK:  # the line fits the block: nearly always
                n = gather(digits, n, text, q, stop)
            else:
                n, k, line_flags = gather_past_block(digits, n, text, q, stop, k, h, out, span_w, head_out, hw)
                flags |= line_flags
            data_seen = True
        elif c == _NL:
            p += 1
        elif c == _CR and p + 1 < e and text[p + 1] == _NL:
            p += 2
        elif c == _STAR or ((c == _A or c == _N) and not data_seen):
            p = line_end(text, p, e) + 1
        else:
            return -1, width
    flags |= decode_payload_bytes(digits, n, k, h, out, span_w, head_out, hw)
    k += n >> 1
    if flags or not data_seen:
        return -1, width
    return k, width


@kernel(native="decode_spans")
def _decode_spans(text, starts, ends, heads, first, out, w, head_out, hw, lengths):
    """Decode spans ``first``.. of ``text``; returns (failed span or len(starts), w, hw).

    Bounds: every text index is checked against the span end, which the caller checked
    against len(text). A span writes at most (end - start) // 2 bytes, which the caller
    reserved in ``out`` past ``w``, and at most heads[s] slots of ``head_out``.
    On failure, w and hw are where the failed span began."""
    digits = np.empty(DIGIT_BLOCK + 8, dtype=np.uint8)
    width = 0  # digits of the previous full line: most lines are as wide, so guess first
    for s in range(first, starts.shape[0]):
        p, e, h = starts[s], ends[s], heads[s]
        length, width = _decode_span(text, p, e, h, out, w, head_out, hw, digits, width, True)
        if length < 0:
            length, width = _decode_span(text, p, e, h, out, w, head_out, hw, digits, width, False)
            if length < 0:
                return s, w, hw
        lengths[s] = length
        w += max(length - h, 0)
        hw += h
    return starts.shape[0], w, hw


PIECE_BYTES = 8 << 20  # file text read and decoded per kernel call
MAX_GAP_BYTES = 64 << 10  # unwanted bytes between two spans that one read may still cover


def span_runs(spans: Sequence[MessageSpan], piece_bytes: int) -> Iterator[range]:
    """Runs of consecutive spans of one file, close enough together to be read at once."""
    first = 0
    for i in range(1, len(spans) + 1):
        if i == len(spans):
            yield range(first, i)
            return
        prev, span = spans[i - 1], spans[i]
        if (span[0] != prev[0] or not 0 <= span[2] - prev[3] <= MAX_GAP_BYTES
                or span[3] - spans[first][2] > piece_bytes):
            yield range(first, i)
            first = i


def read_dump_spans(spans: Sequence[MessageSpan], heads: Sequence[int], room: int = 0,
                    piece_bytes: Optional[int] = None) -> Iterator[SpanPayloads]:
    """Payloads of dmpmqmsg messages at ``spans``, decoded by ``_decode_spans``."""
    return read_spans_in_bulk(spans, heads, room, piece_bytes, _decode_spans, parse_dump)


def read_spans_in_bulk(spans: Sequence[MessageSpan], heads: Sequence[int], room: int, piece_bytes: Optional[int],
                       decode, parse: Parse) -> Iterator[SpanPayloads]:
    """Payloads of hex-text messages at ``spans`` (in the order given), a piece of the file at a time:
    ``decode`` is a kernel with ``_decode_spans``'s contract, and a span it refuses is read by the
    line parser ``parse``, which gives the same bytes or the precise error.
    A piece's buffers are reused for the next one: use it before asking for the next.

    Memory is bounded by ``piece_bytes`` (default ``PIECE_BYTES``) of text plus its payloads (and one span, when a
    single message is larger), whatever the number of spans."""
    piece_bytes = PIECE_BYTES if piece_bytes is None else piece_bytes
    heads_all = np.asarray(heads, dtype=np.int64)
    if len(heads_all) != len(spans) or (heads_all < 0).any():
        raise ValueError("one non-negative head length per span")
    reader: Optional[CaptureReader] = None
    # Both buffers are reused from piece to piece: fresh memory costs a page fault per 4 KiB.
    text, scratch = bytearray(), None
    try:
        for piece in span_runs(spans, piece_bytes):
            chosen = [spans[i] for i in piece]
            source = chosen[0][0]
            if reader is None or reader.path != source:
                if reader is not None:
                    reader.close()
                reader = CaptureReader(source)
            base, size = chosen[0][2], chosen[-1][3] - chosen[0][2]
            if len(text) < size:
                text = bytearray(size)
            view = memoryview(text)[:size]
            got = reader.readinto(base, view)
            if got < size:
                _, index, start, end = next(span for span in chosen if span[3] > base + got)
                raise CmiFormatError(f"the file ends at byte {base + got}, before the planned message "
                                     f"ending at {end}: it changed since it was planned",
                                     Location(source, index, start))
            payloads = _decode_piece(view, chosen, heads_all[piece.start:piece.stop], base, room, scratch,
                                     decode, parse)
            scratch = payloads.buffer
            yield payloads
    finally:
        if reader is not None:
            reader.close()


def _decode_piece(text: memoryview, spans: List[MessageSpan], heads: np.ndarray, base: int, room: int,
                  scratch: Optional[np.ndarray], decode, parse: Parse) -> SpanPayloads:
    starts = np.array([s[2] - base for s in spans], dtype=np.int64)
    ends = np.array([s[3] - base for s in spans], dtype=np.int64)
    if (starts < 0).any() or (ends < starts).any() or (ends > len(text)).any():
        raise ValueError("spans must lie inside the text, in order")
    capacity = (ends - starts) // 2  # hex: every payload byte takes two characters
    reserve = np.concatenate([np.cumsum(capacity[::-1])[::-1], [0]])  # what spans s.. may still write
    view = np.frombuffer(text, dtype=np.uint8)
    buffer = scratch if scratch is not None and len(scratch) >= room + reserve[0] else \
        np.empty(room + int(reserve[0]), dtype=np.uint8)
    head = np.empty(int(heads.sum()), dtype=np.uint8)
    lengths = np.zeros(len(spans), dtype=np.int64)
    data_ends = np.zeros(len(spans), dtype=np.int64)
    s, w, hw = 0, room, 0
    while s < len(spans):
        done, w, hw = decode(view, starts, ends, heads, s, buffer, w, head, hw, lengths)
        if done > s:
            data_ends[s:done] = _running_data_ends(lengths[s:done], heads[s:done], w)
        if done == len(spans):
            break
        at = int(starts[done])  # the line-by-line parser gives the bytes, or raises the precise error
        payload = parse_span(parse, bytes(text[at:at + spans[done][3] - spans[done][2]]), spans[done]).payload
        h = int(heads[done])
        head[hw:hw + min(h, len(payload))] = np.frombuffer(payload[:h], dtype=np.uint8)
        rest = np.frombuffer(payload, dtype=np.uint8)[h:]
        if len(buffer) < w + len(rest) + reserve[done + 1]:  # S and T lines hold a byte per character
            buffer = np.concatenate([buffer[:w], np.empty(len(rest) + int(reserve[done + 1]), dtype=np.uint8)])
        buffer[w:w + len(rest)] = rest
        w += len(rest)
        hw += h
        lengths[done] = len(payload)
        data_ends[done] = w
        s = done + 1
    head_starts = np.concatenate([[0], np.cumsum(heads)[:-1]]).astype(np.int64)
    data_starts = np.concatenate([[0], data_ends - room]).astype(np.int64)
    return SpanPayloads(list(spans), lengths, heads, head, head_starts, buffer, room, data_starts)


def _running_data_ends(lengths: np.ndarray, heads: np.ndarray, end: int) -> np.ndarray:
    """Buffer offsets where each of a run of kernel-decoded spans' data ends, the last at ``end``."""
    sizes = np.maximum(lengths - heads, 0)
    return end - np.concatenate([np.cumsum(sizes[::-1])[::-1][1:], [0]])
