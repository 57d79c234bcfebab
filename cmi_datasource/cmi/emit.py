"""Physical messages for CMI attachments, in the order writers put them (contract section 2):
header, application message, then per attachment sequenced 1..N and the count message last."""
from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from ..charsets import CodePage
from ..mq.mqmd import MSGTYPE_CMI_HEADER, MSGTYPE_CMI_SUBORDINATE, Descriptor
from .assembly import count_correl_id, sequence_correl_id
from .header import AttachmentEntry, CmiHeader, build_header
from .wire import FieldWriter, WireFormat


@dataclass(frozen=True)
class OutgoingAttachment:
    attachment_type: int
    qualifier1: str
    qualifier2: str
    description: str
    payloads: Sequence[bytes]  # sequenced messages 1..N


class IdSource:
    """Correlation keys and MsgIds: random, or derived from a seed for byte-stable output."""

    def __init__(self, seed: Optional[str] = None):
        self.seed = seed
        self.counter = 0

    def take(self, size: int) -> bytes:
        self.counter += 1
        if self.seed is None:
            return os.urandom(size)
        return hashlib.sha256(f"{self.seed}/{self.counter}".encode()).digest()[:size]

    def key_correl_id(self) -> bytes:
        """A 16-byte key followed by 8 zero bytes, as in seed 000's example."""
        return self.take(16) + bytes(8)


def attachment_messages(attachments: Sequence[OutgoingAttachment], *, application_message: bytes,
                        codepage: CodePage, encoding: int, wire: WireFormat, ids: IdSource,
                        original_msg_type: int = 8, put_timestamp: Optional[float] = None,
                        deterministic: bool = False) -> List[Tuple[Descriptor, bytes]]:
    when = time.gmtime(0 if deterministic else (put_timestamp or time.time()))
    put_date = time.strftime("%Y%m%d", when)
    put_time = time.strftime("%H%M%S", when) + "00"
    header_correl, message_correl = ids.key_correl_id(), ids.key_correl_id()
    entries = [AttachmentEntry(a.attachment_type, ids.key_correl_id(), a.qualifier1, a.qualifier2,
                               a.description) for a in attachments]
    header = CmiHeader(header_correl, original_msg_type, bytes(24), message_correl, tuple(entries), wire)

    def descriptor(msg_type: int, correl_id: bytes) -> Descriptor:
        return Descriptor(version=2, msg_type=msg_type, encoding=encoding, ccsid=codepage.ccsid,
                          format="        ", persistence=1, priority=0, msg_id=ids.take(24),
                          correl_id=correl_id, put_date=put_date, put_time=put_time,
                          put_appl_type=6, put_appl_name="cmi-datasource".ljust(28))

    out = [(descriptor(MSGTYPE_CMI_HEADER, header_correl), build_header(header, codepage)),
           (descriptor(MSGTYPE_CMI_SUBORDINATE, message_correl), application_message)]
    for entry, attachment in zip(entries, attachments):
        for k, payload in enumerate(attachment.payloads, start=1):
            out.append((descriptor(MSGTYPE_CMI_SUBORDINATE, sequence_correl_id(entry.key, k)), payload))
        count = FieldWriter(wire).int32(len(attachment.payloads)).getvalue()
        out.append((descriptor(MSGTYPE_CMI_SUBORDINATE, count_correl_id(entry.key)), count))
    return out
