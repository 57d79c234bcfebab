"""Binary captures of raw MQGET results: for each message, a binary MQMD (version 1 or 2,
either byte order) followed by a 4-byte big-endian data length and the data.

Programs that save what MQGET returned write this; the byte order of the MQMD is read
from its Version field (1 or 2), and its character set from its StrucId ("MD  " in
ASCII or EBCDIC). The format is documented in docs/capture-formats.md#ibm-mq.
"""
from __future__ import annotations

import struct
from typing import BinaryIO, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from ...errors import CmiFormatError, Location, TruncatedError
from ...containers import CaptureReader
from ...layout import BIG, LITTLE, Field, Layout
from ...messages import MessageSpan, PhysicalMessage
from ..base import Keep, SpanPayloads, copied_payloads, parse_in_chunks, span_readers
from .dump_spans import PIECE_BYTES, span_runs
from .message import mq_message
from .mqmd import MQMD, MQMD_STRUC_ID, MQMD_V1, MQMD_V2, descriptor_from_bytes, descriptor_to_bytes

ASCII_MAGIC = MQMD_STRUC_ID.encode("ascii")
EBCDIC_MAGIC = MQMD_STRUC_ID.encode("cp037")
# What follows each MQMD, always big-endian whatever the MQMD's byte order; then the data.
DATA_LENGTH = Layout("MQGET data length", (Field("data_length", "I"),))


class CaptureFormatError(CmiFormatError):
    """A binary capture record does not start with an MQMD."""


def looks_like_capture(head: bytes) -> bool:
    return head[:4] in (ASCII_MAGIC, EBCDIC_MAGIC)


def mqmd_shape(data: bytes, pos: int, location: Location) -> Tuple[str, int, str]:
    """(byte order, version, character codec) of the MQMD at ``pos``."""
    magic = data[pos:pos + 4]
    if magic not in (ASCII_MAGIC, EBCDIC_MAGIC):
        raise CaptureFormatError(f"expected an MQMD (StrucId 'MD  '), found {magic!r}", location)
    if len(data) - pos < 8:
        raise TruncatedError("capture ends inside an MQMD", location)
    codec = "latin-1" if magic == ASCII_MAGIC else "cp037"
    for order in (BIG, LITTLE):
        (version,) = struct.unpack_from(order + "i", data, pos + MQMD_V1.offsets["version"])
        if version in (1, 2):
            return order, version, codec
    raise CaptureFormatError("MQMD Version is neither 1 nor 2 in either byte order", location)


def parse_capture(data: bytes, source: str, base_offset: int = 0, first_index: int = 0,
                  stop: Optional[int] = None) -> Iterator[PhysicalMessage]:
    """The messages of ``data`` (up to ``stop``, a record boundary)."""
    size = len(data) if stop is None else min(stop, len(data))
    pos, index = 0, first_index
    while pos < size:
        where = Location(source, index, base_offset + pos)
        (order, version, codec), header, length = _record_shape(data, pos, where, size)
        mqmd = descriptor_from_bytes(data, pos, order, version, codec, where)
        start = pos + header
        if length > size - start:
            raise TruncatedError(f"message declares {length} data bytes; {size - start} remain", where)
        end = start + length
        yield mq_message(mqmd, data[start:end], source, index, base_offset + pos, base_offset + end)
        pos, index = end, index + 1


def _record_shape(data: bytes, pos: int, where: Location, size: Optional[int] = None
                  ) -> Tuple[Tuple[str, int, str], int, int]:
    """(the MQMD's shape, bytes before the data, data length) of the record at ``pos``, whose
    bytes end at ``size`` (default: the end of ``data``)."""
    shape = mqmd_shape(data, pos, where)
    mqmd_size = (MQMD_V2 if shape[1] == 2 else MQMD_V1).size
    if (len(data) if size is None else size) - pos < mqmd_size + DATA_LENGTH.size:
        raise TruncatedError("the capture ends inside the message's MQMD or data length", where)
    return shape, mqmd_size + DATA_LENGTH.size, DATA_LENGTH.unpack(data, pos + mqmd_size, BIG, where)["data_length"]


READ_CHUNK_BYTES = 16 << 20  # read and parsed at a time, on several threads


def end_of_whole_records(data: bytes) -> int:
    """Where the last record held whole in ``data`` ends (0: none is): a chunk boundary. Damage
    ends the walk; the chunk that starts there is parsed whole and raises."""
    pos = 0
    while True:
        try:
            _, header, length = _record_shape(data, pos, Location())
        except CmiFormatError:
            return pos
        if pos + header + length > len(data):
            return pos
        pos += header + length


def read_capture(path: str, chunk_bytes: int = READ_CHUNK_BYTES, keep: Optional[Keep] = None
                 ) -> Iterator[PhysicalMessage]:
    """Physical messages of a capture file, each through ``keep``, in chunks parsed on several
    threads (``parse_in_chunks``): memory bounded by a few chunks, not the file's size."""
    return parse_in_chunks(path, chunk_bytes, end_of_whole_records, parse_capture, keep)


def read_capture_spans(spans: Sequence[MessageSpan], heads: Sequence[int], room: int = 0,
                       piece_bytes: Optional[int] = None) -> Iterator[SpanPayloads]:
    """The raw payloads of the records at planned ``spans`` (``CaptureFormat.payload_pieces``):
    a run of nearby records read at once, each record's MQMD and length checked against its span
    (a record that no longer fits it means the file changed since planning), and the payloads
    copied end to end by numpy, heads apart. No Python runs per byte; a little per message."""
    heads_all = np.asarray(heads, dtype=np.int64)
    if len(heads_all) != len(spans) or (heads_all < 0).any():
        raise ValueError("one non-negative head length per span")
    runs = span_runs(spans, PIECE_BYTES if piece_bytes is None else piece_bytes)
    for run, reader in span_readers(spans, runs):
        chosen, heads_run = list(spans[run.start:run.stop]), heads_all[run.start:run.stop]
        piece = _scattered_payloads(reader, chosen, heads_run, room) if reader.scatters else None
        if piece is None:  # records of either MQMD version, damage, a file that changed: checked one by one
            base = chosen[0][2]
            data = reader.read(base, chosen[-1][3] - base)
            piece = copied_payloads(data, chosen, _data_starts(data, chosen, base), heads_run, base, room)
        yield piece


def _scattered_payloads(reader: CaptureReader, spans: List[MessageSpan], heads: np.ndarray,
                        room: int) -> Optional[SpanPayloads]:
    """``copied_payloads`` of ``spans`` without the copy: the file read once (``preadv``) with each
    record's MQMD and length into a row of its own, its head into ``head`` and the rest of its
    data straight to its place in ``buffer``. Every record is taken to have the first one's MQMD
    shape; None when one has not (or the file ends first), for the caller to read the records one
    by one, whose errors say what is wrong."""
    first = reader.read(spans[0][2], MQMD_V2.size + DATA_LENGTH.size)
    try:
        order, version, _ = mqmd_shape(first, 0, Location())
    except CmiFormatError:
        return None
    header = (MQMD_V2 if version == 2 else MQMD_V1).size + DATA_LENGTH.size
    starts = np.array([span[2] for span in spans], dtype=np.int64)
    ends = np.array([span[3] for span in spans], dtype=np.int64)
    lengths = ends - starts - header
    gaps = starts[1:] - ends[:-1]
    if (lengths < 0).any() or (gaps < 0).any():
        return None
    kept_heads = np.minimum(heads, lengths)
    sizes = lengths - kept_heads
    head_starts = np.concatenate([[0], np.cumsum(heads)[:-1]]).astype(np.int64)
    data_starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    records = np.empty((len(spans), header), dtype=np.uint8)
    head = np.zeros(int(heads.sum()), dtype=np.uint8)
    buffer = np.empty(room + int(data_starts[-1]), dtype=np.uint8)
    skipped = np.empty(int(gaps.max(initial=0)), dtype=np.uint8).data  # bytes between two spans
    records_view, head_view, buffer_view = records.reshape(-1).data, head.data, buffer.data
    views = []
    for i, (gap, at, count, start, size) in enumerate(zip([0] + gaps.tolist(), head_starts.tolist(),
                                                          kept_heads.tolist(), data_starts.tolist(), sizes.tolist())):
        if gap:
            views.append(skipped[:gap])
        views.append(records_view[i * header:(i + 1) * header])
        if count:
            views.append(head_view[at:at + count])
        if size:
            views.append(buffer_view[room + start:room + start + size])
    if reader.read_scattered(int(starts[0]), views) != int(ends[-1] - starts[0]):
        return None
    magic = records[:, :4]
    at = MQMD_V1.offsets["version"]
    big = records[:, at:at + 4].copy().view(">u4")[:, 0].astype(np.int64)
    little = records[:, at:at + 4].copy().view("<u4")[:, 0].astype(np.int64)
    versions = np.where((big == 1) | (big == 2), big, np.where((little == 1) | (little == 2), little, 0))
    declared = records[:, header - 4:].copy().view(">u4")[:, 0].astype(np.int64)
    shaped = ((magic == np.frombuffer(ASCII_MAGIC, np.uint8)).all(axis=1)
              | (magic == np.frombuffer(EBCDIC_MAGIC, np.uint8)).all(axis=1))
    if not (shaped.all() and (versions == version).all() and (declared == lengths).all()):
        return None
    return SpanPayloads(list(spans), lengths, heads, head, head_starts, buffer, room, data_starts)


def _data_starts(data: bytes, spans: List[MessageSpan], base: int) -> np.ndarray:
    """Where each span's data starts in ``data`` (file bytes from ``base``), its record checked."""
    starts = np.empty(len(spans), dtype=np.int64)
    for i, (source, index, start, end) in enumerate(spans):
        where = Location(source, index, start)
        at = start - base
        if end - base > len(data):
            raise CmiFormatError(f"the file ends at byte {base + len(data)}, before the planned message "
                                 f"ending at {end}: it changed since it was planned", where)
        _, header, length = _record_shape(data, at, where)
        if at + header + length != end - base:
            raise CmiFormatError("the message differs from the one planned: the file changed since it "
                                 "was planned", where)
        starts[i] = at + header
    return starts


def next_descriptor(data: bytes, offset: int) -> Optional[int]:
    """The first offset at or after ``offset`` where an MQMD of a known shape starts (its StrucId
    and a version of 1 or 2), for reading on past damage; None when there is none."""
    at = offset
    while at < len(data):
        found = [p for p in (data.find(ASCII_MAGIC, at), data.find(EBCDIC_MAGIC, at)) if p >= 0]
        if not found:
            return None
        at = min(found)
        try:
            mqmd_shape(data, at, Location())
            return at
        except CmiFormatError:
            at += 1
    return None


def salvage(data: bytes, source: str, index: int, start: int) -> Optional[MQMD]:
    """The MQMD at ``start`` of a damaged record when it still reads whole, else None."""
    try:
        order, version, codec = mqmd_shape(data, start, Location(source, index, start))
        if len(data) - start < (MQMD_V2 if version == 2 else MQMD_V1).size:
            return None
        return descriptor_from_bytes(data, start, order, version, codec, Location(source, index, start))
    except CmiFormatError:
        return None


def write_capture(out: BinaryIO, messages: Iterable[Tuple[MQMD, bytes]], order: str = LITTLE,
                  codec: str = "latin-1") -> int:
    count = 0
    for descriptor, payload in messages:
        out.write(descriptor_to_bytes(descriptor, order, codec))
        out.write(DATA_LENGTH.pack({"data_length": len(payload)}, BIG))
        out.write(payload)
        count += 1
    return count
