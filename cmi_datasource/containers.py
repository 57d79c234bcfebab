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
import contextlib
import io
import lzma
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Callable, Iterator, Optional, Tuple

from .errors import Location, TruncatedError
from .storage import open_input


def _open_gzip(raw: BinaryIO) -> BinaryIO:
    from isal import igzip  # ISA-L: several times zlib's speed
    return igzip.open(raw, "rb")


def _open_zstd(raw: BinaryIO) -> BinaryIO:
    import io

    import zstandard
    return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw, closefd=True), buffer_size=1 << 20)


@dataclass(frozen=True)
class Compression:
    name: str
    magic: bytes
    decompress: Callable[[BinaryIO], BinaryIO]  # the decompressed stream of a raw file, closing it when closed

    def open(self, path: str) -> BinaryIO:
        return self.decompress(_Buffered(open_input(path)))


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
)
_MAGIC_BYTES = max(len(c.magic) for c in COMPRESSIONS)


def compression_of(path: str) -> Optional[Compression]:
    """The compression of the file at ``path``, from its first bytes, or None for a plain file."""
    with open_input(path) as f:
        head = f.read(_MAGIC_BYTES)
    return next((c for c in COMPRESSIONS if head.startswith(c.magic)), None)


def open_capture(path: str) -> BinaryIO:
    """The capture file's bytes, decompressed when it is compressed; read them inside
    ``decompressing(path)`` so that a damaged stream is a typed error."""
    compression = compression_of(path)
    return _Buffered(open_input(path)) if compression is None else compression.open(path)


@contextlib.contextmanager
def decompressing(path: str, position: Callable[[], int] = lambda: None):
    """Turn what a decompressor raises on a cut or corrupt stream (EOFError, zlib, lzma, zstd
    errors) into a ``TruncatedError`` naming the file and the decompressed offset reached."""
    try:
        yield
    except (EOFError, zlib.error, lzma.LZMAError, OSError, ValueError) as e:
        if isinstance(e, (FileNotFoundError, PermissionError)) or compression_of(path) is None:
            raise
        raise TruncatedError(f"the compressed file is cut short or damaged ({type(e).__name__}: {e}); the "
                             f"byte offset is in its decompressed bytes", Location(path, None, position())) from None


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

    def read(self, start: int, size: int) -> bytes:
        """Up to ``size`` bytes from offset ``start`` (fewer at the end of the file)."""
        if self.compression is None:
            self._file.seek(start)
            parts = [self._file.read(size)]
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
        with decompressing(self.path, lambda: self._position):
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


def read_in_chunks(path: str, chunk_bytes: int, whole_records: Callable[[bytes], int]
                   ) -> Iterator[Tuple[int, bytes, int]]:
    """(offset, data, stop) for consecutive chunks of the file: ``data[:stop]`` holds whole records
    (``whole_records(data)`` says where the last complete one ends), and the next chunk starts at
    ``offset + stop``. A chunk holding no whole record grows until it does; memory is bounded by
    the chunk size and the largest record, whatever the file size."""
    with CaptureReader(path) as reader:
        base, size = 0, chunk_bytes
        while True:
            data = reader.read(base, size)
            at_end = len(data) < size
            stop = len(data) if at_end else whole_records(data)
            if stop == 0 and not at_end:  # one record longer than the chunk
                size *= 2
                continue
            yield base, data, stop
            if at_end:
                return
            base, size = base + stop, chunk_bytes
