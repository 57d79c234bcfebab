"""Opening a capture: the files of one load, their formats, their messages and the attachments.

``Capture.open(paths)`` resolves the paths, finds each file's capture format (by its first
bytes, or the ``format`` option), reads each file's message index, lets each transport join
its pieces into logical messages and assembles the CMI attachments. A ``Capture`` is what a
load holds, never changed once opened; it also reads (and keeps) each dataset attachment's
definitions and what of its observations can be trusted, since every view asks for them.
Choosing what to read (``selection.py``), planning partitions (``plan.py``) and the views'
tables (``tables.py``, ``views.py``) work on it; it knows none of them.
"""
from __future__ import annotations

import contextlib
import logging
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from ..charsets import CharsetPolicy
from ..containers import compression_of
from ..cmi.assembly import Assembly, Attachment, assemble, message_code_page
from ..cmi.header import ATTACHMENT_DATASET
from ..errors import (CmiError, CmiFormatError, CompressedStreamError, InputFileError, KeptError, Location,
                      UnknownCaptureFormatError)
from ..messages import MessageSpan, PhysicalMessage, UnjoinedMessage
from ..storage import PathNotFoundError
from ..payload.sas_dataset import RECORD_OBSERVATIONS, DatasetLayout, RecordStream, read_layout, record_type_of
from ..transports import CaptureFormat, Transport, capture_format, detect_format
from .reread import planned_messages, reread
from .index import MESSAGES_KEPT_IN_MEMORY, file_key, indexed, scan, slim
from .memo import KeptInMemory, collector_paused
from .recovery import Recovery, recover
from .paths import resolve_paths

_LOG = logging.getLogger(__name__)


def logical_messages(messages: Sequence[PhysicalMessage], formats: Dict[str, str]
                     ) -> Tuple[List[PhysicalMessage], List[UnjoinedMessage]]:
    """Each transport's messages joined by that transport; capture order kept within each."""
    by_transport: Dict[str, List[PhysicalMessage]] = defaultdict(list)
    transports: Dict[str, Transport] = {}
    for m in messages:
        transport = capture_format(formats[m.source]).transport
        transports[transport.name] = transport
        by_transport[transport.name].append(m)
    logical: List[PhysicalMessage] = []
    unjoined: List[UnjoinedMessage] = []
    for name, group in by_transport.items():
        joined, lost = transports[name].logical_messages(group)
        logical.extend(joined)
        unjoined.extend(lost)
    return logical, unjoined


def sequence_of(att: Attachment, location: Location) -> Optional[int]:
    """The sequence number in ``att`` of the message at ``location`` (0: its count message)."""
    def at(m: Optional[PhysicalMessage]) -> bool:
        return m is not None and any(span[0] == location.source and span[1] == location.message_index
                                     for span in m.spans)
    if at(att.count_message):
        return 0
    return next((k for k, m in att.sequenced.items() if at(m)), None)


def _messages_of(path: str, fmt: CaptureFormat, use_index_cache: bool) -> List[PhysicalMessage]:
    """The file's physical messages."""
    return list(indexed(path, fmt) if use_index_cache else scan(path, fmt))


def _not_of_format(fmt: CaptureFormat, messages: Sequence[PhysicalMessage]) -> Optional[CmiFormatError]:
    """For a file read in the format named by option: the error saying it may be no capture of
    that format when nothing in it reads as one (not a damaged capture), else None."""
    first = messages[0].damage if messages else None
    if first is None or any(m.damage is None for m in messages):
        return None
    return first.kind(first.problem, first.location, f"the file may be no {fmt.name} capture: leave out "
                      f"option('format') to have its format recognised from its first bytes")


# What makes a file corrupt for option ignoreCorruptFiles: it cannot be read as any capture (no
# format recognises its first bytes, or none of it reads as the format named), it is no regular
# file or the system fails to read it, or its compressed stream breaks before its format is known.
# Damage found once a file reads as a capture is the read modes' (a CompressedStreamError then is
# a damaged stretch, never raised here).
CORRUPT_FILE_ERRORS = (UnknownCaptureFormatError, InputFileError, CompressedStreamError)


@dataclass(frozen=True)
class LeftOut:
    """A file of the load left out of the read, by option ignoreCorruptFiles or ignoreMissingFiles."""

    path: str
    option: str
    problem: str  # the error's summary

    def text(self) -> str:
        return f"{self.path} left out of the read (option {self.option}): {self.problem}"


def left_out(path: str, option: str, error: CmiError) -> LeftOut:
    """What is kept of a file left out; logged, as Spark's file sources log the files they skip."""
    found = LeftOut(path, option, getattr(error, "problem", str(error)))
    _LOG.warning("%s", found.text())
    return found


@dataclass(frozen=True)
class Capture:
    paths: List[str]
    messages: List[PhysicalMessage]  # one per captured record, transport headers removed (index.py)
    assembly: Assembly
    charsets: CharsetPolicy = field(default_factory=CharsetPolicy)
    unjoined: List[UnjoinedMessage] = field(default_factory=list)
    formats: Dict[str, str] = field(default_factory=dict)  # capture format name of each file
    compressed: FrozenSet[str] = frozenset()  # the files that are compressed streams (containers.py)
    left_out: Tuple[LeftOut, ...] = ()  # files of the load not read (options ignoreCorruptFiles, ignoreMissingFiles)
    # Memos of what is read from the attachments (pure functions of the load).
    _layouts: Dict[bytes, Union[Tuple[DatasetLayout, Optional[RecordStream]], KeptError]] = field(
        default_factory=dict, compare=False, repr=False)
    _recoveries: Dict[bytes, Recovery] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def open(cls, paths: Iterable[str], charsets: CharsetPolicy = CharsetPolicy(),
             use_index_cache: bool = True, format: Optional[str] = None,
             options: Iterable[Tuple[str, str]] = (), ignore_corrupt: bool = False,
             ignore_missing: bool = False) -> "Capture":
        """The capture files under ``paths``, through their cached message indexes; ``format``
        names the capture format of every file instead of recognising each by its first bytes;
        ``options``: the load's "<transport>.<name>" options, for the formats that read them;
        ``ignore_corrupt``, ``ignore_missing``: options ignoreCorruptFiles and ignoreMissingFiles."""
        if isinstance(paths, str):
            paths = [paths]
        return cls.of_files(resolve_paths(paths), charsets, use_index_cache, format, options, ignore_corrupt,
                            ignore_missing)

    @classmethod
    def of_files(cls, files: Sequence[str], charsets: CharsetPolicy = CharsetPolicy(),
                 use_index_cache: bool = True, format: Optional[str] = None,
                 options: Iterable[Tuple[str, str]] = (), ignore_corrupt: bool = False,
                 ignore_missing: bool = False, may_be_empty: bool = False) -> "Capture":
        """``open`` of files already resolved. A file that is no capture (``CORRUPT_FILE_ERRORS``)
        is left out with ``ignore_corrupt``, one gone with ``ignore_missing``; when that leaves
        nothing, the first file's error is raised (there is nothing to read), unless
        ``may_be_empty`` (a stream's micro-batch: its new files may all be left out)."""
        given = dict(options)
        chosen: Dict[str, CaptureFormat] = {}
        messages: List[PhysicalMessage] = []
        skipped: List[Tuple[LeftOut, CmiError]] = []
        for f in files:
            wrong: Optional[CmiFormatError] = None
            try:
                fmt = (capture_format(format) if format else detect_format(f)).configured(given)
                found = _messages_of(f, fmt, use_index_cache)
                wrong = _not_of_format(fmt, found) if format else None
                if wrong is not None:
                    raise wrong
            except PathNotFoundError as e:
                if not ignore_missing:
                    raise
                skipped.append((left_out(f, "ignoreMissingFiles", e), e))
                continue
            except CmiFormatError as e:
                if not ignore_corrupt or not (isinstance(e, CORRUPT_FILE_ERRORS) or e is wrong):
                    raise
                skipped.append((left_out(f, "ignoreCorruptFiles", e), e))
                continue
            chosen[f] = fmt
            messages.extend(found)
        if skipped and not chosen and not may_be_empty:
            raise skipped[0][1]
        formats = {f: fmt.name for f, fmt in chosen.items()}
        with collector_paused():  # a partition of the messages view opens its capture too
            logical, unjoined = logical_messages(messages, formats)
            logical = [slim(m) if m.parts else m for m in logical]
            assembly = assemble(logical, charsets, unjoined)
        compressed = frozenset(f for f in chosen if compression_of(f) is not None)
        return cls(list(chosen), messages, assembly, charsets, unjoined, formats,
                   compressed, tuple(lost for lost, _ in skipped))

    @property
    def attachments(self) -> List[Attachment]:
        return self.assembly.attachments

    def transport_of(self, message: PhysicalMessage) -> Optional[Transport]:
        name = self.formats.get(message.source)
        return None if name is None else capture_format(name).transport

    def full(self, message: PhysicalMessage) -> PhysicalMessage:
        """The message with its whole payload (re-read when planning kept only its start)."""
        if not message.is_partial:
            return message
        return next(reread(planned_messages([message], [0]), self.formats))

    def held_whole(self, messages: Sequence[PhysicalMessage]) -> Optional[List[PhysicalMessage]]:
        """The messages when all are held whole (a capture built in memory), else None: the caller
        then re-reads them from their files in one pass."""
        return None if any(m.is_partial for m in messages) else list(messages)

    # -- definitions ------------------------------------------------------------------------

    def layout_and_observations(self, att: Attachment) -> Tuple[DatasetLayout, Optional[RecordStream]]:
        """Dataset definitions of a complete dataset attachment and its observation stream
        (measured, not decoded); cached, and raises on bad layouts."""
        cached = self._layouts.get(att.key)
        if isinstance(cached, KeptError):
            raise cached.error()
        if cached is not None:
            return cached
        try:
            # Definitions are decoded whole; observations are only measured.
            messages = [self.full(m) if m.is_partial and record_type_of(m) != RECORD_OBSERVATIONS else m
                        for m in att.ordered_messages()]
            found = read_layout(messages, att.header.wire, lambda message: message_code_page(message, self.charsets))
        except CmiFormatError as e:
            failure = KeptError.of(e).within(att.key_hex, sequence_of(att, e.location))
            self._layouts[att.key] = failure
            raise failure.error() from None
        self._layouts[att.key] = found
        return found

    def layout(self, att: Attachment) -> DatasetLayout:
        """Dataset definitions of a complete dataset attachment (cached); raises on bad layouts."""
        return self.layout_and_observations(att)[0]

    def recovery(self, att: Attachment) -> Recovery:
        """What can be trusted of a dataset attachment and what is lost (cached)."""
        found = self._recoveries.get(att.key)
        if found is None:
            found = self._recoveries[att.key] = recover(
                att, self.full, lambda message: message_code_page(message, self.charsets))
        return found

    @cached_property
    def read_whole(self) -> FrozenSet[str]:
        """The files a partition cannot read a byte range of: compressed streams, and formats
        whose planned spans are no byte ranges (pcap)."""
        return self.compressed | {f for f, name in self.formats.items() if not capture_format(name).splittable}

    def damaged(self) -> List[PhysicalMessage]:
        """The damaged stretches of the capture's files, one message each."""
        return [m for m in self.messages if m.damage is not None]

    def dataset_attachments(self) -> List[Attachment]:
        return [a for a in self.attachments if a.entry.attachment_type == ATTACHMENT_DATASET]

    def file_attachments(self) -> List[Attachment]:
        return [a for a in self.attachments if a.entry.attachment_type != ATTACHMENT_DATASET]

    @cached_property
    def held_messages(self) -> Dict[Tuple[MessageSpan, ...], PhysicalMessage]:
        """The logical messages of the attachments held whole in memory, by the spans a plan
        names them with: a capture built in memory has no file to re-read them from."""
        held: Dict[Tuple[MessageSpan, ...], PhysicalMessage] = {}
        for att in self.attachments:
            for m in att.sequenced.values():
                if m is not None and not m.is_partial:
                    held[m.spans] = m
        return held


_OPEN: KeptInMemory[Capture] = KeptInMemory(4, MESSAGES_KEPT_IN_MEMORY, lambda capture: len(capture.messages))
_HELD: Optional[Dict[tuple, Capture]] = None


def _identity_or_gone(path: str, ignore_missing: bool) -> tuple:
    """``file_key``; for a file removed since it was listed, with ``ignore_missing``, a key
    saying so (``Capture.of_files`` then leaves it out)."""
    try:
        return file_key(path)
    except PathNotFoundError:
        if not ignore_missing:
            raise
        return (path, "gone")


@contextlib.contextmanager
def held_open() -> Iterator[None]:
    """Captures opened inside the block stay open until it ends, whatever their size: one
    planning step asks for its capture several times (schema, selection, slices), and a queue
    export of 10,000 small dumps is heavier than ``_OPEN`` keeps (opening it twice doubled the
    planning)."""
    global _HELD
    outer = _HELD
    _HELD = {} if outer is None else outer
    try:
        yield
    finally:
        _HELD = outer


def open_cached(paths: Sequence[str], charsets: CharsetPolicy, format: Optional[str] = None,
                options: Tuple[Tuple[str, str], ...] = (), ignore_corrupt: bool = False,
                listed: bool = False, **file_filters: Any) -> Capture:
    """``Capture.open``, reused within one process (a Spark Python worker plans and reads many
    times). The key holds each file's identity (size, mtime, a CRC of its ends), so a changed
    file is read again. ``file_filters``: which files under ``paths`` are read
    (``ReadOptions.file_filters``; its ``ignore_missing`` also goes to ``Capture.of_files``).
    ``listed``: ``paths`` are files a stream listed before, read as they are (one removed since
    is left out with ``ignore_missing``), and the read may leave every one out."""
    files = list(paths) if listed else resolve_paths(paths, **file_filters)
    ignore_missing = bool(file_filters.get("ignore_missing"))
    key = (tuple(_identity_or_gone(f, ignore_missing) for f in files), charsets, format, tuple(options),
           ignore_corrupt, ignore_missing, listed)
    capture = _OPEN.get(key) or (_HELD or {}).get(key)
    if capture is None:
        capture = _OPEN.put(key, Capture.of_files(files, charsets, True, format, options, ignore_corrupt,
                                                  ignore_missing, may_be_empty=listed))
    if _HELD is not None:
        _HELD[key] = capture
    return capture
