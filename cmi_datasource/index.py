"""The message index of a capture file: what planning knows without holding payloads.

Scanning a file yields its physical messages with their MQ headers removed
(``mq.envelope.unwrap``). Planning needs the full payload of only a few of them
(attachment headers, counts, definitions); for the others it keeps the first
``KEEP_BYTES`` bytes, the length and a CRC-32 (``messages.partial``), and re-reads the
rest from the file when it is needed (variable definitions, an application message) or
when a partition decodes it. Segment pieces stay whole until
they are joined.

The index of a file is built once per (path, size, mtime) and cached in memory and
in the temporary directory, so Spark's planning steps, which run in separate Python
workers, share it.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import pickle
import tempfile
from collections import OrderedDict
from typing import List

from .capture.readers import read_capture
from .messages import PhysicalMessage, crc32, partial
from .mq.envelope import unwrap
from .mq.mqmd import MSGTYPE_CMI_HEADER
from .mq.segments import is_segment

KEEP_BYTES = 256  # record types, counts and dataset definitions fit; the rest is re-read on demand
INDEX_FORMAT = 2  # bump when what is cached changes shape
CACHE_DIR = os.path.join(tempfile.gettempdir(), "cmi-datasource-index")
_MEMORY: "OrderedDict[tuple, List[PhysicalMessage]]" = OrderedDict()
_MEMORY_FILES = 16


def slim(message: PhysicalMessage) -> PhysicalMessage:
    """What planning keeps of a message: attachment headers whole, large payloads partial."""
    if message.descriptor is not None and message.descriptor.msg_type == MSGTYPE_CMI_HEADER:
        return message
    return partial(message, KEEP_BYTES)


def _with_captured_length(original: PhysicalMessage, unwrapped: PhysicalMessage) -> PhysicalMessage:
    if unwrapped.envelope is None:
        return unwrapped
    return dataclasses.replace(unwrapped, envelope=dataclasses.replace(
        unwrapped.envelope, captured_length=original.length))


def scan(path: str) -> List[PhysicalMessage]:
    """Unwrapped messages of one capture file; large payloads partial except segment pieces."""
    out = []
    for message in read_capture(path):
        unwrapped = _with_captured_length(message, unwrap(message))
        out.append(unwrapped if is_segment(unwrapped) else slim(unwrapped))
    return out


FINGERPRINT_BYTES = 64 << 10


def file_key(path: str) -> tuple:
    """Path, size, mtime and a CRC of the file's first and last 64 KiB: a dump rewritten with the
    same size and a restored mtime (``cp -p``, ``rsync -t``) still differs there (its header
    carries the time it was created), so it gets a new index."""
    stat = os.stat(path)
    with open(path, "rb") as f:
        head = f.read(FINGERPRINT_BYTES)
        f.seek(max(stat.st_size - FINGERPRINT_BYTES, 0))
        tail = f.read(FINGERPRINT_BYTES)
    return (os.path.abspath(path), stat.st_size, stat.st_mtime_ns, crc32(tail, crc32(head)),
            INDEX_FORMAT)


def _cache_file(key: tuple) -> str:
    return os.path.join(CACHE_DIR, hashlib.sha256(repr(key).encode()).hexdigest() + ".pickle")


def indexed(path: str) -> List[PhysicalMessage]:
    """``scan(path)``, from the memory or disk cache when the file has not changed."""
    key = file_key(path)
    found = _MEMORY.get(key)
    if found is not None:
        _MEMORY.move_to_end(key)
        return found
    cache_file = _cache_file(key)
    try:
        with open(cache_file, "rb") as f:
            found = pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        found = scan(path)
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

