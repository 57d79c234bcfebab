"""The message index of a capture file: what planning knows without holding payloads.

Scanning a file through its capture format yields its physical messages, transport headers
already removed. Planning needs the full payload of only a few of them (attachment headers,
counts, definitions); for the others it keeps the first ``KEEP_BYTES`` bytes, the length and
a CRC-32 (``messages.partial``), and re-reads the rest from the file when it is needed
(variable definitions, an application message) or when a partition decodes it. Pieces of
logical messages (MQ segments) stay whole until the transport joins them.

The index of a file is built once per (file identity, format) and cached in memory and in
the temporary directory of the process's machine, so Spark's planning steps, which run in separate Python
workers, share it.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from collections import OrderedDict
from typing import List

from ..cmi.correl import MSGTYPE_CMI_HEADER
from ..messages import PhysicalMessage, crc32, partial
from ..storage import identity, open_input
from ..transports import CaptureFormat
from ..transports.base import scan_recovering

KEEP_BYTES = 256  # record types, counts and dataset definitions fit; the rest is re-read on demand
INDEX_FORMAT = 4  # bump when what is cached changes shape
CACHE_DIR = os.path.join(tempfile.gettempdir(), "cmi-datasource-index")
_MEMORY: "OrderedDict[tuple, List[PhysicalMessage]]" = OrderedDict()
_MEMORY_FILES = 16


def slim(message: PhysicalMessage) -> PhysicalMessage:
    """What planning keeps of a message: attachment headers whole, large payloads partial."""
    if message.descriptor is not None and message.descriptor.msg_type == MSGTYPE_CMI_HEADER:
        return message
    return partial(message, KEEP_BYTES)


def scan(path: str, fmt: CaptureFormat) -> List[PhysicalMessage]:
    """Messages of one capture file, damaged stretches as messages of their own; large payloads
    partial except pieces still to be joined."""
    is_piece = fmt.transport.is_piece
    return [m if is_piece(m) else slim(m) for m in scan_recovering(fmt, path)]


FINGERPRINT_BYTES = 64 << 10


def file_key(path: str) -> tuple:
    """The file's identity (``storage.identity``: path, size, and mtime or the store's version)
    and, unless the store versions its objects, a CRC of the file's first and last 64 KiB: a
    dump rewritten with the same size and a restored mtime (``cp -p``, ``rsync -t``) still differs
    there (its header carries the time it was created), so it gets a new index. An S3 ETag or
    a GCS generation changes with every write: no bytes need reading."""
    found = identity(path)
    if found.version[0][0] != "mtime":
        return (found.path, found.size) + found.version
    with open_input(path) as f:
        head = f.read(FINGERPRINT_BYTES)
        f.seek(max(found.size - FINGERPRINT_BYTES, 0))
        tail = f.read(FINGERPRINT_BYTES)
    return (found.path, found.size) + found.version + (crc32(tail, crc32(head)),)


def _cache_file(key: tuple) -> str:
    return os.path.join(CACHE_DIR, hashlib.sha256(repr(key).encode()).hexdigest() + ".pickle")


def index_key(path: str, fmt: CaptureFormat) -> tuple:
    """What an index is cached by: the file's identity, its format and the index's own shape."""
    return file_key(path) + (fmt.name, INDEX_FORMAT)


def indexed(path: str, fmt: CaptureFormat) -> List[PhysicalMessage]:
    """``scan(path, fmt)``, from the memory or disk cache when the file has not changed."""
    key = index_key(path, fmt)
    found = _MEMORY.get(key)
    if found is not None:
        _MEMORY.move_to_end(key)
        return found
    cache_file = _cache_file(key)
    try:
        with open(cache_file, "rb") as f:
            found = pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        found = scan(path, fmt)
        _store(cache_file, found)
    _MEMORY[key] = found
    while len(_MEMORY) > _MEMORY_FILES:
        _MEMORY.popitem(last=False)
    return found


CACHE_FILES_KEPT = 256


def _store(cache_file: str, messages: List[PhysicalMessage]) -> None:
    # Best effort: a read-only or full temp directory only costs a rescan next time.
    try:
        os.makedirs(CACHE_DIR, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=CACHE_DIR, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            pickle.dump(messages, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, cache_file)
        _prune()
    except OSError:
        pass


def _prune() -> None:
    """Keep the most recently written indexes only: changed files leave stale ones behind."""
    entries = [os.path.join(CACHE_DIR, n) for n in os.listdir(CACHE_DIR) if n.endswith(".pickle")]
    if len(entries) <= CACHE_FILES_KEPT:
        return
    entries.sort(key=os.path.getmtime)
    for stale in entries[:len(entries) - CACHE_FILES_KEPT]:
        try:
            os.remove(stale)
        except OSError:
            pass

