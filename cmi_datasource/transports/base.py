"""What a transport provides: the seam between capture files and the CMI/SAS core.

A ``Transport`` (IBM MQ, TIB/Rendezvous, MQTT, ...) owns one or more ``CaptureFormat``s, the
kinds of file its traffic is captured in. A format recognises its files by their first bytes,
lists their physical messages for the message index (its own envelopes already removed) and
re-reads the messages a partition was planned on. The transport joins pieces into logical
messages (MQ segments) and fills its own columns of the messages view. Nothing here knows
a particular transport; ``transports/__init__.py`` keeps the registry.
"""
from __future__ import annotations

import copy
import dataclasses
import itertools
import os
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass
from itertools import groupby
from typing import (Any, BinaryIO, Callable, Deque, Dict, Iterable, Iterator, List, Mapping, Optional, Union,
                    Sequence, Tuple)

import numpy as np
import pyarrow as pa

from ..containers import CaptureReader, max_record_bytes, read_in_chunks
from ..errors import CmiFormatError, CmiOptionError, KeptError, Location, RecordTooLargeError, TruncatedError
from ..messages import Descriptor, MessageSpan, Origin, PhysicalMessage, UnjoinedMessage, crc32
from ..option_table import Option
from ..threads import ProcessPool

Keep = Callable[[PhysicalMessage], PhysicalMessage]  # what a message index keeps of a message


class IndexKeep:
    """The ``Keep`` of a message index, which can also make the entry of a plain message from its
    parts, without the message: a format that reads many such messages (a dump's observations)
    then builds no message, transport details and whole payload only to cut them down."""

    def __call__(self, message: PhysicalMessage) -> PhysicalMessage:
        raise NotImplementedError

    def plain(self, descriptor: Descriptor, payload: memoryview, origin: Origin) -> PhysicalMessage:
        """What ``self(message)`` gives of a message that is no piece, has neither damage nor a
        reread hint, whose transport keeps none of its details in an index (``DETAILS_REREAD``)
        and whose parts are these; ``payload`` lasts only for the call."""
        raise NotImplementedError

# parse(data, source, base_offset, first_index): the physical messages in ``data``, a piece of the
# file starting at byte ``base_offset`` with message ``first_index``; offsets, indexes and errors
# are those of the whole file.
Parse = Callable[[bytes, str, int, int], Iterator[PhysicalMessage]]


class CaptureFormat:
    """One kind of capture file. Subclasses set ``name`` and implement ``sniff`` and ``parse``;
    ``scan`` and ``reread`` follow from ``parse`` and may be overridden to be faster."""

    name: str = ""  # what option("format", ...) names it by, e.g. "dmpmqmsg"
    description: str = ""  # one line: what files these are
    suffix: str = ""  # the ending of the files the writer names (".dmp")
    splittable: bool = True  # False: a planned span is no byte range to re-read alone (pcap)
    transport: "Transport"  # set when the transport is registered
    # The "<transport>.<name>" read options it reads (lower-case; its transport declares them in
    # ``Transport.options``), e.g. the pcap format's "mqtt.port", and the values a load gave them
    # (``configured``).
    read_options: Tuple[str, ...] = ()
    settings: Tuple[Tuple[str, str], ...] = ()

    def configured(self, options: Mapping[str, str]) -> "CaptureFormat":
        """This format reading with those of the load's ``options`` it declares in ``read_options``;
        itself when none is given. The copy's name carries them (``pcap[mqtt.port=1884]``): a plan
        records a file's format by name, ``transports.capture_format`` makes the same copy from it
        in any process, and the message index is kept under it."""
        given = tuple(sorted((key, str(options[key])) for key in self.read_options if key in options))
        if not given:
            return self
        found = copy.copy(self)
        found.settings = given
        found.name = f"{self.name}[{';'.join(f'{key}={value}' for key, value in given)}]"
        return found

    def sniff(self, head: bytes) -> bool:
        """Whether a file whose first bytes are ``head`` (up to ``SNIFF_BYTES``) is in this format."""
        raise NotImplementedError

    def parse(self, data: bytes, source: str, base_offset: int = 0,
              first_index: int = 0) -> Iterator[PhysicalMessage]:
        """The physical messages in ``data`` (see ``Parse``), envelopes removed."""
        raise NotImplementedError

    # Where the last record held whole in a piece of the file ends (0: none is): a format that
    # says is read in pieces of whole records, never whole (``parse_in_chunks``).
    whole_records: Optional[Callable[[bytes], int]] = None

    def scan(self, path: str, keep: Optional[Keep] = None) -> Iterator[PhysicalMessage]:
        """Every physical message of the file, for its message index, each through ``keep``
        (what the index keeps of it) when given. By default ``parse`` reads the file in pieces of
        whole records (``whole_records``), in order; a format that cannot say where its records
        end is read whole, which a file larger than ``max_record_bytes()`` may not be."""
        return self.scan_from(path, 0, 0, keep)

    def scan_from(self, path: str, start: int, first_index: int,
                  keep: Optional[Keep] = None) -> Iterator[PhysicalMessage]:
        """The messages from byte ``start`` (a record's start) on, numbered from ``first_index``:
        where reading goes on past damage (``scan_recovering``)."""
        def parse(data: bytes, source: str, base_offset: int, index: int, stop: int) -> Iterator[PhysicalMessage]:
            return self.parse(data if stop == len(data) else data[:stop], source, base_offset, index)
        if self.whole_records is not None:
            return parse_in_chunks(path, READ_CHUNK_BYTES, self.whole_records, parse, keep, start, first_index,
                                   threads=False)
        return kept(parse_whole(path, start, first_index, lambda data, s, b, i: parse(data, s, b, i, len(data))), keep)

    def resync(self, data: bytes, start: int, offset: int) -> Optional[int]:
        """Where in the file's ``data`` the next message starts after a damaged one that starts at
        ``start`` and whose damage was found at ``offset``: reading goes on there. None: nowhere the
        format can tell (the rest of the file is then one damaged stretch)."""
        return None

    def salvage(self, data: bytes, source: str, index: int, start: int, end: int,
                damage: KeptError) -> PhysicalMessage:
        """The damaged stretch ``data[start:end]`` as message ``index``, its payload unknown (b"").
        By default it has no descriptor; a format that can still read one (the attribute lines of a
        dump whose hex is damaged) gives it, so that CMI assembly knows which attachment lost it."""
        return damaged_message(None, source, index, start, end, damage)

    def reread(self, spans: Sequence[MessageSpan]) -> Iterator[PhysicalMessage]:
        """The messages at planned ``spans`` (all of one file, in the order given), as ``scan`` gave them."""
        return read_spans(self.parse, spans)

    def payload_pieces(self, spans: Sequence[MessageSpan], heads: "np.ndarray", room: int = 0,
                       hints: Sequence[Any] = ()) -> Iterator["SpanPayloads"]:
        """Optional fast path: the payloads of many spans (transport headers not removed), as
        ``reread`` and the transport's ``rebuild`` would give them, decoded in bulk a piece of the
        file at a time (``SpanPayloads``); ``hints``, when given, are the messages' reread hints
        (``PhysicalMessage.reread_hint``). A format without one is re-read message by message."""
        raise NotImplementedError

    def bulk_decodes(self, hint: Any) -> bool:
        """Whether ``payload_pieces`` decodes a message planned with reread ``hint``: by default,
        when the format has a fast path and the message needs no hint to be rebuilt."""
        return hint is None and type(self).payload_pieces is not CaptureFormat.payload_pieces

    def write(self, out: BinaryIO, messages: Iterable[Any], *, comments: Sequence[str] = (),
              deterministic: bool = False, **format_options: Any) -> int:
        """Write ``messages.OutgoingMessage``s as a capture file; returns how many were written.
        ``deterministic``: fixed header times, so the same messages give the same bytes."""
        raise CmiOptionError(f"capture format {self.name} cannot be written")


@dataclass(frozen=True)
class FileView:
    """A view a transport adds that decodes each capture file on its own (SAP DB's SQL packets):
    ``read(path, options)`` gives one file's table (``options``: the load's "<transport>.<name>"
    options, of which ``options`` names those it reads, and ``format`` when the load names one);
    one partition per file."""

    name: str
    schema: pa.Schema
    read: Callable[[str, Mapping[str, str]], pa.Table]
    options: Tuple[str, ...] = ()


class Transport:
    """One way CMI messages travel. The defaults suit a transport whose physical messages are
    whole logical messages and that adds no columns to the messages view."""

    name: str = ""  # e.g. "mq"
    formats: Sequence[CaptureFormat] = ()
    write_format: str = ""  # the format df.write.option("transport", name) writes; "" for none
    message_columns: Sequence[pa.Field] = ()  # its own columns of the messages view
    views: Sequence[FileView] = ()  # views of its own, beside the engine's (option view)
    # Its "<transport>.<name>" options, read and write, as entries of the options table: the
    # options its formats (``CaptureFormat.read_options``) and views read are among them.
    options: Sequence[Option] = ()
    # Core write options it fixes: name -> (the value it requires, which is also the default
    # with this transport, and why), e.g. TIB/RV's big-endian "encoding".
    required_write_options: Mapping[str, Tuple[Any, str]] = {}

    def logical_messages(self, messages: Sequence[PhysicalMessage]
                         ) -> Tuple[List[PhysicalMessage], List[UnjoinedMessage]]:
        """Physical messages (of every file of a load) joined into logical messages, and the
        ones that could not be joined. A joined message lists its pieces in ``parts``."""
        return list(messages), []

    def rebuild(self, pieces: Sequence[PhysicalMessage], hint: Any = None) -> PhysicalMessage:
        """The logical message planned from ``pieces`` (its physical records, re-read in a
        partition) and the ``reread_hint`` planning gave it; CmiFormatError when they no longer
        make one message. By default: the one piece, or the pieces joined by ``logical_messages``."""
        if len(pieces) == 1 and not self.is_piece(pieces[0]):
            return pieces[0]
        joined, unjoined = self.logical_messages(pieces)
        if unjoined or len(joined) != 1:
            raise CmiFormatError(f"the pieces of a planned message no longer join: "
                                 f"{unjoined[0].reason if unjoined else 'the file changed'}", pieces[0].location())
        return joined[0]

    def sends_live(self, options: Dict[str, str]) -> bool:
        """Whether ``df.write`` with these "<transport>.<name>" options sends to a live peer (an
        MQTT broker, say) instead of writing a capture file."""
        return False

    def send(self, messages: Iterable[Any], options: Dict[str, str]) -> int:
        """Send ``messages.OutgoingMessage``s to the live peer ``options`` name; returns how many."""
        raise CmiOptionError(f"transport {self.name} writes capture files only")

    def message_values(self, message: PhysicalMessage) -> Optional[List[str]]:
        """An application message's parameters, when the transport sends them typed (TIB/RV's map);
        None when the message is plain bytes (MQ)."""
        return None

    def is_piece(self, message: PhysicalMessage) -> bool:
        """Whether the message is a piece of a logical message, for ``logical_messages`` to join
        (the message index keeps pieces whole)."""
        return False

    def index_details(self, message: PhysicalMessage) -> Any:
        """What a message index keeps of the ``details`` of a message that is no piece: all of
        them by default. A transport whose planning never reads them may answer
        ``messages.DETAILS_REREAD``: the messages view then re-reads the message for them."""
        return message.details

    def message_row(self, message: PhysicalMessage) -> Dict[str, Any]:
        """The message's values of ``message_columns``; it may also give the common columns
        ``msg_type``, ``correl_id`` (hex), ``encoding`` and ``ccsid`` as captured, when they
        differ from its descriptor's, and ``duplicate_of`` ({"source", "index" counted from 1})
        for a message the transport itself knows to repeat another (MQTT's DUP redelivery)."""
        return {}


def damaged_message(descriptor: Optional[Descriptor], source: str, index: int, start: int, end: int,
                    damage: KeptError) -> PhysicalMessage:
    return PhysicalMessage(descriptor, b"", Origin(source, index, start, end), problem=damage.summary(), damage=damage)


def scan_recovering(fmt: CaptureFormat, path: str, keep: Optional[Keep] = None,
                    read_from: Optional[Callable[[int, int], Iterator[PhysicalMessage]]] = None
                    ) -> Iterator[PhysicalMessage]:
    """Every physical message of the file, damaged ones too, each through ``keep`` when given: a
    stretch the format cannot parse is one message whose ``damage`` says why, and reading goes
    on at the next message start the format can find (``resync``), through ``scan_from`` (or
    ``read_from(start, first_index)``, for a format whose reading carries state past damage). The
    damaged stretch is searched a window at a time (``_past_damage``): memory stays bounded
    whatever it holds (3 GiB of zeros after a dump)."""
    if read_from is None:
        def read_from(start: int, first_index: int) -> Iterator[PhysicalMessage]:
            return fmt.scan(path, keep) if start == 0 else fmt.scan_from(path, start, first_index, keep)
    index, end = 0, 0
    messages = read_from(0, 0)
    while True:
        try:
            for message in messages:
                yield message
                index, end = message.index + 1, message.file_end
            return
        except CmiFormatError as e:
            failure = e
        resume, stretch = _past_damage(fmt, path, index, end, failure)
        yield from kept([stretch], keep)
        if resume is None:
            return
        index, end = index + 1, resume
        messages = read_from(resume, index)


# A damaged stretch is searched for the next message start a window at a time: the first small
# (most damage is followed closely by a message), the next ones twice as large up to the last.
RECOVERY_FIRST_WINDOW_BYTES = 1 << 20
RECOVERY_WINDOW_BYTES = 16 << 20
# Each window starts this far before the last one ended: a message start cut by a window's end is
# found whole in the next, with the lines before it a format may look back at.
RECOVERY_OVERLAP_BYTES = 64 << 10


def _past_damage(fmt: CaptureFormat, path: str, index: int, start: int,
                 failure: CmiFormatError) -> Tuple[Optional[int], PhysicalMessage]:
    """(where reading resumes, None at the end of the file; the damaged stretch from ``start`` to
    there as message ``index``), the file read forward a window at a time: windows of the
    stretch pass through ``fmt.resync`` in the window's own offsets."""
    found_at = failure.location.file_offset
    after = max(start, found_at if found_at is not None else start) + 1
    with CaptureReader(path) as reader:
        base, size = start, RECOVERY_FIRST_WINDOW_BYTES
        window = first = reader.read(start, size)
        resume = None
        while True:
            at_end = len(window) < size
            if after < base + len(window):
                # The stretch's start is the first window's; a later window's resync looks forward only.
                offset = max(after - base, 0)
                found = fmt.resync(window, 0, offset)
                if found is not None and base + found > start and (base == start or found >= offset):
                    resume = base + found
                    break
            if at_end:
                break
            base += len(window) - RECOVERY_OVERLAP_BYTES
            size = min(size * 2, RECOVERY_WINDOW_BYTES)
            window = reader.read(base, size)
        stop = resume if resume is not None else base + len(window)
    seen = first[:stop - start]  # what a format reads of the stretch's start (a descriptor still readable)
    stretch = fmt.salvage(seen, path, index, 0, len(seen), KeptError.of(failure))
    origin = stretch.origin._replace(file_offset=start + stretch.file_offset, file_end=stop)
    return resume, dataclasses.replace(stretch, origin=origin)


def parse_whole(path: str, start: int, first_index: int, parse: Parse) -> Iterator[PhysicalMessage]:
    """The messages ``parse`` finds in the file from byte ``start`` to its end, read at once: for a
    format that cannot be read in pieces, as long as that is at most ``max_record_bytes()``."""
    limit = max_record_bytes()
    with CaptureReader(path) as reader:
        data = reader.read(start, limit + 1)
    if len(data) > limit:
        raise RecordTooLargeError(f"the file is read whole by its format, and holds more than {limit} bytes from "
                                  f"this offset (read option maxRecordBytes)", Location(path, first_index, start))
    return parse(data, path, start, first_index)


def kept(messages: Iterable[PhysicalMessage], keep: Optional[Keep]) -> Iterator[PhysicalMessage]:
    return iter(messages) if keep is None else map(keep, messages)


# Threads that parse a large capture's chunks: the compiled kernels that decode its bytes and the
# CRC-32 release the GIL (1M rows of a dump, 280 MB: 0.44 s -> 0.29 s on 2 cores).
PARSE_THREADS = min(os.cpu_count() or 1, 4)


READ_CHUNK_BYTES = 16 << 20  # read and parsed at a time, by a format read in pieces


def parse_in_chunks(path: str, chunk_bytes: int, whole_records: Callable[[bytes], int],
                    parse: Callable[..., Iterable[PhysicalMessage]],
                    keep: Optional[Keep] = None, start: int = 0, first_index: int = 0,
                    threads: bool = True, first_record: Optional[Callable[[bytes], Optional[int]]] = None
                    ) -> Iterator[PhysicalMessage]:
    """The messages of the file from byte ``start`` on, read in chunks of whole records
    (``read_in_chunks``), each chunk parsed by ``parse(data, source, base_offset, first_index,
    stop=...)`` and its messages put through ``keep`` on PARSE_THREADS threads, at most as many
    chunks ahead as threads (memory stays bounded); ``threads`` false: in order on this thread,
    for a parser that carries what one message says to the next. The messages come in file
    order, numbered from ``first_index`` across chunks; a chunk whose parse fails is parsed again
    in order, so the error names the right message. A record longer than ``max_record_bytes()``
    is a ``RecordTooLargeError`` (``_oversized``) at its start, which ``first_record`` finds in a
    chunk when comments may come before it (a text dump's)."""
    chunks = read_in_chunks(path, chunk_bytes, whole_records, start)
    first = next(chunks, None)
    second = next(chunks, None) if first is not None and first[2] else None
    if second is None or not threads:
        # A file of one chunk (most): parsed here. Handing it to a thread and waiting costs more
        # than the thread saves: 10,000 small dumps took 4.6 s longer to index.
        index = first_index
        for base, data, stop in itertools.chain([first] if first else [], [second] if second else [], chunks):
            if stop == 0 and data:
                _oversized(parse, path, base, data, index, first_record)
            for message in kept(parse(data, path, base, index, stop=stop), keep):
                yield message
                index = message.index + 1
        return
    chunks = itertools.chain([first, second], chunks)

    def parse_chunk(chunk: Tuple[int, bytes, int]) -> List[PhysicalMessage]:
        base, data, stop = chunk
        return list(kept(parse(data, path, base, 0, stop=stop), keep))

    index = first_index
    pool = _parse_pool()
    pending: Deque[Tuple[Tuple[int, bytes, int], Future]] = deque()
    try:
        for chunk in chunks:
            if chunk[2] == 0 and chunk[1]:
                while pending:
                    index = yield from _in_order(pending.popleft(), index, path, parse, keep)
                _oversized(parse, path, chunk[0], chunk[1], index, first_record)
            pending.append((chunk, pool.submit(parse_chunk, chunk)))
            while pending and (len(pending) >= PARSE_THREADS or pending[0][1].done()):
                index = yield from _in_order(pending.popleft(), index, path, parse, keep)
        while pending:
            index = yield from _in_order(pending.popleft(), index, path, parse, keep)
    finally:
        for _, future in pending:  # a reader that stopped early: nothing more is parsed for it
            future.cancel()


def _oversized(parse: Callable[..., Iterable[PhysicalMessage]], path: str, base: int, data: bytes,
               index: int, first_record: Optional[Callable[[bytes], Optional[int]]] = None) -> None:
    """Raise what is wrong with ``data``, ``max_record_bytes()`` of the file from ``base`` in which
    no record ends: the damage ``parse`` finds in it (a line that is no dump line, bytes that
    are no header), else a ``RecordTooLargeError`` at the record's start. Damage is what
    ``parse`` finds wherever the bytes are cut: an X line cut at an odd digit, or a length going
    past the cut (a ``TruncatedError``), is a record longer than the bound, not damage."""
    found = _damage_in(parse, path, base, data, index)
    if found is not None and not isinstance(found, TruncatedError):
        again = _damage_in(parse, path, base, data[:-1], index)
        if again is not None and (type(again), again.problem, again.location) == (
                type(found), found.problem, found.location):
            raise found
    start = first_record(data) if first_record is not None else None
    raise RecordTooLargeError(f"no record that starts here ends within {len(data) - (start or 0)} bytes (read "
                              f"option maxRecordBytes)", Location(path, index, base + (start or 0)))


def _damage_in(parse: Callable[..., Iterable[PhysicalMessage]], path: str, base: int, data: bytes,
               index: int) -> Optional[CmiFormatError]:
    try:
        for _ in parse(data, path, base, index, stop=len(data)):
            pass
    except CmiFormatError as e:
        return e
    return None


_parse_pool = ProcessPool(PARSE_THREADS, "cmi-parse")


def _in_order(job, index: int, path: str, parse, keep: Optional[Keep]):
    """A parsed chunk's messages numbered on from ``index``; returns the next index."""
    (base, data, stop), future = job
    try:
        messages = future.result()
    except CmiFormatError:
        for message in kept(parse(data, path, base, index, stop=stop), keep):  # raises, naming its message
            yield message
            index = message.index + 1
        return index
    # The first chunk of a file read from its start is numbered right already: no copies.
    yield from (map(lambda message: message.numbered_on(index), messages) if index else messages)
    return index + len(messages)


def span_readers(spans: Sequence[MessageSpan], runs: Iterable[range]) -> Iterator[Tuple[range, CaptureReader]]:
    """(run, a reader of its file) for each run of ``spans`` (consecutive, in one file)."""
    reader: Optional[CaptureReader] = None
    try:
        for run in runs:
            source = spans[run.start][0]
            if reader is None or reader.path != source:
                if reader is not None:
                    reader.close()
                reader = CaptureReader(source)
            yield run, reader
    finally:
        if reader is not None:
            reader.close()


def span_pieces(spans: Sequence[MessageSpan], runs: Iterable[range]) -> Iterator[Tuple[range, memoryview, int]]:
    """(run, bytes, offset of those bytes in the file): for each run of ``spans`` (consecutive,
    in one file), the file's bytes from the run's first span to its last (fewer where the file
    ends first), read at once into one buffer kept from piece to piece: the bytes of a piece last
    until the next is read, and memory once touched is not asked of the system again."""
    scratch = np.empty(0, dtype=np.uint8)
    for run, reader in span_readers(spans, runs):
        first, last = spans[run.start], spans[run.stop - 1]
        size = last[3] - first[2]
        if size > len(scratch):
            scratch = np.empty(size, dtype=np.uint8)
        view = memoryview(scratch)[:size]
        yield run, view[:reader.readinto(first[2], view)], first[2]


def copied_payloads(data: Union[bytes, memoryview], spans: Sequence[MessageSpan], starts: np.ndarray,
                    heads: np.ndarray, base: int, room: int) -> SpanPayloads:
    """The ``SpanPayloads`` of ``spans``, whose payloads lie in ``data`` (file bytes from offset
    ``base``) from ``starts[i]`` to each span's end: the heads gathered apart, the rest copied end
    to end by numpy."""
    ends = np.array([span[3] - base for span in spans], dtype=np.int64)
    lengths = ends - starts
    kept_heads = np.minimum(heads, lengths)
    view = np.frombuffer(data, dtype=np.uint8)
    head_starts = np.concatenate([[0], np.cumsum(heads)[:-1]]).astype(np.int64)
    head = np.zeros(int(heads.sum()), dtype=np.uint8)
    for at, start, count in zip(head_starts.tolist(), starts.tolist(), kept_heads.tolist()):
        head[at:at + count] = view[start:start + count]
    sizes = lengths - kept_heads
    buffer = np.empty(room + int(sizes.sum()), dtype=np.uint8)
    if len(spans):
        np.concatenate([view[a:b] for a, b in zip((starts + kept_heads).tolist(), ends.tolist())],
                       out=buffer[room:])
    data_starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return SpanPayloads(list(spans), lengths, heads, head, head_starts, buffer, room, data_starts)


def read_spans(parse: Parse, spans: Sequence[MessageSpan]) -> Iterator[PhysicalMessage]:
    """The messages ``parse`` finds at ``spans``, in the order given, opening each file once per run."""
    for source, run in groupby(spans, key=lambda s: s[0]):
        with CaptureReader(source) as reader:
            for span in run:
                yield parse_span(parse, reader.read(span[2], span[3] - span[2]), span)


def parse_span(parse: Parse, data: bytes, span: MessageSpan) -> PhysicalMessage:
    """The one message ``parse`` finds in ``data``, the bytes of a planned span; a span that no
    longer holds exactly one message means the file changed since planning."""
    source, index, start, end = span
    found: List[PhysicalMessage] = []
    try:
        for message in parse(data, source, start, index):
            found.append(message)
            if len(found) > 1:
                break
    except CmiFormatError:
        if not found:
            raise
        # A second message began inside the span and is broken: the span is what is wrong, and
        # the error must name the planned message, not the one the parser saw begin.
        found.append(None)
    if len(found) != 1:
        raise CmiFormatError(f"expected one message between byte offsets {start} and {end}, "
                             f"found {'none' if not found else 'more'}: the file changed since it was planned",
                             Location(source, index, start))
    return found[0]


@dataclass
class SpanPayloads:
    """Raw payloads of consecutive spans, decoded in bulk by a format's fast path: span i's first
    heads[i] bytes (or all of it, when shorter) are ``head[head_starts[i]:...]``, the rest is
    ``data[data_starts[i]:data_starts[i + 1]]``. A head holds what the caller skips: transport
    headers and a record type.

    ``buffer[:room]`` in front of ``data`` is free: a reader of rows may put the start of a
    row there that began in the previous piece."""

    spans: List[MessageSpan]
    lengths: np.ndarray  # whole payload length of each span
    heads: np.ndarray
    head: np.ndarray
    head_starts: np.ndarray
    buffer: np.ndarray
    room: int
    data_starts: np.ndarray  # len(spans) + 1 offsets into data

    @property
    def data(self) -> np.ndarray:
        return self.buffer[self.room:self.room + int(self.data_starts[-1])]

    def content_keys(self, skip: np.ndarray):
        """(length, CRC-32) of each span's payload from byte skip[i] on, as lists: what planning
        recorded of the message once transport headers are removed (``PhysicalMessage.content_key``)."""
        head, data = memoryview(self.head), memoryview(self.data)
        head_from = (self.head_starts + skip).tolist()
        head_to = (self.head_starts + np.minimum(self.heads, self.lengths)).tolist()
        data_starts = self.data_starts.tolist()
        crcs = [crc32(data[a:b], crc32(head[c:d]))
                for a, b, c, d in zip(data_starts, data_starts[1:], head_from, head_to)]
        return (self.lengths - skip).tolist(), crcs

    def head_of(self, i: int) -> memoryview:
        start = int(self.head_starts[i])
        return memoryview(self.head)[start:start + min(int(self.heads[i]), int(self.lengths[i]))]

    def data_of(self, i: int) -> memoryview:
        return memoryview(self.data)[int(self.data_starts[i]):int(self.data_starts[i + 1])]
