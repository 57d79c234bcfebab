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
from typing import Any, List, Optional

from ..cmi.correl import MSGTYPE_CMI_HEADER
from ..messages import PhysicalMessage, crc32, partial
from ..payload.sas_dataset import RECORD_DATASET, RECORD_TYPE_SIZE, RECORD_VARIABLES, record_type_of
from ..storage import identity, open_input
from ..transports import CaptureFormat
from ..transports.base import scan_recovering
from .memo import KeptInMemory

KEEP_BYTES = 256  # record types, counts and dataset definitions fit; the rest is re-read on demand
INDEX_FORMAT = 5  # bump when what is cached changes shape
CACHE_DIR = os.path.join(tempfile.gettempdir(), "cmi-datasource-index")
# About 600 bytes a message held: a 5M-row dump's index (20,000 messages) is kept, a 20M-row
# dump's is read again from the disk cache when it is needed (a kept plan mostly saves that).
MESSAGES_KEPT_IN_MEMORY = 50_000
_MEMORY: KeptInMemory[List[PhysicalMessage]] = KeptInMemory(16, MESSAGES_KEPT_IN_MEMORY, len)


# Dataset and variable definitions up to this size are kept whole: every planning reads a
# layout from them, and re-reading each from its file cost a queue export of 10,000 small dumps
# 2 s per planning step.
KEEP_DEFINITIONS_BYTES = 64 << 10


def slim(message: PhysicalMessage) -> PhysicalMessage:
    """What planning keeps of a message: attachment headers and definitions whole, other large
    payloads partial."""
    descriptor = message.descriptor
    if descriptor is not None and (descriptor.msg_type == MSGTYPE_CMI_HEADER or (
            RECORD_TYPE_SIZE <= len(message.payload) <= KEEP_DEFINITIONS_BYTES
            and record_type_of(message) in (RECORD_DATASET, RECORD_VARIABLES))):
        return message
    return partial(message, KEEP_BYTES)


def scan(path: str, fmt: CaptureFormat) -> List[PhysicalMessage]:
    """Messages of one capture file, damaged stretches as messages of their own; large payloads
    partial except pieces still to be joined."""
    is_piece = fmt.transport.is_piece
    return list(scan_recovering(fmt, path, keep=lambda m: m if is_piece(m) else slim(m)))


FINGERPRINT_BYTES = 64 << 10


def file_key(path: str) -> tuple:
    """The file's identity (``storage.identity``). Where a rewrite cannot set that identity
    back, it is the key: an object store's version (S3 ETag, GCS generation), a POSIX file's
    ctime and inode (``cp -p`` and ``rsync -t`` restore size and mtime, never the ctime; rsync
    also makes a new inode). Where only a modification time is known (a store without versions;
    Windows, whose st_ctime is the creation time), a CRC of the file's first and last 64 KiB is
    added: a dump rewritten with the same size and mtime still differs there (its header carries
    the time it was created), so it gets a new index."""
    found = identity(path)
    signature = (found.path, found.size) + found.version
    names = {name for name, _ in found.version}
    if "mtime" not in names or ("ctime" in names and os.name == "posix"):
        return signature
    with open_input(path) as f:
        head = f.read(FINGERPRINT_BYTES)
        f.seek(max(found.size - FINGERPRINT_BYTES, 0))
        tail = f.read(FINGERPRINT_BYTES)
    return signature + (crc32(tail, crc32(head)),)


def cache_file_of(key: tuple) -> str:
    """The disk cache's file for ``key`` (a tuple whose repr says everything it depends on)."""
    return os.path.join(CACHE_DIR, hashlib.sha256(repr(key).encode()).hexdigest() + ".pickle")


def index_key(path: str, fmt: CaptureFormat) -> tuple:
    """What an index is cached by: the file's identity, its format, the index's own shape and
    the code that made it."""
    return file_key(path) + (fmt.name, INDEX_FORMAT, code_fingerprint())


_CODE_FINGERPRINT: Optional[str] = None


def code_fingerprint() -> str:
    """What tells this package's code from other versions of it: the size and mtime of each of
    its modules. What the disk cache keeps (indexes, plans) is pickled objects of its classes;
    an upgrade, or an edit to an installed checkout, must not be handed what older code made."""
    global _CODE_FINGERPRINT
    if _CODE_FINGERPRINT is None:
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        stats = []
        for folder, _, names in os.walk(package):
            for name in sorted(names):
                if name.endswith(".py"):
                    stat = os.stat(os.path.join(folder, name))
                    stats.append((os.path.relpath(os.path.join(folder, name), package), stat.st_size,
                                  stat.st_mtime_ns))
        _CODE_FINGERPRINT = hashlib.sha256(repr(sorted(stats)).encode()).hexdigest()[:16]
    return _CODE_FINGERPRINT


# Smaller files are rescanned rather than cached on disk: scanning 35 KB of dump takes 0.4 ms,
# about what writing its index took (10,000 small dumps spent 5 s of 15 storing indexes), and a
# load's plan is kept anyway (planned.py).
DISK_CACHED_FILE_BYTES = 1 << 20


def indexed(path: str, fmt: CaptureFormat) -> List[PhysicalMessage]:
    """``scan(path, fmt)``, from the memory or disk cache when the file has not changed."""
    key = index_key(path, fmt)
    found = _MEMORY.get(key)
    if found is not None:
        return found
    _, size = key[:2]  # file_key: (path, size, ...)
    on_disk = size >= DISK_CACHED_FILE_BYTES
    cache_file = cache_file_of(key)
    found = load_cached(cache_file) if on_disk else None
    if found is None:
        found = scan(path, fmt)
        if on_disk:
            store_cached(cache_file, found)
    return _MEMORY.put(key, found)


# What the disk cache keeps, the most recently written first: a queue export of 10,000 small
# dumps must fit (or the next planning step rescans them all), and big dumps' indexes (about
# 400 bytes a message) must not fill the temporary directory.
CACHE_FILES_KEPT = 20_000
CACHE_BYTES_KEPT = 2 << 30
# Pruning lists and stats the whole cache: done once per this many stores, it costs a few
# stats a store instead of thousands (once per 512 stores, a full cache cost 10,000 new
# indexes 2.9 s).
STORES_PER_PRUNE = 4096
_stores_since_prune = STORES_PER_PRUNE - 1  # a process prunes at its first store


def load_cached(cache_file: str) -> Any:
    """What ``store_cached`` kept in ``cache_file``; None when it is missing or unreadable."""
    try:
        with open(cache_file, "rb") as f:
            return pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return None


def store_cached(cache_file: str, found: Any) -> None:
    """Keep ``found`` in the disk cache, atomically (readers see the old file or the new one)."""
    # Best effort: a read-only or full temp directory only costs a rescan next time.
    global _stores_since_prune
    try:
        os.makedirs(CACHE_DIR, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=CACHE_DIR, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            pickle.dump(found, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, cache_file)
        _stores_since_prune += 1
        if _stores_since_prune >= STORES_PER_PRUNE:
            _stores_since_prune = 0
            _prune()
    except OSError:
        pass


def _prune() -> None:
    """Keep the most recently written indexes only, within CACHE_FILES_KEPT and CACHE_BYTES_KEPT:
    changed files leave stale ones behind."""
    entries = []
    with os.scandir(CACHE_DIR) as found:
        for entry in found:
            if entry.name.endswith(".pickle"):
                try:
                    stat = entry.stat()
                except OSError:
                    continue
                entries.append((stat.st_mtime, stat.st_size, entry.path))
    entries.sort(reverse=True)
    held = 0
    for kept, (_, size, path) in enumerate(entries):
        held += size
        if kept >= CACHE_FILES_KEPT or held > CACHE_BYTES_KEPT:
            try:
                os.remove(path)
            except OSError:
                pass
