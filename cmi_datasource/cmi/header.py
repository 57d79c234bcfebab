"""The CMI attachment header message (MsgType 100000), parsed and built from one record table
(``cmi/records.py``: ``HEADER`` then ``ATTACHMENT_ENTRY`` per attachment)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Tuple

from ..charsets import CodePage
from ..errors import AttachmentError, CmiFormatError, Location
from .correl import KEY
from .records import ATTACHMENT_ENTRY, HEADER, min_record_size, read_record, write_record
from .wire import FieldReader, FieldWriter, WireFormat

ATTACHMENT_DATASET = 1
ATTACHMENT_TEXT_FILE = 2
ATTACHMENT_BINARY_FILE = 3
ATTACHMENT_KINDS = {ATTACHMENT_DATASET: "dataset", ATTACHMENT_TEXT_FILE: "text",
                    ATTACHMENT_BINARY_FILE: "binary"}

# Conventions tried in order; the writer's defaults first (docs/spec/cmi.md#primitive-types).
WIRE_CANDIDATES: Tuple[Tuple[int, bool], ...] = ((4, True), (4, False), (8, True), (8, False))


@dataclass(frozen=True)
class AttachmentEntry:
    attachment_type: int
    correl_id: bytes
    qualifier1: str  # library name, or "FILENAME"/"FILEREF"
    qualifier2: str  # member name, or the file name/fileref
    description: str
    minor_version: int = 0
    major_version: int = 0

    @property
    def key(self) -> bytes:
        return self.correl_id[KEY]

    @property
    def kind(self) -> str:
        return ATTACHMENT_KINDS.get(self.attachment_type, f"type {self.attachment_type}")

    @property
    def name(self) -> str:
        if self.attachment_type == ATTACHMENT_DATASET:
            return f"{self.qualifier1.strip()}.{self.qualifier2.strip()}".upper()
        return self.qualifier2


@dataclass(frozen=True)
class CmiHeader:
    header_correl_id: bytes
    original_msg_type: int
    original_correl_id: bytes
    message_correl_id: bytes
    attachments: Tuple[AttachmentEntry, ...]
    wire: WireFormat


def _parse_with(payload: bytes, wire: WireFormat, codepage: CodePage, location: Location) -> CmiHeader:
    r = FieldReader(payload, wire, location.at_payload)
    head = read_record(r, HEADER)
    count = head["attachment_count"]
    # The smallest entry bounds the declared count before anything is allocated.
    if count < 0 or count * min_record_size(ATTACHMENT_ENTRY, wire.long_size, wire.terminated) > r.remaining:
        raise CmiFormatError(f"header declares {count} attachments but only {r.remaining} bytes follow",
                             location.at_payload(r.pos - 4))
    entries: List[AttachmentEntry] = []
    for _ in range(count):
        e = read_record(r, ATTACHMENT_ENTRY)
        entries.append(AttachmentEntry(e["attachment_type"], e["correl_id"], codepage.decode(e["qualifier1"]),
                                       codepage.decode(e["qualifier2"]), codepage.decode(e["description"]),
                                       e["minor_version"], e["major_version"]))
    if r.remaining:
        raise CmiFormatError(f"{r.remaining} bytes left after the header", location.at_payload(r.pos))
    return CmiHeader(head["header_correl_id"], head["original_msg_type"], head["original_correl_id"],
                     head["message_correl_id"], tuple(entries), wire)


def parse_header(payload: bytes, order: str, codepage: CodePage, location: Location) -> CmiHeader:
    """Parse a header, detecting long size and string terminators.

    The convention is the one whose parse consumes the payload exactly (docs/spec/cmi.md#primitive-types).
    """
    failures = []
    for long_size, terminated in WIRE_CANDIDATES:
        try:
            return _parse_with(payload, WireFormat(order, long_size, terminated), codepage, location)
        except (CmiFormatError, UnicodeDecodeError) as e:
            why = e.problem if isinstance(e, CmiFormatError) else str(e)
            failures.append(f"long={long_size} terminated={terminated}: {why}")
    raise AttachmentError("attachment header matches no CMI layout (" + "; ".join(failures) + ")",
                          location)


def build_header(header: CmiHeader, codepage: CodePage) -> bytes:
    w = FieldWriter(header.wire)
    write_record(w, HEADER, {"header_correl_id": header.header_correl_id,
                             "original_msg_type": header.original_msg_type,
                             "original_correl_id": header.original_correl_id,
                             "message_correl_id": header.message_correl_id,
                             "attachment_count": len(header.attachments)})
    for e in header.attachments:
        write_record(w, ATTACHMENT_ENTRY, {
            "attachment_type": e.attachment_type, "correl_id": e.correl_id,
            "qualifier1": codepage.encode(e.qualifier1), "qualifier2": codepage.encode(e.qualifier2),
            "description": codepage.encode(e.description), "minor_version": e.minor_version,
            "major_version": e.major_version})
    return w.getvalue()
