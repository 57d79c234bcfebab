"""Capture containers: how a capture file's bytes are reached, plain or compressed.

Multi-GB hex dumps are often kept compressed. A compressed file is recognised by its magic
bytes, whatever its name: gzip (``1F 8B``, decompressed by ISA-L through python-isal), bzip2
(``BZh``), xz (``FD 37 7A 58 5A 00``) and Zstandard (``28 B5 2F FD``, through zstandard).
Capture formats then see the decompressed bytes, and every offset (a message's ``file_offset``,
a planned span) counts decompressed bytes.

A compressed file is one stream: reaching an offset means decompressing everything before it.
``CaptureReader`` therefore only ever moves forward through a compressed file (a range that
starts in the bytes it returned last is served from them), and planning gives an attachment
held in a compressed file one partition (``engine/plan.py``), so that the file is decompressed
once per read. Memory stays bounded by the chunks read, never by the file.
"""
from __future__ import annotations

import bz2
import io
import lzma
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Callable, Iterator, Optional, Sequence, Tuple

from .errors import CmiError, CompressedStreamError, Location
from .storage import open_input

# What one record of a capture (a text line or message, a frame, a packet, a TCP stream's unread
# bytes) may take, decompressed: reading holds a few times this much at most, whatever the file
# holds. 64 MiB is 2,000 times the largest CMI message (32 KiB, docs/spec/cmi.md#assembly-rules) and holds an MQ
# message of 30 MB as dmpmqmsg hex; MQ allows 100 MB, which read option maxRecordBytes can admit.
DEFAULT_MAX_RECORD_BYTES = 64 << 20
_limits = {"record": DEFAULT_MAX_RECORD_BYTES}


def max_record_bytes() -> int:
    """The bound on one record in this process (read option ``maxRecordBytes``)."""
    return _limits["record"]


def limit_records(size: int) -> None:
    """Bound one record at ``size`` bytes in this process (what read option ``maxRecordBytes`` sets)."""
    _limits["record"] = int(size)


def _open_gzip(raw: BinaryIO) -> BinaryIO:
    from isal import igzip  # ISA-L: several times zlib's speed
    return igzip.open(raw, "rb")


class _ZstdFrames(io.RawIOBase):
    """A Zstandard stream, every frame of it (``pzstd`` writes several). zstandard's reader ends
    quietly where a cut file ends, as if its bytes were all there is: the frames' headers are
    followed as the compressed bytes go by (``_ZstdFrameEnds``), and a stream that ends inside a
    frame is an ``EOFError``, as gzip, bzip2 and xz say it. Each read gives at most what it is
    asked for, whatever a block stands for (4 bytes can be 128 KiB of zeros)."""

    def __init__(self, raw: BinaryIO):
        super().__init__()
        import zstandard
        self._ends = _ZstdFrameEnds()
        self._raw = raw
        self._stream = zstandard.ZstdDecompressor().stream_reader(self._compressed(), read_across_frames=True,
                                                                  closefd=False)

    def _compressed(self):
        frames = self

        class Followed:
            def read(self, size: int = -1) -> bytes:
                data = frames._raw.read(size)
                frames._ends.feed(data)
                return data
        return Followed()

    def readable(self) -> bool:
        return True

    def readinto(self, view) -> int:
        n = self._stream.readinto(view)
        if not n and not self._ends.at_frame_end:
            raise EOFError("the compressed data ends inside a zstd frame")
        return n

    def close(self) -> None:
        if not self.closed:
            self._stream.close()
            self._raw.close()
        super().close()


class _ZstdFrameEnds:
    """Where the frames of a Zstandard stream end, from their headers alone (RFC 8878): a frame's
    header, its blocks (3-byte headers giving their sizes, the last flagged) and its optional
    checksum, or a skippable frame's size. ``at_frame_end``: the bytes fed so far end a frame."""

    _ZSTD_MAGIC, _SKIPPABLE = b"\x28\xb5\x2f\xfd", b"\x2a\x4d\x18"

    def __init__(self):
        self._state, self._need, self._head, self._skip = "magic", 4, b"", 0
        self._checksum = False
        self._lost = False  # bytes that begin no frame: zstandard says what is wrong with them

    @property
    def at_frame_end(self) -> bool:
        return self._lost or (self._state == "magic" and not self._head and not self._skip)

    def feed(self, data: bytes) -> None:
        pos = 0
        while pos < len(data) and not self._lost:
            if self._skip:
                step = min(self._skip, len(data) - pos)
                self._skip, pos = self._skip - step, pos + step
                continue
            take = min(self._need - len(self._head), len(data) - pos)
            self._head, pos = self._head + data[pos:pos + take], pos + take
            if len(self._head) == self._need:
                head, self._head = self._head, b""
                self._advance(head)

    def _advance(self, head: bytes) -> None:
        state = self._state
        if state == "magic":
            if head == self._ZSTD_MAGIC:
                self._state, self._need = "descriptor", 1
            elif head[1:] == self._SKIPPABLE and head[0] & 0xF0 == 0x50:
                self._state, self._need = "skippable", 4
            else:
                self._lost = True
        elif state == "skippable":
            self._skip, self._state, self._need = int.from_bytes(head, "little"), "magic", 4
        elif state == "descriptor":
            descriptor = head[0]
            single_segment = bool(descriptor & 0x20)
            content_size = (1 if single_segment else 0, 2, 4, 8)[descriptor >> 6]
            rest = (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 3] + content_size
            self._checksum = bool(descriptor & 0x04)
            self._state, self._need = ("header", rest) if rest else ("block", 3)
        elif state == "header":
            self._state, self._need = "block", 3
        elif state == "block":
            header = int.from_bytes(head, "little")
            self._skip = 1 if (header >> 1) & 3 == 1 else header >> 3  # a run-length block holds its one byte
            if header & 1:  # the frame's last block
                self._state, self._need = ("checksum", 4) if self._checksum else ("magic", 4)
        else:  # checksum
            self._state, self._need = "magic", 4


def _open_zstd(raw: BinaryIO) -> BinaryIO:
    return _ZstdFrames(raw)


def _decompression_errors() -> Tuple[type, ...]:
    """What the decompressors raise on a cut or corrupt stream."""
    import zstandard
    from isal.isal_zlib import IsalError
    return EOFError, zlib.error, lzma.LZMAError, OSError, ValueError, zstandard.ZstdError, IsalError


_DECOMPRESSED_STEP = 64 << 10


class _Decompressed(io.RawIOBase):
    """A decompressed stream whose failures are typed: whatever its decompressor raises on a cut
    or corrupt stream (EOFError, zlib's, lzma's, ISA-L's ``IsalError``, zstandard's ``ZstdError``,
    gzip's ``BadGzipFile``) is a ``CompressedStreamError`` naming the file and the decompressed
    offset reached. Every reader of a compressed capture reads through it: format detection, the
    message index, partitions, pcap readers alike."""

    def __init__(self, stream: BinaryIO, path: str, compression: str):
        super().__init__()
        self._stream, self._path, self._compression = stream, path, compression
        self.position = 0  # decompressed bytes given so far
        self.name = path

    def readable(self) -> bool:
        return True

    def readinto(self, view) -> int:
        try:
            # A little at a time: what a failing call decompressed is lost with it, so the offset
            # named is within this much of where the stream breaks.
            n = self._stream.readinto(memoryview(view)[:_DECOMPRESSED_STEP])
        except CmiError:
            raise
        except _decompression_errors() as e:
            raise CompressedStreamError(
                f"the {self._compression} stream is cut short or damaged ({type(e).__name__}: {e}); the file "
                f"offset is in its decompressed bytes, and nothing after it can be read",
                Location(self._path, None, self.position)) from None
        self.position += n or 0
        return n

    def close(self) -> None:
        if not self.closed:
            self._stream.close()
        super().close()


@dataclass(frozen=True)
class Compression:
    name: str
    magic: bytes
    decompress: Callable[[BinaryIO], BinaryIO]  # the decompressed stream of a raw file, closing it when closed

    def open(self, path: str) -> BinaryIO:
        return io.BufferedReader(_Decompressed(self.decompress(_Buffered(open_input(path))), path, self.name),
                                 buffer_size=READ_AHEAD_BYTES)


class _Buffered(io.BufferedReader):
    """A raw file for a decompressor, read in large pieces (a remote file's every read is a
    request), closing the raw file with itself."""

    def __init__(self, raw: BinaryIO):
        super().__init__(raw if isinstance(raw, io.RawIOBase) else _RawOf(raw), buffer_size=READ_AHEAD_BYTES)


class _RawOf(io.RawIOBase):
    """``io.RawIOBase`` over any file with ``readinto`` (a pyarrow file), so io can buffer it."""

    def __init__(self, f):
        self._f = f

    def readable(self) -> bool:
        return True

    def readinto(self, view) -> int:
        return self._f.readinto(view)

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._f.seek(offset, whence)

    def tell(self) -> int:
        return self._f.tell()

    def close(self) -> None:
        self._f.close()
        super().close()


READ_AHEAD_BYTES = 1 << 20
COMPRESSIONS = (
    Compression("gzip", b"\x1f\x8b", _open_gzip),
    Compression("bzip2", b"BZh", lambda raw: bz2.open(raw, "rb")),
    Compression("xz", b"\xfd7zXZ\x00", lambda raw: lzma.open(raw, "rb")),
    Compression("zstd", b"\x28\xb5\x2f\xfd", _open_zstd),
    Compression("zstd", b"\x50\x2a\x4d\x18", _open_zstd),  # a skippable frame first, as pzstd writes
)
_MAGIC_BYTES = max(len(c.magic) for c in COMPRESSIONS)


def compression_of(path: str) -> Optional[Compression]:
    """The compression of the file at ``path``, from its first bytes, or None for a plain file."""
    with open_input(path) as f:
        head = f.read(_MAGIC_BYTES)
    return next((c for c in COMPRESSIONS if head.startswith(c.magic)), None)


def open_capture(path: str) -> BinaryIO:
    """The capture file's bytes, decompressed when it is compressed; a failed read (an I/O error,
    a cut or corrupt stream) is a typed error naming the file and the offset."""
    compression = compression_of(path)
    return _Buffered(open_input(path)) if compression is None else compression.open(path)


_UNKNOWN_SIZE_FIRST_READ = 64 << 10


class CaptureReader:
    """Ranges of a capture file's (decompressed) bytes. A plain file is read where asked; a
    compressed one only forward: a range starting before the stream's position must start in
    the bytes returned last, which are kept for that (the unfinished record of a chunk)."""

    def __init__(self, path: str):
        self.path = path
        self.compression = compression_of(path)
        # A plain file unbuffered: ranges are read straight into the caller's buffer, no copy.
        self._file = open_input(path) if self.compression is None else self.compression.open(path)
        self._position = 0  # of a compressed stream
        self._last_start, self._last = 0, b""
        # A plain file's size when its system says (a /proc file says 0): a read asks for no more
        # than the file holds, so a small file is not given a chunk's worth of memory.
        self._size = self._file.size() if self.compression is None else 0

    def read(self, start: int, size: int) -> bytes:
        """Up to ``size`` bytes from offset ``start`` (fewer at the end of the file)."""
        if self.compression is None:
            self._file.seek(start)
            if self._size:
                size = max(min(size, self._size - start), 0)
                parts = [self._file.read(size)]
            else:  # an empty file, or one whose size is unknown: a little first
                parts = [self._file.read(min(size, _UNKNOWN_SIZE_FIRST_READ))]
            while 0 < len(parts[-1]) and sum(map(len, parts)) < size:  # a raw read may stop short
                parts.append(self._file.read(size - sum(map(len, parts))))
            return parts[0] if len(parts) == 1 else b"".join(parts)
        if start < self._position:
            kept_from = start - self._last_start
            if kept_from < 0 or self._last_start + len(self._last) != self._position:
                # Not served by the bytes kept: start the stream again (never on the paths planned).
                self._reopen()
                return self.read(start, size)
            head = self._last[kept_from:kept_from + size]
            data = head + self._forward(size - len(head)) if len(head) < size else head
        else:
            self._skip(start - self._position)
            data = self._forward(size)
        self._last_start, self._last = start, data
        return data

    @property
    def scatters(self) -> bool:
        """Whether ``read_scattered`` fills buffers straight from the file (a plain local file)."""
        return self.compression is None and getattr(self._file, "scatters", lambda: False)()

    def read_scattered(self, start: int, views: Sequence[memoryview]) -> int:
        """Fill ``views`` in turn from offset ``start`` (``scatters`` must be true); returns the bytes
        read, fewer when the file ends first."""
        return self._file.read_scattered(start, views)

    def readinto(self, start: int, view: memoryview) -> int:
        """Fill ``view`` from offset ``start``; returns the bytes read (fewer at the end of the file)."""
        if self.compression is None:
            self._file.seek(start)
            got = 0
            while got < len(view):
                n = self._file.readinto(view[got:])
                if not n:
                    break
                got += n
            return got
        data = self.read(start, len(view))
        view[:len(data)] = data
        return len(data)

    def _forward(self, size: int) -> bytes:
        data = self._file.read(size)
        self._position += len(data)
        return data

    def _skip(self, count: int) -> None:
        while count > 0:
            got = len(self._forward(min(count, 8 << 20)))
            if not got:
                return
            count -= got

    def _reopen(self) -> None:
        self._file.close()
        self._file = self.compression.open(self.path)
        self._position, self._last_start, self._last = 0, 0, b""

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "CaptureReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_in_chunks(path: str, chunk_bytes: int, whole_records: Callable[[bytes], int],
                   start: int = 0) -> Iterator[Tuple[int, bytes, int]]:
    """(offset, data, stop) for consecutive chunks of the file from offset ``start``: ``data[:stop]``
    holds whole records (``whole_records(data)`` says where the last complete one ends), and the
    next chunk starts at ``offset + stop``. A chunk holding no whole record grows until it does,
    up to ``max_record_bytes()``: a chunk that large still holding none is the last, with ``stop``
    0 (its record is too large, or no record: the caller says which). Memory is bounded by the
    chunk size and that bound, whatever the file holds."""
    limit = max_record_bytes()
    chunk_bytes = min(chunk_bytes, limit)  # no record larger than the bound is read, whatever the file's size
    with CaptureReader(path) as reader:
        base, size = start, chunk_bytes
        while True:
            data = reader.read(base, size)
            at_end = len(data) < size
            stop = len(data) if at_end else whole_records(data)
            if stop == 0 and not at_end:  # one record longer than the chunk
                if size >= limit:
                    yield base, data, 0
                    return
                data = b""  # not held while the larger chunk is read
                size = min(size * 2, limit)
                continue
            yield base, data, stop
            if at_end:
                return
            base, size = base + stop, chunk_bytes
