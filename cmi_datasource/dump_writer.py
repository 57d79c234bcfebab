"""Arrow -> CMI attachments -> dmpmqmsg dump text: the reverse direction, without Spark.

Used by the sample generator and the tests today, and by the Spark write path.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import BinaryIO, List, Optional, Sequence, Tuple

import pyarrow as pa

from .capture.dmpmqmsg import write_dump
from .charsets import code_page
from .cmi.emit import IdSource, OutgoingAttachment, attachment_messages
from .cmi.header import ATTACHMENT_BINARY_FILE, ATTACHMENT_DATASET, ATTACHMENT_TEXT_FILE
from .cmi.wire import WireFormat
from .mq.encoding import ENCODING_LITTLE_ENDIAN, float_format, integer_order
from .mq.mqmd import Descriptor
from .payload.external_file import binary_records, file_payloads, text_records
from .payload.sas_dataset_writer import MAX_MESSAGE_BYTES, dataset_payloads


@dataclass(frozen=True)
class WriteOptions:
    encoding: int = ENCODING_LITTLE_ENDIAN
    ccsid: int = 1208
    long_size: int = 4
    terminated: bool = True
    max_message_bytes: int = MAX_MESSAGE_BYTES
    application_message: str = ""
    deterministic_seed: Optional[str] = None  # fixes ids and times for byte-stable output
    truncate: bool = False

    @property
    def wire(self) -> WireFormat:
        return WireFormat(integer_order(self.encoding), self.long_size, self.terminated)


@dataclass(frozen=True)
class DatasetToWrite:
    table: pa.Table
    library: str
    member: str
    label: str = ""
    description: str = ""


@dataclass(frozen=True)
class FileToWrite:
    name: str
    content: bytes = b""
    text: Optional[str] = None  # set for a text file
    lrecl: Optional[int] = None


def build_messages(datasets: Sequence[DatasetToWrite] = (), files: Sequence[FileToWrite] = (),
                   options: WriteOptions = WriteOptions()) -> List[Tuple[Descriptor, bytes]]:
    """All physical messages of one header carrying the given attachments."""
    codepage = code_page(options.ccsid)
    wire = options.wire
    outgoing = []
    for d in datasets:
        payloads = dataset_payloads(d.table, codepage, float_format(options.encoding), wire, label=d.label,
                                    max_payload=options.max_message_bytes, truncate=options.truncate)
        outgoing.append(OutgoingAttachment(ATTACHMENT_DATASET, d.library.upper(), d.member.upper(),
                                           d.description, payloads.payloads))
    for f in files:
        if f.text is not None:
            records = text_records(f.text, codepage)
            size = len(codepage.encode(f.text))
            kind = ATTACHMENT_TEXT_FILE
        else:
            lrecl = f.lrecl or 256
            records = binary_records(f.content, lrecl)
            size = len(f.content)
            kind = ATTACHMENT_BINARY_FILE
        lrecl = f.lrecl or max((len(r) for r in records), default=0)
        payloads = file_payloads(records, lrecl, size, wire, options.max_message_bytes)
        outgoing.append(OutgoingAttachment(kind, "FILENAME", f.name, "", payloads))
    return attachment_messages(outgoing, application_message=codepage.encode(options.application_message),
                               codepage=codepage, encoding=options.encoding, wire=wire,
                               ids=IdSource(options.deterministic_seed),
                               deterministic=options.deterministic_seed is not None)


def write_attachments_dump(out: BinaryIO, datasets: Sequence[DatasetToWrite] = (),
                           files: Sequence[FileToWrite] = (), options: WriteOptions = WriteOptions(),
                           queue_manager: str = "QM1", queue: str = "SAS.CMI.QUEUE") -> int:
    messages = build_messages(datasets, files, options)
    created = "Sat Jan  1 00:00:00 2000" if options.deterministic_seed is not None else None
    return write_dump(out, messages, queue_manager=queue_manager, queue=queue, created=created)
