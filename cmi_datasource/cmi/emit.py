"""Physical messages for CMI attachments, in the order writers put them (docs/spec/cmi.md#assembly-rules):
header, application message, then per attachment sequenced 1..N and the count message last.

They come out transport-neutral (``OutgoingMessage``); a transport's writer gives each the
envelope of its own (``transports/mq``: an MQMD) and writes them."""
from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from typing import Iterable, Iterator, List, Optional, Sequence

from ..charsets import CodePage
from ..messages import Descriptor, OutgoingMessage
from .correl import MSGTYPE_CMI_HEADER, MSGTYPE_CMI_SUBORDINATE, count_correl_id, sequence_correl_id
from .header import AttachmentEntry, CmiHeader, build_header
from .wire import FieldWriter, WireFormat


@dataclass(frozen=True)
class OutgoingAttachment:
    attachment_type: int
    qualifier1: str
    qualifier2: str
    description: str
    payloads: Iterable[bytes]  # sequenced messages 1..N, consumed once, in order


RANDOM_BLOCK_BYTES = 64 << 10


class IdSource:
    """Correlation keys and MsgIds: random, or derived from a seed for byte-stable output."""

    def __init__(self, seed: Optional[str] = None):
        self.seed = seed
        self.counter = 0
        self._random = b""  # drawn from the system a block at a time
        self._taken = 0

    def take(self, size: int) -> bytes:
        self.counter += 1
        if self.seed is None:
            return self._random_bytes(size)
        return hashlib.sha256(f"{self.seed}/{self.counter}".encode()).digest()[:size]

    def _random_bytes(self, size: int) -> bytes:
        # One os.urandom call per message cost 12 us in a commit, which gives each of its 17,000
        # messages (5M rows) a MsgId: after each system call the calling thread waits for the GIL
        # while the work threads encode. 0.21 s in all, under cProfile.
        if self._taken + size > len(self._random):
            self._random, self._taken = os.urandom(max(RANDOM_BLOCK_BYTES, size)), 0
        self._taken += size
        return self._random[self._taken - size:self._taken]

    def key_correl_id(self) -> bytes:
        """A 16-byte key followed by 8 zero bytes, as in SAS's example (docs/spec/cmi.md#the-count-message)."""
        return self.take(16) + bytes(8)


def attachment_messages(attachments: Sequence[OutgoingAttachment], *, application_message: bytes,
                        codepage: CodePage, encoding: int, wire: WireFormat, ids: IdSource,
                        original_msg_type: int = 8, put_timestamp: Optional[float] = None,
                        deterministic: bool = False) -> Iterator[OutgoingMessage]:
    """Messages streamed in writer order; N is counted as the payloads go by, so no
    attachment is ever held in memory whole."""
    when = 0.0 if deterministic else (put_timestamp or time.time())
    header_correl, message_correl = ids.key_correl_id(), ids.key_correl_id()
    entries = [AttachmentEntry(a.attachment_type, ids.key_correl_id(), a.qualifier1, a.qualifier2,
                               a.description) for a in attachments]
    header = CmiHeader(header_correl, original_msg_type, bytes(24), message_correl, tuple(entries), wire)

    def message(msg_type: int, correl_id: bytes, payload: bytes) -> OutgoingMessage:
        return OutgoingMessage(Descriptor(msg_type, correl_id, encoding, codepage.ccsid), payload,
                               ids.take(24), when)

    yield message(MSGTYPE_CMI_HEADER, header_correl, build_header(header, codepage))
    yield message(MSGTYPE_CMI_SUBORDINATE, message_correl, application_message)
    for entry, attachment in zip(entries, attachments):
        count = 0
        for count, payload in enumerate(attachment.payloads, start=1):
            yield message(MSGTYPE_CMI_SUBORDINATE, sequence_correl_id(entry.key, count), payload)
        yield message(MSGTYPE_CMI_SUBORDINATE, count_correl_id(entry.key), FieldWriter(wire).int32(count).getvalue())


def header_groups(attachments: Sequence[OutgoingAttachment], codepage: CodePage, wire: WireFormat,
                  max_payload: int) -> List[List[OutgoingAttachment]]:
    """Split attachments over as few headers as keep every header message within max_payload."""
    def size(group) -> int:
        entries = tuple(AttachmentEntry(a.attachment_type, bytes(24), a.qualifier1, a.qualifier2, a.description)
                        for a in group)
        return len(build_header(CmiHeader(bytes(24), 0, bytes(24), bytes(24), entries, wire), codepage))

    groups: List[List[OutgoingAttachment]] = []
    for a in attachments:
        if groups and size(groups[-1] + [a]) <= max_payload:
            groups[-1].append(a)
        else:
            if size([a]) > max_payload:
                raise ValueError(f"the header for attachment {a.qualifier1}.{a.qualifier2} alone exceeds "
                                 f"{max_payload} bytes; shorten its description")
            groups.append([a])
    return groups
