"""External file attachments (type 2 text, type 3 binary), read and written.

Sequenced message 1 holds ``int`` lrecl and ``int`` file size; messages 2..N hold
records, each a ``long`` length and that many bytes. A record may continue into
the next message (we read the messages as one stream); the writer keeps records
whole and only splits a record longer than a message can hold.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence

from ..charsets import NOT_IN_CODE_PAGE, CodePage
from ..cmi.stream import MessageStream
from ..cmi.records import FILE_PROLOGUE, read_record, write_record
from ..cmi.wire import FieldReader, FieldWriter, WireFormat
from ..errors import AttachmentError, FileLayoutError, Location, ValueConversionError
from ..messages import PhysicalMessage
from ..encoding import integer_order


@dataclass(frozen=True)
class ExternalFile:
    lrecl: int
    declared_size: int
    records: List[bytes]
    is_text: bool

    @property
    def content(self) -> bytes:
        """Text files: records joined by newlines (still in the sender's code page)."""
        if self.is_text:
            return b"".join(r + b"\n" for r in self.records)
        return b"".join(self.records)

    def text(self, codepage: CodePage, location: Location = Location()) -> Optional[str]:
        """The file's text, or ValueConversionError for a record that is not valid in the code page."""
        if not self.is_text:
            return None
        lines = []
        for number, record in enumerate(self.records, start=1):
            try:
                lines.append(codepage.decode(record) + "\n")
            except UnicodeDecodeError:
                raise ValueConversionError(
                    f"record {number} of the text file is not valid {codepage.codec} (CCSID {codepage.ccsid})",
                    location, hint=NOT_IN_CODE_PAGE) from None
        return "".join(lines)


def read_external_file(messages: Sequence[PhysicalMessage], header_wire: WireFormat,
                       is_text: bool) -> ExternalFile:
    if not messages:
        raise AttachmentError("external file attachment has no sequenced messages")
    first = messages[0]
    wire = header_wire.with_order(integer_order(first.descriptor.encoding))
    prologue = FieldReader(first.payload, wire, first.location)
    head = read_record(prologue, FILE_PROLOGUE)
    if prologue.remaining:
        raise FileLayoutError(f"{prologue.remaining} bytes follow lrecl and size in the first file message",
                              first.location(prologue.pos))
    stream = MessageStream(messages[1:])
    reader = FieldReader(stream.data(), wire, stream.locate)
    records: List[bytes] = []
    while reader.remaining:
        records.append(_record(reader))
    return ExternalFile(head["lrecl"], head["size"], records, is_text)


def _record(reader: FieldReader) -> bytes:
    at = reader.pos
    n = reader.long("record length")
    if n < 0:
        raise FileLayoutError(f"record has negative length {n}", reader.locate(at))
    return reader.raw(n, "record")


def text_records(text: str, codepage: CodePage) -> List[bytes]:
    """Lines of a text file, encoded; a final newline does not start another record."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [codepage.encode(line.rstrip("\r")) for line in lines]


def binary_records(content: bytes, lrecl: int) -> List[bytes]:
    return [content[i:i + lrecl] for i in range(0, len(content), lrecl)]


def file_payloads(records: Sequence[bytes], lrecl: int, size: int, wire: WireFormat,
                  max_payload: int) -> List[bytes]:
    """Sequenced payloads of a file attachment: the prologue, then records packed into messages."""
    prologue = FieldWriter(wire)
    write_record(prologue, FILE_PROLOGUE, {"lrecl": lrecl, "size": size})
    payloads = [prologue.getvalue()]
    current = FieldWriter(wire)
    for record in records:
        piece = FieldWriter(wire).long(len(record)).raw(record).getvalue()
        if current.out and len(current.out) + len(piece) > max_payload:
            payloads.append(current.getvalue())
            current = FieldWriter(wire)
        current.raw(piece)
        while len(current.out) > max_payload:  # a record longer than a message continues in the next
            payloads.append(bytes(current.out[:max_payload]))
            del current.out[:max_payload]
    if current.out:
        payloads.append(current.getvalue())
    return payloads
