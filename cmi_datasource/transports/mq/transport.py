"""IBM MQ as a transport: dmpmqmsg text dumps and binary MQGET captures (docs/spec/mq.md).

Each format yields messages with their MQ header chain removed (``envelope.py``); segmented
messages are joined across the files of a load (``segments.py``). The messages view gets the
MQMD as captured, the headers removed and the segment fields in effect.
"""
from __future__ import annotations

import dataclasses
import functools
import time
from typing import Any, BinaryIO, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import pyarrow as pa

from ...errors import KeptError
from ...messages import DETAILS_REREAD, MessageSpan, OutgoingMessage, PhysicalMessage, UnjoinedMessage
from ..base import CaptureFormat, IndexKeep, Keep, SpanPayloads, Transport, parse_in_chunks
from . import amqsbcg, dmpmqmsg, mqget
from .dump_spans import read_dump_spans, read_spans_in_bulk
from .envelope import unwrap
from .message import MqDetails, mq_message
from .mqmd import MQMD, mqmd_of_fields
from .segments import is_segment, join_segments

DETERMINISTIC_CREATED = "Sat Jan  1 00:00:00 2000"  # the dump header's time when output must be byte-stable


def to_mqmd(message: OutgoingMessage) -> MQMD:
    """The MQMD a CMI sender gives a message: version 2, persistent, put by "cmi-datasource".
    Made with ``mqmd_of_fields`` (a write makes one a message: 17,000 for 5M rows)."""
    d = message.descriptor
    put_date, put_time = _put_date_time(message.put_time)
    return mqmd_of_fields({"version": 2, "msg_type": d.msg_type, "encoding": d.encoding, "ccsid": d.ccsid,
                           "format": "        ", "persistence": 1, "priority": 0, "msg_id": message.msg_id,
                           "correl_id": d.correl_id, "put_date": put_date, "put_time": put_time,
                           "put_appl_type": 6, "put_appl_name": _PUT_APPL_NAME})


_PUT_APPL_NAME = "cmi-datasource".ljust(28)


@functools.lru_cache(maxsize=4)
def _put_date_time(put_time: float) -> Tuple[str, str]:
    """MQ's PutDate and PutTime of a time (UTC); the messages of one write share theirs."""
    when = time.gmtime(put_time)
    return time.strftime("%Y%m%d", when), time.strftime("%H%M%S", when) + "00"


def mq_pairs(messages: Iterable[OutgoingMessage]) -> List[Tuple[MQMD, bytes]]:
    """(MQMD, payload) of each message, as the MQ writers take them."""
    return [(to_mqmd(m), m.payload) for m in messages]


def _first_lines(head: bytes, skip=None) -> Iterator[bytes]:
    """The non-blank lines of ``head``, less those ``skip`` matches."""
    return (line for line in head.splitlines() if line.strip() and not (skip and skip.match(line)))



def _unwrapped(keep: Optional[Keep]) -> Keep:
    """Unwrap each message's MQ headers, then ``keep`` it: both on the parsing threads."""
    return unwrap if keep is None else lambda message: keep(unwrap(message))


class _ReadInPieces(CaptureFormat):
    """An MQ capture read in chunks of whole records on several threads (``parse_in_chunks``):
    ``_parse`` parses a chunk up to its ``stop``, ``whole_records`` says where a chunk stops."""

    _parse = None  # (data, source, base_offset, first_index, stop) -> messages, MQ headers still on
    _chunk_bytes = 16 << 20

    def scan(self, path: str, keep: Optional[Keep] = None) -> Iterator[PhysicalMessage]:
        return self.scan_from(path, 0, 0, keep)

    def scan_from(self, path: str, start: int, first_index: int,
                  keep: Optional[Keep] = None) -> Iterator[PhysicalMessage]:
        parse, kept = self.chunk_reading(keep)
        return parse_in_chunks(path, self._chunk_bytes, self.whole_records, parse, kept, start, first_index,
                               first_record=lambda data: self.resync(data, 0, 0))

    def chunk_reading(self, keep: Optional[Keep]) -> Tuple[Callable[..., Iterator[PhysicalMessage]], Keep]:
        """How a scan through ``keep`` parses a chunk (``_parse``'s signature) and what it keeps of
        each message the parse gives."""
        return type(self)._parse, _unwrapped(keep)


class DmpmqmsgFormat(_ReadInPieces):
    name = "dmpmqmsg"
    description = "IBM MQ dmpmqmsg / qload text dump"
    suffix = ".dmp"

    def sniff(self, head: bytes) -> bool:
        # The first significant line after the tool's banner: a comment (the "* DMPMQMSG"
        # header), a descriptor or a data line; nothing at all for a dump of an empty queue.
        line = next(_first_lines(head, dmpmqmsg.BANNER), None)
        return line is None or line[:1] == b"*" or line[:2] in (b"A ", b"X ", b"S ", b"T ") or line.rstrip() == b"N"

    _parse = staticmethod(dmpmqmsg.parse_dump)
    whole_records = staticmethod(dmpmqmsg.start_of_last_message)
    _chunk_bytes = dmpmqmsg.READ_CHUNK_BYTES

    def chunk_reading(self, keep: Optional[Keep]) -> Tuple[Callable[..., Iterator[PhysicalMessage]], Keep]:
        if not isinstance(keep, IndexKeep):
            return super().chunk_reading(keep)
        # For a message index: the plain messages come as their entries already (``IndexKeep.plain``),
        # which alone carry DETAILS_REREAD (the parser gives each other message its MQ details).
        others = _unwrapped(keep)

        def kept(message: PhysicalMessage) -> PhysicalMessage:
            return message if message.details is DETAILS_REREAD else others(message)
        return functools.partial(dmpmqmsg.parse_dump, plain_entry=keep.plain), kept

    def parse(self, data: bytes, source: str, base_offset: int = 0,
              first_index: int = 0) -> Iterator[PhysicalMessage]:
        return map(unwrap, dmpmqmsg.parse_dump(data, source, base_offset, first_index))

    def resync(self, data: bytes, start: int, offset: int) -> Optional[int]:
        return dmpmqmsg.next_message_start(data, offset)

    def salvage(self, data: bytes, source: str, index: int, start: int, end: int,
                damage: KeptError) -> PhysicalMessage:
        mqmd, at = dmpmqmsg.salvage(data, source, index, start, end)
        return damaged_mq_message(mqmd, source, index, at, end, damage)

    def payload_pieces(self, spans: Sequence[MessageSpan], heads: Sequence[int], room: int = 0,
                       hints: Sequence[Any] = ()) -> Iterator[SpanPayloads]:
        return read_dump_spans(spans, heads, room)

    def write(self, out: BinaryIO, messages: Iterable[OutgoingMessage], *, comments: Sequence[str] = (),
              deterministic: bool = False, queue_manager: str = "", queue: str = "") -> int:
        return dmpmqmsg.write_dump(out, ((to_mqmd(m), m.payload) for m in messages), queue_manager=queue_manager,
                                   queue=queue, created=DETERMINISTIC_CREATED if deterministic else None,
                                   comments=comments)


class AmqsbcgFormat(_ReadInPieces):
    name = "amqsbcg"
    description = "output of IBM's browse sample amqsbcg ('AMQSBCG0 - starts here')"
    suffix = ".txt"
    _parse = staticmethod(amqsbcg.parse_browse)
    whole_records = staticmethod(amqsbcg._start_of_last_message)
    _chunk_bytes = amqsbcg.READ_CHUNK_BYTES

    def sniff(self, head: bytes) -> bool:
        line = next(_first_lines(head), b"")
        return line.startswith(amqsbcg.STARTS_HERE) or bool(amqsbcg.MESSAGE_START.match(line))

    def parse(self, data: bytes, source: str, base_offset: int = 0,
              first_index: int = 0) -> Iterator[PhysicalMessage]:
        return map(unwrap, amqsbcg.parse_browse(data, source, base_offset, first_index))

    def resync(self, data: bytes, start: int, offset: int) -> Optional[int]:
        # The words first, by bytes.find (a regex anchored at line starts tries every byte: 10 s a
        # GiB of zeros), then whether their line is a message's first.
        at = data.find(_MQGET_WORDS, offset)
        while at >= 0:
            line_start = data.rfind(b"\n", 0, at) + 1
            if line_start >= offset and amqsbcg.NEXT_MESSAGE.match(data, line_start):
                return line_start
            at = data.find(_MQGET_WORDS, at + 1)
        return None

    def payload_pieces(self, spans: Sequence[MessageSpan], heads: Sequence[int], room: int = 0,
                       hints: Sequence[Any] = ()) -> Iterator[SpanPayloads]:
        return read_spans_in_bulk(spans, heads, room, None, amqsbcg.decode_spans, amqsbcg.parse_browse)

    def write(self, out: BinaryIO, messages: Iterable[OutgoingMessage], *, comments: Sequence[str] = (),
              deterministic: bool = False, queue: str = "SAS.CMI.QUEUE", buffer_bytes: Optional[int] = None) -> int:
        return amqsbcg.write_browse(out, ((to_mqmd(m), m.payload) for m in messages), queue, buffer_bytes)


_MQGET_WORDS = b"MQGET of message number"


class MqgetFormat(_ReadInPieces):
    name = "mqget"
    description = "binary MQGET capture: an MQMD, a 4-byte data length and the data, per message"
    suffix = ".mqget"
    _parse = staticmethod(mqget.parse_capture)
    whole_records = staticmethod(mqget.end_of_whole_records)
    _chunk_bytes = mqget.READ_CHUNK_BYTES

    def sniff(self, head: bytes) -> bool:
        return mqget.looks_like_capture(head)

    def parse(self, data: bytes, source: str, base_offset: int = 0,
              first_index: int = 0) -> Iterator[PhysicalMessage]:
        return map(unwrap, mqget.parse_capture(data, source, base_offset, first_index))

    def resync(self, data: bytes, start: int, offset: int) -> Optional[int]:
        return mqget.next_descriptor(data, offset)

    def payload_pieces(self, spans: Sequence[MessageSpan], heads: Sequence[int], room: int = 0,
                       hints: Sequence[Any] = ()) -> Iterator[SpanPayloads]:
        return mqget.read_capture_spans(spans, heads, room)

    def salvage(self, data: bytes, source: str, index: int, start: int, end: int,
                damage: KeptError) -> PhysicalMessage:
        return damaged_mq_message(mqget.salvage(data, source, index, start), source, index, start, end, damage)

    def write(self, out: BinaryIO, messages: Iterable[OutgoingMessage], *, comments: Sequence[str] = (),
              deterministic: bool = False) -> int:
        return mqget.write_capture(out, ((to_mqmd(m), m.payload) for m in messages))


def damaged_mq_message(mqmd: Optional[MQMD], source: str, index: int, start: int, end: int,
                       damage: KeptError) -> PhysicalMessage:
    """A damaged stretch of an MQ capture, with the MQMD that still reads (None when none does)."""
    message = mq_message(mqmd, b"", source, index, start, end)
    return dataclasses.replace(message, problem=damage.summary(), damage=damage)


def _hex(raw: Optional[bytes]) -> Optional[str]:
    return raw.hex().upper() if raw is not None else None


class MqTransport(Transport):
    name = "mq"
    formats = (MqgetFormat(), AmqsbcgFormat(), DmpmqmsgFormat())  # sniffed in this order
    write_format = "dmpmqmsg"
    message_columns = (
        pa.field("msg_id", pa.string()), pa.field("format", pa.string()), pa.field("put_date", pa.string()),
        pa.field("put_time", pa.string()), pa.field("headers", pa.list_(pa.string())),
        pa.field("remote_queue", pa.string()), pa.field("remote_qmgr", pa.string()),
        pa.field("dead_letter_reason", pa.int32()), pa.field("dead_letter_queue", pa.string()),
        pa.field("properties", pa.list_(pa.string())), pa.field("envelope_problem", pa.string()),
        pa.field("data_encoding", pa.int32()), pa.field("data_ccsid", pa.int32()),
        pa.field("data_format", pa.string()), pa.field("group_id", pa.string()),
        pa.field("msg_seq_number", pa.int32()), pa.field("msg_offset", pa.int32()),
        pa.field("msg_flags", pa.int32()),
    )

    def logical_messages(self, messages: Sequence[PhysicalMessage]
                         ) -> Tuple[List[PhysicalMessage], List[UnjoinedMessage]]:
        return join_segments(messages)

    def is_piece(self, message: PhysicalMessage) -> bool:
        return is_segment(message)

    def index_details(self, message: PhysicalMessage) -> Any:
        """Nothing of an MQMD (and its envelope) planning does not read: only the messages view
        reads them, and segments (kept whole) and damaged stretches (which cannot be re-read)
        keep theirs. The MQMD was about half of an index entry (a 5M-row dump: 550 of 1,000
        bytes a message held, and half its pickling)."""
        if message.damage is None and isinstance(message.details, MqDetails):
            return DETAILS_REREAD
        return message.details

    def message_row(self, message: PhysicalMessage) -> Dict[str, Any]:
        details = message.details
        envelope = details.envelope if isinstance(details, MqDetails) else None
        row: Dict[str, Any] = {"headers": list(envelope.headers) if envelope else [],
                               "envelope_problem": envelope.problem if envelope else None}
        if isinstance(details, MqDetails):
            d = envelope.outer if envelope else details.mqmd  # as captured
            e = details.mqmd  # what describes the data
            row.update({"msg_type": d.msg_type, "msg_id": _hex(d.msg_id), "correl_id": _hex(d.correl_id),
                        "encoding": d.encoding, "ccsid": d.ccsid, "format": d.format,
                        "put_date": d.put_date, "put_time": d.put_time,
                        "data_encoding": e.encoding, "data_ccsid": e.ccsid, "data_format": e.format,
                        "group_id": _hex(e.group_id), "msg_seq_number": e.msg_seq_number,
                        "msg_offset": e.offset, "msg_flags": e.msg_flags})
        if envelope is not None:
            row.update({"remote_queue": envelope.remote_queue, "remote_qmgr": envelope.remote_qmgr,
                        "dead_letter_reason": envelope.dead_letter_reason,
                        "dead_letter_queue": envelope.dead_letter_queue,
                        "properties": list(envelope.properties)})
        return row


TRANSPORT = MqTransport()
