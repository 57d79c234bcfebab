"""The message index of a capture file: what planning knows without holding payloads.

Scanning a file through its capture format yields its physical messages, transport headers
already removed. Planning needs the full payload of only a few of them (attachment headers,
counts, definitions); for the others it keeps the first ``KEEP_BYTES`` bytes, the length and
a CRC-32 (``messages.partial``), and re-reads the rest from the file when it is needed
(variable definitions, an application message) or when a partition decodes it. Pieces of
logical messages (MQ segments) stay whole until the transport joins them.

The index of a file is built once per (file identity, format) and cached in memory and, for a
large file, in the disk cache of the process's machine (``cache.py``), as columns
(``index_columns.py``), so Spark's planning steps, which run in separate Python workers, share it.
A format may make the entries of plain messages from their parts (``IndexKeep.plain``), without
the message: a dump's observations are most of its messages.
"""
from __future__ import annotations

import os
from typing import List, Optional, Union

from .. import cache
from ..cmi.correl import MSGTYPE_CMI_HEADER
from ..containers import max_record_bytes
from ..frozen import made_whole
from ..messages import DETAILS_REREAD, Descriptor, Origin, PhysicalMessage, crc32, partial
from ..payload.sas_dataset import (RECORD_DATASET, RECORD_OBSERVATIONS, RECORD_TYPE_SIZE, RECORD_VARIABLES,
                                   record_type_in)
from ..storage import identity, open_input
from ..transports import CaptureFormat, Transport
from ..transports.base import IndexKeep, scan_recovering
from .index_columns import IndexColumns
from .memo import KeptInMemory, collector_paused

KEEP_BYTES = 256  # of a large message that is no observations; the rest is re-read on demand
INDEX_FORMAT = 8  # bump when what is cached changes shape
# About 600 bytes a message held (1,260 with the MQMD and 256-byte observation heads): a 5M-row
# dump's index (20,000 messages) is kept, a 20M-row dump's is read again from the disk cache when
# it is needed (a kept plan mostly saves that).
MESSAGES_KEPT_IN_MEMORY = 50_000
_MEMORY: KeptInMemory[List[PhysicalMessage]] = KeptInMemory(16, MESSAGES_KEPT_IN_MEMORY, len)


# Dataset and variable definitions up to this size are kept whole: every planning reads a
# layout from them, and re-reading each from its file cost a queue export of 10,000 small dumps
# 2 s per planning step.
KEEP_DEFINITIONS_BYTES = 64 << 10


def kept_bytes(message: PhysicalMessage) -> Optional[int]:
    """How much of its payload planning keeps of a message (None: all of it): attachment headers
    and definitions whole, other large payloads partial; of large observations (nearly every
    message of a dataset) only their record type, all that planning reads of them (a 5M-row
    dump's index held 256 bytes of each)."""
    return _kept_of(message.descriptor, message.payload)


def _kept_of(descriptor: Optional[Descriptor], payload: Union[bytes, memoryview]) -> Optional[int]:
    """``kept_bytes`` of a message with this descriptor and payload."""
    if descriptor is None:
        return KEEP_BYTES
    if descriptor.msg_type == MSGTYPE_CMI_HEADER:
        return None
    if len(payload) >= RECORD_TYPE_SIZE:
        record_type = record_type_in(payload, descriptor.encoding)
        if record_type in (RECORD_DATASET, RECORD_VARIABLES) and len(payload) <= KEEP_DEFINITIONS_BYTES:
            return None
        if record_type == RECORD_OBSERVATIONS and len(payload) > KEEP_BYTES:  # partial either way
            return RECORD_TYPE_SIZE
    return KEEP_BYTES


def slim(message: PhysicalMessage) -> PhysicalMessage:
    """What planning keeps of a message (``kept_bytes``)."""
    keep = kept_bytes(message)
    return message if keep is None else partial(message, keep)


def scan(path: str, fmt: CaptureFormat) -> List[PhysicalMessage]:
    """Messages of one capture file, damaged stretches as messages of their own; large payloads
    partial and the transport's details as it keeps them in an index (``index_details``), except
    pieces still to be joined."""
    with collector_paused():  # scanned alone too, when the index cache is not used
        return list(scan_recovering(fmt, path, keep=IndexEntries(fmt.transport)))


class IndexEntries(IndexKeep):
    """``entry`` of each message of one transport, as a scan keeps them; for a plain message, made
    from its parts (``IndexKeep.plain``): of a 5M-row dump's 20,000 messages, the scan made the
    MQMD, its details and the whole payload (32 KB) of each, only to keep 4 bytes and a CRC."""

    def __init__(self, transport: Transport):
        self.transport = transport

    def __call__(self, message: PhysicalMessage) -> PhysicalMessage:
        return entry(message, self.transport)

    def plain(self, descriptor: Descriptor, payload: memoryview, origin: Origin) -> PhysicalMessage:
        keep = _kept_of(descriptor, payload)
        if keep is None or len(payload) <= keep:
            kept, full_key = payload.tobytes(), None
        else:
            kept, full_key = payload[:keep].tobytes(), (len(payload), crc32(payload))
        return made_whole(PhysicalMessage, {"descriptor": descriptor, "payload": kept, "origin": origin,
                                            "details": DETAILS_REREAD, "reread_hint": None, "problem": None,
                                            "damage": None, "full_key": full_key})


def entry(message: PhysicalMessage, transport: Transport) -> PhysicalMessage:
    """What the index of a file keeps of one of its messages: a piece as it is (joined later),
    any other ``slim`` with the details its transport keeps (``Transport.index_details``), made
    in one copy."""
    if transport.is_piece(message):
        return message
    details = transport.index_details(message)
    changes = {} if details is message.details else {"details": details}
    keep = kept_bytes(message)
    if keep is not None:
        return partial(message, keep, **changes)
    return message.replaced(**changes) if changes else message


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


def index_key(path: str, fmt: CaptureFormat) -> tuple:
    """What an index is cached by: the file's identity, its format, the bound on one record it
    was read with (a record past it is damage: raising maxRecordBytes reads it) and the index's
    own shape (the disk cache adds the code that made it)."""
    return file_key(path) + (fmt.name, max_record_bytes(), INDEX_FORMAT)


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
    with collector_paused():  # unpickling a 5M-row dump's index (20,000 messages): 0.65 s -> 0.25 s
        stored = cache.load(key, IndexColumns) if on_disk else None
        found = stored.messages() if stored is not None else None
        if found is None:
            found = scan(path, fmt)
            if on_disk:  # as columns: pickled a message at a time, 20,000 took 0.13-0.31 s to store
                cache.store(key, IndexColumns.of(found, path))
    return _MEMORY.put(key, found)
