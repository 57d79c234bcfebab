"""The physical message: what every transport turns its capture files into (docs/spec/cmi.md#physical-messages).

A transport (``transports/``) reads a capture file and yields ``PhysicalMessage`` objects: what
the message is, a ``Descriptor`` holding the few attributes CMI assembly needs and the payload
bytes (the transport's own headers already removed); apart from it, its ``Origin``, where it
came from. ``details`` is the transport's own record of the message (for MQ: the MQMD as
captured and the headers it removed); only the transport reads it, to re-join pieces and to fill
its columns of the messages view.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, NamedTuple, Optional, Tuple

from zlib_ng.zlib_ng import crc32  # zlib's CRC-32, computed about 5 times faster

from .errors import KeptError, Location
from .frozen import replaced

# (source, index, file_offset, file_end): enough to re-read one physical message later, in read().
MessageSpan = Tuple[str, int, int, int]


@dataclass(frozen=True)
class Descriptor:
    """What CMI groups and decodes a message by, named as in the MQMD (docs/spec/cmi.md#physical-messages)."""

    msg_type: int  # 100000 attachment header, 100001 subordinate message (cmi/correl.py)
    correl_id: bytes  # 24 bytes
    encoding: int  # byte order and float format, in MQ's Encoding numbering (encoding.py)
    ccsid: int  # code page of the characters; 0 = unknown (the charset policy decides)


class Origin(NamedTuple):
    """Where a physical message came from: its capture file, its place there and the transport
    header bytes taken off its front; for a logical message joined from pieces (MQ segments), the
    pieces' spans. Enough to name the message in an error and to re-read it later, in read().

    A NamedTuple, not a dataclass, because every message of a message index holds one: it is
    built, renumbered (``_replace``) and unpickled from the disk cache faster, and pickles smaller
    (the index of 130,000 small messages: 2% larger than with these fields in PhysicalMessage as
    a frozen dataclass, 1% smaller as this). Its position is ``message_index``, as in ``Location``:
    ``index`` is a tuple's method."""

    source: str
    message_index: int  # 0-based position of the message in its file (as in ``errors.Location``)
    file_offset: int  # byte offset where the message's record starts in the file
    file_end: int  # byte offset just past the message's record
    header_length: int = 0  # transport header bytes removed from the front of the captured data
    parts: Tuple[MessageSpan, ...] = ()  # the pieces of a joined logical message, in order
    # Pieces among ``parts`` that are identical copies of another piece: (copy, the piece it repeats).
    repeated_parts: Tuple[Tuple[MessageSpan, MessageSpan], ...] = ()

    @property
    def span(self) -> MessageSpan:
        return (self.source, self.message_index, self.file_offset, self.file_end)

    @property
    def spans(self) -> Tuple[MessageSpan, ...]:
        """The physical records the message was made from."""
        return self.parts or (self.span,)

    def location(self, payload_offset: Optional[int] = None) -> Location:
        return Location(self.source, self.message_index, self.file_offset, payload_offset)


# (length, CRC-32) of a payload: equal for equal payloads (duplicates), without holding them.
ContentKey = Tuple[int, int]


class _DetailsReread:
    """The ``details`` of a message whose index entry left them out: its transport's
    ``index_details`` kept nothing of them, and the messages view, which alone reads them,
    takes them from the message re-read. One object, pickled by name."""

    def __repr__(self) -> str:
        return "DETAILS_REREAD"

    def __reduce__(self) -> str:
        return "DETAILS_REREAD"


DETAILS_REREAD = _DetailsReread()


@dataclass(frozen=True)
class PhysicalMessage:
    """What a message is (its descriptor and payload), kept apart from where it came from
    (``origin``); the transport's own record of it; and what is wrong with it, if anything."""

    descriptor: Optional[Descriptor]  # None: the capture gives nothing to group the message by
    payload: bytes
    origin: Origin
    details: Any = None  # the transport's own record of the message (opaque to everything else)
    # What the transport needs, beside the spans, to rebuild this message when a partition re-reads
    # it (TIB/RV: the variables an ATO message's values are laid out by); plans carry it.
    reread_hint: Any = None
    problem: Optional[str] = None  # the capture holds the message damaged (cut short, ...): why
    # A stretch of the capture its format could not parse, kept as one message whose payload is
    # unknown (b""): the error, raised again by a read that must not go on past damage (FAILFAST).
    damage: Optional[KeptError] = None
    # Planning keeps only the first bytes of large payloads (see ``partial``): then this is the
    # whole payload's content key, and ``payload`` its beginning.
    full_key: Optional[ContentKey] = None

    # Where the message came from, read often enough to be named here (the rest: ``origin``).
    @property
    def source(self) -> str:
        return self.origin.source

    @property
    def index(self) -> int:
        return self.origin.message_index

    @property
    def file_offset(self) -> int:
        return self.origin.file_offset

    @property
    def file_end(self) -> int:
        return self.origin.file_end

    @property
    def parts(self) -> Tuple[MessageSpan, ...]:
        return self.origin.parts

    @property
    def span(self) -> MessageSpan:
        return self.origin.span

    @property
    def spans(self) -> Tuple[MessageSpan, ...]:
        """The physical records this message was made from."""
        return self.origin.spans

    def location(self, payload_offset: Optional[int] = None) -> Location:
        return self.origin.location(payload_offset)

    @property
    def length(self) -> int:
        return len(self.payload) if self.full_key is None else self.full_key[0]

    @property
    def captured_length(self) -> int:
        """The message's data as captured, transport headers included."""
        return self.length + self.origin.header_length

    @property
    def is_partial(self) -> bool:
        return self.full_key is not None

    @property
    def content_key(self) -> ContentKey:
        """Equal for messages with equal payloads (duplicates), without holding the payloads."""
        return (len(self.payload), crc32(self.payload)) if self.full_key is None else self.full_key

    def numbered_on(self, by: int) -> "PhysicalMessage":
        """The message of a piece of its file parsed as if the piece began the file (on a thread, before
        the messages ahead of it were counted), numbered as the whole file's: ``by`` more, in its index
        and in the place its kept damage names."""
        origin = self.origin  # made without _replace, which looks up every field by name (3.5 -> 1.5 us a message)
        changes: dict = {"origin": Origin._make((origin[0], origin[1] + by) + origin[2:])}
        damage = self.damage
        if damage is not None and damage.location.message_index is not None:
            changes["damage"] = dataclasses.replace(damage, location=dataclasses.replace(
                damage.location, message_index=damage.location.message_index + by))
        return replaced(self, changes)

    def replaced(self, **changes: Any) -> "PhysicalMessage":
        """``dataclasses.replace(self, **changes)`` in 0.7 us instead of 5 (``frozen.replaced``):
        indexing a dump replaces each message two or three times (slimmed, renumbered)."""
        return replaced(self, changes)


@dataclass(frozen=True)
class UnjoinedMessage:
    """A logical message a transport could not rebuild from its pieces (an MQ segment group with
    a gap, say): assembly names it in the problems of the attachment its CorrelId belongs to."""

    correl_id: bytes
    reason: str  # completes "<which message> ...": e.g. "was segmented and cannot be joined: ..."
    parts: Tuple[MessageSpan, ...]


@dataclass(frozen=True)
class OutgoingMessage:
    """A message to send (``cmi/emit.py`` makes them): what CMI says of it, its payload, a message
    id and the time it is put, as seconds since 1970 (UTC). A transport's writer wraps it in an
    envelope of its own."""

    descriptor: Descriptor
    payload: bytes
    msg_id: bytes
    put_time: float


def partial(message: PhysicalMessage, keep: int, **changes: Any) -> PhysicalMessage:
    """The message with only the first ``keep`` bytes of its payload (length and CRC kept), and
    the fields ``changes`` names changed in the same copy."""
    if message.is_partial or len(message.payload) <= keep:
        return message.replaced(**changes) if changes else message
    return message.replaced(payload=message.payload[:keep], full_key=(len(message.payload), crc32(message.payload)),
                            **changes)
