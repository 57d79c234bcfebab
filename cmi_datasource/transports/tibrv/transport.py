"""TIB/Rendezvous as a transport: captures of RV messages back to back (docs/spec/tibrv.md#cmi-over-tibrv).

Reading a capture, each RV message becomes the CMI message MQ would carry for it
(``records.py``), an ATO message its fixed-width rows (``observations.py``, laid out by the DAT
and VAR messages before it in its attachment). RV messages carry no correlation ids, so
``sequence.py`` gives them the ones CMI groups by, from their order and content, and checks
what the content lets it check of that order.

A message that does not read is one damaged message of its own, and reading goes on at the next
one (each RV message declares its size; when that is damaged too, at the next RV magic): the
ATO messages after it are still laid out by their attachment's DAT and VAR.
"""
from __future__ import annotations

import dataclasses
import itertools
from typing import Any, BinaryIO, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa

from ...cmi.correl import MSGTYPE_CMI_HEADER, MSGTYPE_CMI_SUBORDINATE
from ...errors import CmiFormatError, KeptError, Location
from ...messages import Descriptor, MessageSpan, OutgoingMessage, Origin, PhysicalMessage, UnjoinedMessage
from ..base import (READ_CHUNK_BYTES, CaptureFormat, Keep, SpanPayloads, Transport, damaged_message, kept,
                    parse_in_chunks, scan_recovering, span_pieces)
from ..mq.dump_spans import PIECE_BYTES, span_runs
from . import records, sequence
from .observations import ATO_RECORD_TYPE, ato_count, check_layout, observation_rows, write_rows
from .records import ENCODING, ObservationLayout, RvDetails
from .wire import HEADER, INT, MAGIC, RvField, field_bytes, message_bytes, message_end, read_fields
from .writer import write_rv

_MAGIC_BYTES = MAGIC.to_bytes(4, "big")
SUMMARY_FIELDS = 12  # fields the messages view's rv_summary shows


def _descriptor(msg_type: int, correl_id: bytes = bytes(24)) -> Descriptor:
    # CCSID 0: RV strings carry no code page; the charset policy's default (option defaultCcsid) decides.
    return Descriptor(msg_type, correl_id, ENCODING, 0)


class _Reader:
    """The messages of one file (or a span of it), read in order: the DAT and VAR messages of an
    attachment lay out the ATO messages that follow them, up to its LST."""

    def __init__(self, source: str):
        self.source = source
        self.seen_header = False  # an HDR was read: an ATO without a layout is out of place
        self.forget_definitions()

    def forget_definitions(self) -> None:
        self.definition: Optional[Tuple[List[RvField], Location]] = None  # the DAT message's fields, and where
        self.variables: List[Tuple[bool, int, Location]] = []
        self.layout: Optional[ObservationLayout] = None

    def damaged(self, kind: str) -> None:
        """A message that did not read, of ``kind`` ("" when not even its first field reads): a
        definition it may have been is not known, so no VAR after it is laid out by the DAT before
        it; an HDR or LST ends the attachment. ATO messages after any other keep their layout."""
        if kind in ("HDR", "LST", "DAT", "VAR"):
            self.forget_definitions()
        else:
            self.definition = None

    def message(self, data: bytes, pos: int, base_offset: int, index: int) -> Tuple[PhysicalMessage, int]:
        located = Location(self.source, index, base_offset + pos)
        end = message_end(data, pos, lambda at: located.at_payload(at - pos))
        body = data[pos:end]  # field offsets below are from the message's start, as payload offsets
        fields_left = read_fields(body, HEADER.size, len(body), located.at_payload)
        fields = list(itertools.islice(fields_left, SUMMARY_FIELDS))
        kind = records.kind_of(fields)
        if kind != "ATO":  # an ATO message's pairs are read by the kernel, never field by field here
            fields += list(fields_left)
        field_count = len(fields)
        msg_type, count, header, hint, raw = MSGTYPE_CMI_SUBORDINATE, None, None, None, False
        values: Tuple[str, ...] = ()
        if kind == "HDR":
            header = records.header(fields, located)
            payload, msg_type, count = records.header_bytes(header), MSGTYPE_CMI_HEADER, len(header.attachments)
            self.seen_header = True
            self.forget_definitions()
        elif kind in ("MSG", "DATA"):
            values = records.application_values(fields, located)
            payload = records.application_text(fields, located)
        elif kind == "DAT":
            payload = records.dataset_definition(fields, located)
            count = records.declared_observations(fields, located)
            self.forget_definitions()
            self.definition = (fields, located)
        elif kind == "VAR":
            payload, layout = records.variable_definitions(fields, located)
            self.variables += layout
            if self.definition is not None:
                definition, definition_at = self.definition
                self.layout = records.layout_of(definition, self.variables, definition_at)
        elif kind == "ATO":
            hint = self.layout
            if hint is None and self.seen_header:
                raise records.RvCmiError("ATO message with no DAT and VAR before it in its attachment to lay out "
                                         "its observations: the messages are out of order, or those are lost",
                                         located)
            if hint is None:  # re-read alone: the transport rebuilds it with the layout planning kept
                payload, raw = body, True
            else:
                payload = observation_rows(body, HEADER.size, len(body), hint, located)
                count = (len(payload) - 4) // max(hint.obs_length, 1)
                field_count = 2 + 2 * len(hint.lengths) * count
        elif kind in ("ATI", "ATC"):
            payload = records.record_type_only(kind)
        elif kind == "FDC":
            payload = records.file_prologue(fields, located)
        elif kind in ("ATX", "ATB"):
            payload = records.file_records(fields, kind, located)
        elif kind == "LST":
            payload, count = records.WIRE.structs()[0].pack(0), records.count_of(fields, "LST", located)
            self.forget_definitions()
        else:
            raise records.RvCmiError(f"RV message of type {kind!r}: not one of {', '.join(records.KINDS)}", located)
        shown = records.summary(fields, field_count, SUMMARY_FIELDS, located)
        details = RvDetails(kind, field_count, shown, count, header, raw, values)
        return PhysicalMessage(_descriptor(msg_type), payload, Origin(self.source, index, base_offset + pos,
                                                                      base_offset + end),
                               details=details, reread_hint=hint), end


def _header_end(data: bytes, pos: int) -> Optional[int]:
    """Where the RV message at ``pos`` ends, when its header reads there; else None."""
    try:
        return message_end(data, pos)
    except CmiFormatError:
        return None


def _kind_at(data: bytes, pos: int) -> str:
    """The message type of the (damaged) RV message at ``pos``: its first field's name, when it is
    one of those of docs/spec/tibrv.md#cmi-message-types."""
    name_at = pos + HEADER.size
    if name_at >= len(data):
        return ""
    name = bytes(data[name_at + 1:name_at + 1 + data[name_at]]).split(b"\0", 1)[0].decode("latin-1")
    return name if name in records.KINDS else ""


class RvFormat(CaptureFormat):
    name = "tibrv"
    description = "TIB/Rendezvous messages back to back, as the RV API serializes them (magic 0x9955EEAA)"
    suffix = ".rv"

    def sniff(self, head: bytes) -> bool:
        return len(head) >= 8 and int.from_bytes(head[4:8], "big") == MAGIC

    def parse(self, data: bytes, source: str, base_offset: int = 0, first_index: int = 0) -> Iterator[PhysicalMessage]:
        return self._parse(_Reader(source), data, source, base_offset, first_index)

    @staticmethod
    def _parse(reader: _Reader, data: bytes, source: str, base_offset: int, index: int,
               stop: Optional[int] = None) -> Iterator[PhysicalMessage]:
        pos, stop = 0, len(data) if stop is None else stop
        while pos < stop:
            message, pos = reader.message(data, pos, base_offset, index)
            yield message
            index += 1

    def whole_records(self, data: bytes) -> int:
        """Where the last RV message held whole in ``data`` ends (each declares its size): one cut
        by the end of ``data``, or damage, stops the walk."""
        pos = 0
        while True:
            try:
                pos = message_end(data, pos)
            except CmiFormatError:
                return pos

    def scan(self, path: str, keep: Optional[Keep] = None) -> Iterator[PhysicalMessage]:
        """Every message of the file, a damaged stretch as a message of its own (``resync``), read
        in pieces, in order, through one ``_Reader``: the DAT and VAR messages of one piece lay out
        the ATO messages of the next, and the messages after damage keep their attachment's
        layout (``_Reader.damaged``)."""
        reader = _Reader(path)

        def read_from(start: int, first_index: int) -> Iterator[PhysicalMessage]:
            return parse_in_chunks(path, READ_CHUNK_BYTES, self.whole_records,
                                   lambda data, source, base, index, stop: self._parse(reader, data, source, base,
                                                                                       index, stop),
                                   None, start, first_index, threads=False)

        def read() -> Iterator[PhysicalMessage]:
            for message in scan_recovering(self, path, read_from=read_from):
                if message.damage is not None:  # before reading resumes after it
                    reader.damaged(message.details.kind)
                yield message
        return kept(read(), keep)

    def salvage(self, data: bytes, source: str, index: int, start: int, end: int,
                damage: KeptError) -> PhysicalMessage:
        return dataclasses.replace(damaged_message(None, source, index, start, end, damage),
                                   details=RvDetails(_kind_at(data, start), 0, ""))

    def resync(self, data: bytes, start: int, offset: int) -> Optional[int]:
        """The end of the damaged message, when its header still gives a size after which the next
        message's header reads (each RV message declares its own length, so one with a bad field
        does not hide the rest); else the next place after ``offset`` where an RV header reads."""
        end = _header_end(data, start)
        if end is not None and (end == len(data) or _header_end(data, end) is not None):
            return end
        at = max(offset, start + 1)
        while True:
            magic = data.find(_MAGIC_BYTES, at + 4)
            if magic < 0:
                return None
            if _header_end(data, magic - 4) is not None:
                return magic - 4
            at = magic - 3

    def payload_pieces(self, spans: Sequence[MessageSpan], heads: Sequence[int], room: int = 0,
                       hints: Sequence[Any] = ()) -> Iterator[SpanPayloads]:
        """The ATO messages at ``spans`` as ``rebuild`` gives them (their record type, then their
        rows laid out by ``hints``, the layouts planning kept), the messages of a piece of the file
        read at once and their rows written by the kernel straight into one buffer: no message is
        copied or parsed field by field in Python. Each message's header must frame exactly its span."""
        if len(hints) != len(spans) or any(head != len(ATO_RECORD_TYPE) for head in heads):
            raise ValueError("an ATO message's head is its record type, and each needs its layout")
        for run, data, base in span_pieces(spans, span_runs(spans, PIECE_BYTES)):
            yield _ato_payloads(data, list(spans[run.start:run.stop]), list(hints[run.start:run.stop]), base, room)

    def bulk_decodes(self, hint: Any) -> bool:
        return isinstance(hint, ObservationLayout)  # an ATO message: its rows need only its layout

    def write(self, out: BinaryIO, messages: Iterable[OutgoingMessage], *, comments: Sequence[str] = (),
              deterministic: bool = False) -> int:
        return write_rv(out, messages)


# The head of an ATO message in the shape writers give it: the RV header, then its count (field 1)
# and record type (field 2) as 4-byte ints named ATO. All but the message size and the two values
# (``_HEAD_FIXED``) is the same in every such message.
_ATO_HEAD = np.frombuffer(message_bytes([field_bytes("ATO", 1, INT, bytes(4)), field_bytes("ATO", 2, INT, bytes(4))]),
                          dtype=np.uint8)
_COUNT_AT = HEADER.size + len(field_bytes("ATO", 1, INT, b""))  # the count field without its value
_HEAD_FIXED = np.ones(len(_ATO_HEAD), dtype=bool)
_HEAD_FIXED[[0, 1, 2, 3, _COUNT_AT, _COUNT_AT + 1, _COUNT_AT + 2, _COUNT_AT + 3, -4, -3, -2, -1]] = False


def _usual_ato_heads(view: np.ndarray, ats: np.ndarray, ends: np.ndarray, nvars: np.ndarray
                     ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(counts, pairs starts, usual) of the ATO messages at view[ats[i]:ends[i]], read at once by
    numpy. ``usual[i]``: message i's head has the writers' shape (``_ATO_HEAD``), its header frames
    exactly its span and its count fits its bytes (``ato_count``'s bound): for it the count and
    pairs start are those ``_ato_head`` would give. Any other message is read by ``_ato_head``."""
    size = len(_ATO_HEAD)
    pairs_starts = ats + size
    if len(view) < size:
        return np.zeros(len(ats), dtype=np.int64), pairs_starts, np.zeros(len(ats), dtype=bool)
    usual = (ats >= 0) & (ends <= len(view)) & (ends - ats >= size)
    heads = view[np.where(usual, ats, 0)[:, None] + np.arange(size)]
    usual &= (heads[:, _HEAD_FIXED] == _ATO_HEAD[_HEAD_FIXED]).all(axis=1)
    usual &= heads[:, :4].copy().view(">u4").ravel() == ends - ats
    counts = heads[:, _COUNT_AT:_COUNT_AT + 4].copy().view(">i4").ravel().astype(np.int64)
    # ato_count's bound: each value takes two fields of at least 7 bytes
    usual &= (counts >= 0) & np.where(nvars > 0, counts * nvars * 14 <= ends - pairs_starts, counts == 0)
    return counts, pairs_starts, usual


def _ato_head(data: memoryview, span: MessageSpan, layout: ObservationLayout, base: int) -> Tuple[int, int]:
    """(count, pairs start) of the ATO message at ``span``, every check made and failing with its error."""
    source, index, start, end = span
    where = Location(source, index, start)
    at = start - base
    if end - base > len(data):
        raise CmiFormatError(f"the file ends at byte {base + len(data)}, before the planned message ending at "
                             f"{end}: it changed since it was planned", where)
    if _header_end(data, at) != end - base or _kind_at(data, at) != "ATO":
        raise CmiFormatError("the message differs from the one planned: the file changed since it was "
                             "planned", where)
    return ato_count(data, at + HEADER.size, end - base, layout, where, message_at=at)


def _ato_payloads(data: memoryview, spans: List[MessageSpan], layouts: List[ObservationLayout], base: int,
                  room: int) -> SpanPayloads:
    """The ``SpanPayloads`` of the ATO messages at ``spans`` in ``data`` (file bytes from ``base``):
    their heads read by numpy at once (``_usual_ato_heads``; any other by ``_ato_head``), then the
    rows of each run of messages of one layout by one kernel call. Errors come in the messages'
    order, heads first, as reading them one by one would give them."""
    view = np.frombuffer(data, dtype=np.uint8)
    ats = np.array([span[2] for span in spans], dtype=np.int64) - base
    ends = np.array([span[3] for span in spans], dtype=np.int64) - base
    nvars = np.array([len(layout.lengths) for layout in layouts], dtype=np.int64)
    counts, pairs_starts, usual = _usual_ato_heads(view, ats, ends, nvars)
    checked = set()
    for i, (is_usual, count, layout) in enumerate(zip(usual.tolist(), counts.tolist(), layouts)):
        if not is_usual:
            counts[i], pairs_starts[i] = _ato_head(data, spans[i], layout, base)
        elif count and id(layout) not in checked:  # as ato_count checks it, at the first message with rows
            check_layout(layout, Location(*spans[i][:3]))
            checked.add(id(layout))
    obs_lengths = np.array([layout.obs_length for layout in layouts], dtype=np.int64)
    sizes = counts * obs_lengths
    data_starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    # The kernel writes every byte of the variables; zeros for the padding RV does not carry, if any.
    distinct = {id(layout): layout for layout in layouts}.values()
    padded = any(layout.obs_length > sum(layout.lengths) for layout in distinct)
    buffer = (np.zeros if padded else np.empty)(room + int(data_starts[-1]), dtype=np.uint8)
    ids = np.array([id(layout) for layout in layouts], dtype=np.uint64)
    run_starts = [0, *(np.flatnonzero(ids[1:] != ids[:-1]) + 1).tolist(), len(spans)]
    for first, stop in zip(run_starts, run_starts[1:]):
        if first == stop:
            continue
        write_rows(view, pairs_starts[first:stop], ends[first:stop], counts[first:stop],
                   room + data_starts[first:stop], layouts[first], buffer,
                   lambda m, offset, first=first: Location(*spans[first + m][:3]).at_payload(
                       offset - int(ats[first + m])))
    record = len(ATO_RECORD_TYPE)
    heads = np.full(len(spans), record, dtype=np.int64)
    head = np.frombuffer(ATO_RECORD_TYPE * len(spans), dtype=np.uint8)
    return SpanPayloads(spans, sizes + record, heads, head, np.arange(len(spans), dtype=np.int64) * record, buffer,
                        room, data_starts)


class RvTransport(Transport):
    name = "tibrv"
    formats = (RvFormat(),)
    write_format = "tibrv"
    # RV sends numbers as big-endian IEEE doubles (docs/spec/tibrv.md#ato): its records are written so.
    required_write_options = {"encoding": (ENCODING, "RV numbers are big-endian IEEE")}
    message_columns = (pa.field("rv_type", pa.string()), pa.field("rv_fields", pa.int32()),
                       pa.field("rv_summary", pa.string()))

    def logical_messages(self, messages: Sequence[PhysicalMessage]
                         ) -> Tuple[List[PhysicalMessage], List[UnjoinedMessage]]:
        return sequence.cmi_messages(messages), []

    def rebuild(self, pieces: Sequence[PhysicalMessage], hint: Any = None) -> PhysicalMessage:
        [message] = pieces
        details = message.details
        if isinstance(details, RvDetails) and details.raw:
            if hint is None:
                raise CmiFormatError("an ATO message re-read without the variables planning laid it out by",
                                     message.location())
            rows = observation_rows(message.payload, HEADER.size, len(message.payload), hint, message.location())
            message = dataclasses.replace(message, payload=rows, details=dataclasses.replace(details, raw=False),
                                          reread_hint=hint)
        return message

    def message_values(self, message: PhysicalMessage) -> Optional[List[str]]:
        details = message.details
        return list(details.values) if isinstance(details, RvDetails) and details.kind in ("MSG", "DATA") else None

    def message_row(self, message: PhysicalMessage) -> Dict[str, Any]:
        details = message.details
        if not isinstance(details, RvDetails):
            return {}
        # RV messages carry no MQ-style descriptor: the CMI roles are read off their order instead.
        return {"msg_type": None, "correl_id": None, "encoding": None, "ccsid": None, "rv_type": details.kind or None,
                "rv_fields": details.field_count, "rv_summary": details.summary}


TRANSPORT = RvTransport()
