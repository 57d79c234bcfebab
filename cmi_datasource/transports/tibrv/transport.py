"""TIB/Rendezvous as a transport: captures of RV messages back to back (seed 001, contract section 3).

Reading a capture, each RV message becomes the CMI message MQ would carry for it
(``records.py``), an ATO message its fixed-width rows (``observations.py``, laid out by the DAT
and VAR messages before it in the file). RV messages carry no correlation ids, so
``logical_messages`` gives them the ones CMI groups by, from their order: an HDR message's
attachments run one after another, each up to its LST; the application message (MSG or DATA)
follows the HDR. An LST whose count disagrees with the messages found makes its attachment
incomplete, naming both counts.
"""
from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from typing import Any, BinaryIO, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import pyarrow as pa

from ...cmi.correl import MSGTYPE_CMI_HEADER, MSGTYPE_CMI_SUBORDINATE, count_correl_id, sequence_correl_id
from ...errors import CmiFormatError, Location
from ...messages import Descriptor, OutgoingMessage, PhysicalMessage, UnjoinedMessage
from ..base import READ_CHUNK_BYTES, CaptureFormat, Keep, Transport, parse_in_chunks
from . import records
from .observations import observation_rows
from .records import ENCODING, ObservationLayout
from .wire import HEADER, MAGIC, RvField, message_end, read_fields
from .writer import write_rv

_ZERO_CORREL = bytes(24)
SUMMARY_FIELDS = 12  # fields the messages view's rv_summary shows


@dataclass(frozen=True)
class RvDetails:
    kind: str  # HDR, MSG, DAT, VAR, ATO, ... (the name of the message's fields)
    field_count: int
    summary: str  # the first fields, readable
    count: Optional[int] = None  # HDR: attachments; LST: the messages it counts
    keys: Tuple[bytes, ...] = ()  # HDR: its attachments' keys; its message correlid last
    raw: bool = False  # ATO re-read without its layout: the RV body, waiting for ``rebuild``
    values: Tuple[str, ...] = ()  # MSG/DATA: its parameters


def _descriptor(msg_type: int, correl_id: bytes = _ZERO_CORREL) -> Descriptor:
    # CCSID 0: RV strings carry no code page; the charset policy's default (option defaultCcsid) decides.
    return Descriptor(msg_type, correl_id, ENCODING, 0)


class _Reader:
    """The messages of one file (or a span of it), read in order: the DAT and VAR messages seen
    lay out the ATO messages that follow them."""

    def __init__(self, source: str):
        self.source = source
        self.definition: Optional[Tuple[List[RvField], Location]] = None  # the DAT message's fields, and where
        self.variables: List[Tuple[bool, int, Location]] = []
        self.layout: Optional[ObservationLayout] = None

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
        msg_type, correl, count, keys, hint, raw = MSGTYPE_CMI_SUBORDINATE, _ZERO_CORREL, None, (), None, False
        values: Tuple[str, ...] = ()
        if kind == "HDR":
            payload, header = records.header(fields, self.source, index, located)
            msg_type, correl, count = MSGTYPE_CMI_HEADER, header.header_correl_id, len(header.attachments)
            keys = tuple(e.key for e in header.attachments) + (header.message_correl_id,)
            self.definition, self.variables, self.layout = None, [], None
        elif kind in ("MSG", "DATA"):
            values = records.application_values(fields, located)
            payload = records.application_text(fields, located)
        elif kind == "DAT":
            payload = records.dataset_definition(fields, located)
            self.definition, self.variables, self.layout = (fields, located), [], None
        elif kind == "VAR":
            payload, layout = records.variable_definitions(fields, located)
            self.variables += layout
            if self.definition is not None:
                definition, definition_at = self.definition
                self.layout = records.layout_of(definition, self.variables, definition_at)
        elif kind == "ATO":
            hint = self.layout
            if hint is None:  # re-read alone: the transport rebuilds it with the layout planning kept
                payload, raw = body, True
            else:
                payload = observation_rows(body, HEADER.size, len(body), hint, located)
                field_count = 2 + 2 * len(hint.lengths) * ((len(payload) - 4) // max(hint.obs_length, 1))
        elif kind in ("ATI", "ATC"):
            payload = records.record_type_only(kind)
        elif kind == "FDC":
            payload = records.file_prologue(fields, located)
        elif kind in ("ATX", "ATB"):
            payload = records.file_records(fields, kind, located)
        elif kind == "LST":
            payload, count = records.WIRE.structs()[0].pack(0), records.count_of(fields, "LST", located)
        else:
            raise records.RvCmiError(f"RV message of type {kind!r}: not one of {', '.join(records.KINDS)}", located)
        shown = records.summary(fields, field_count, SUMMARY_FIELDS, located)
        details = RvDetails(kind, field_count, shown, count, keys, raw, values)
        return PhysicalMessage(_descriptor(msg_type, correl), payload, self.source, index, base_offset + pos,
                               base_offset + end, details=details, reread_hint=hint), end


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

    def scan_from(self, path: str, start: int, first_index: int,
                  keep: Optional[Keep] = None) -> Iterator[PhysicalMessage]:
        # In pieces, in order, through one reader: the DAT and VAR messages of one piece lay out
        # the ATO messages of the next.
        reader = _Reader(path)
        return parse_in_chunks(path, READ_CHUNK_BYTES, self.whole_records,
                               lambda data, source, base, index, stop: self._parse(reader, data, source, base, index,
                                                                                   stop),
                               keep, start, first_index, threads=False)

    def resync(self, data: bytes, start: int, offset: int) -> Optional[int]:
        """The end of the damaged message, when its header still gives its size: each RV message
        declares its own length, so one with a bad field does not hide the rest."""
        try:
            return message_end(data, start)
        except CmiFormatError:
            return None

    def write(self, out: BinaryIO, messages: Iterable[OutgoingMessage], *, comments: Sequence[str] = (),
              deterministic: bool = False) -> int:
        return write_rv(out, messages)


class RvTransport(Transport):
    name = "tibrv"
    formats = (RvFormat(),)
    write_format = "tibrv"
    message_columns = (pa.field("rv_type", pa.string()), pa.field("rv_fields", pa.int32()),
                       pa.field("rv_summary", pa.string()))

    def logical_messages(self, messages: Sequence[PhysicalMessage]
                         ) -> Tuple[List[PhysicalMessage], List[UnjoinedMessage]]:
        out: List[PhysicalMessage] = []
        keys: List[bytes] = []  # the current HDR's attachment keys still to come
        message_correl: Optional[bytes] = None
        key, k = None, 0  # the attachment being read and its last sequence number
        for m in messages:
            details = m.details
            if not isinstance(details, RvDetails):
                out.append(m)
                continue
            kind = details.kind
            if kind == "HDR":
                keys, message_correl, key, k = list(details.keys[:-1]), details.keys[-1], None, 0
                out.append(m)
                continue
            if kind in ("MSG", "DATA") and message_correl is not None and key is None:
                out.append(self._with_correl(m, message_correl))
                continue
            if key is None:
                if not keys:
                    out.append(dataclasses.replace(m, descriptor=None, problem=f"{kind} message outside any "
                                                   f"attachment (no HDR lists one still open)"))
                    continue
                key, k = keys.pop(0), 0
            if kind == "LST":
                problem = None
                if details.count != k:
                    problem = (f"its LST counts {details.count} messages, {k} were found between the "
                               f"header and it")
                count = dataclasses.replace(self._with_correl(m, count_correl_id(key)),
                                            payload=records.WIRE.structs()[0].pack(k), problem=problem)
                out.append(count)
                key = None
                continue
            k += 1
            out.append(self._with_correl(m, sequence_correl_id(key, k)))
        return out, []

    @staticmethod
    def _with_correl(message: PhysicalMessage, correl_id: bytes) -> PhysicalMessage:
        return dataclasses.replace(message, descriptor=dataclasses.replace(message.descriptor, correl_id=correl_id))

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
        return {"msg_type": None, "correl_id": None, "encoding": None, "ccsid": None, "rv_type": details.kind,
                "rv_fields": details.field_count, "rv_summary": details.summary}


TRANSPORT = RvTransport()
