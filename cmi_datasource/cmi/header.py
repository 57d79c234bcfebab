"""The CMI attachment header message (MsgType 100000), parsed and built."""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Tuple

from ..charsets import CodePage
from ..errors import AttachmentError, CmiFormatError, Location
from .wire import FieldReader, FieldWriter, WireFormat

CORREL_ID_SIZE = 24
KEY_SIZE = 16

ATTACHMENT_DATASET = 1
ATTACHMENT_TEXT_FILE = 2
ATTACHMENT_BINARY_FILE = 3
ATTACHMENT_KINDS = {ATTACHMENT_DATASET: "dataset", ATTACHMENT_TEXT_FILE: "text",
                    ATTACHMENT_BINARY_FILE: "binary"}

# Smallest encoding of one attachment entry: type, correlid, three empty int-length strings,
# two version ints. Bounds the declared attachment count before anything is allocated.
_MIN_ENTRY_BYTES = 4 + CORREL_ID_SIZE + 3 * 4 + 4 + 4

# Conventions tried in order; the contract's defaults first.
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
        return self.correl_id[:KEY_SIZE]

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
    header_correl_id = r.raw(CORREL_ID_SIZE, "header correlid")
    original_msg_type = r.long("original msg type")
    original_correl_id = r.raw(CORREL_ID_SIZE, "original msg correlid")
    message_correl_id = r.raw(CORREL_ID_SIZE, "message correlid")
    at = r.pos
    count = r.int32("number of attachments")
    if count < 0 or count * _MIN_ENTRY_BYTES > r.remaining:
        raise CmiFormatError(f"header declares {count} attachments but only {r.remaining} bytes follow",
                             location.at_payload(at))
    entries: List[AttachmentEntry] = []
    for _ in range(count):
        attachment_type = r.int32("attachment type")
        correl_id = r.raw(CORREL_ID_SIZE, "attachment correlid")
        q1 = r.string("qualifier 1", length_is_int=True)
        q2 = r.string("qualifier 2", length_is_int=True)
        desc = r.string("attachment description", length_is_int=True)
        minor = r.int32("minor version")
        major = r.int32("major version")
        entries.append(AttachmentEntry(attachment_type, correl_id, codepage.decode(q1),
                                       codepage.decode(q2), codepage.decode(desc), minor, major))
    if r.remaining:
        raise CmiFormatError(f"{r.remaining} bytes left after the header", location.at_payload(r.pos))
    return CmiHeader(header_correl_id, original_msg_type, original_correl_id, message_correl_id,
                     tuple(entries), wire)


def parse_header(payload: bytes, order: str, codepage: CodePage, location: Location) -> CmiHeader:
    """Parse a header, detecting long size and string terminators.

    The convention is the one whose parse consumes the payload exactly (contract section 2).
    """
    failures = []
    for long_size, terminated in WIRE_CANDIDATES:
        try:
            return _parse_with(payload, WireFormat(order, long_size, terminated), codepage, location)
        except (CmiFormatError, UnicodeDecodeError) as e:
            failures.append(f"long={long_size} terminated={terminated}: {e}")
    raise AttachmentError("attachment header matches no CMI layout (" + "; ".join(failures) + ")",
                          location)


def build_header(header: CmiHeader, codepage: CodePage) -> bytes:
    w = FieldWriter(header.wire)
    w.raw(header.header_correl_id).long(header.original_msg_type)
    w.raw(header.original_correl_id).raw(header.message_correl_id).int32(len(header.attachments))
    for e in header.attachments:
        w.int32(e.attachment_type).raw(e.correl_id)
        for text in (e.qualifier1, e.qualifier2, e.description):
            w.string(codepage.encode(text), length_is_int=True)
        w.int32(e.minor_version).int32(e.major_version)
    return w.getvalue()
