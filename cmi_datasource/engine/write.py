"""Writing: Arrow tables and files -> CMI attachments -> messages -> a transport's capture file.

The reverse direction, without Spark: used by the Spark write path, the sample generator and
the tests. The messages come out transport-neutral (``cmi.emit.OutgoingMessage``); a capture
format of the registry (by default IBM MQ's dmpmqmsg) writes them.
"""
from __future__ import annotations

from dataclasses import dataclass
import contextlib
import itertools
from typing import BinaryIO, Iterable, Iterator, List, Mapping, Optional, Sequence

import pyarrow as pa

from ..charsets import code_page, not_encodable
from ..cmi.emit import IdSource, OutgoingAttachment, attachment_messages
from ..cmi.header import ATTACHMENT_BINARY_FILE, ATTACHMENT_DATASET, ATTACHMENT_TEXT_FILE
from ..cmi.wire import WireFormat
from ..encoding import ENCODING_LITTLE_ENDIAN, float_format, integer_order
from ..messages import OutgoingMessage
from ..payload.external_file import binary_records, file_payloads, text_records
from ..payload.sas_dataset_writer import (MAX_MESSAGE_BYTES, DatasetEncoder, check_exact_numbers, plan_variables,
                                          string_lengths)
from ..transports import DEFAULT_TRANSPORT, capture_format, write_format

DEFAULT_BINARY_LRECL = 256


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
    valid_var_name: str = "v7"  # which column names are SAS variable names: sas_dataset_writer.NAME_RULES
    lossy_numbers: bool = False  # write decimals and 64-bit integers a double cannot hold exactly, rounded

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


def dataset_attachment(schema: pa.Schema, lengths: Mapping[str, int], nobs: int, batches: Iterable,
                       library: str, member: str, options: WriteOptions, description: str = "",
                       label: str = "") -> OutgoingAttachment:
    """A dataset attachment whose observations are encoded as ``batches`` are consumed.

    ``lengths`` is the longest encoded value of each string column, gathered beforehand
    (by the Spark tasks, or from a table in memory), since SAS character widths are fixed; so is
    the check that the batches hold no number a double would round (``check_exact_numbers``),
    unless ``options.lossy_numbers``.
    """
    codepage = code_page(options.ccsid)
    variables = plan_variables(schema, lengths, codepage, options.truncate, float_format(options.encoding),
                               options.valid_var_name)
    encoder = DatasetEncoder(variables, codepage, float_format(options.encoding), options.wire,
                             options.max_message_bytes, options.truncate)
    payloads = itertools.chain(encoder.definition_payloads(nobs, label), encoder.observation_payloads(batches))
    return OutgoingAttachment(ATTACHMENT_DATASET, library.upper(), member.upper(), description, payloads)


def file_attachment(f: FileToWrite, options: WriteOptions) -> OutgoingAttachment:
    codepage = code_page(options.ccsid)
    if f.text is not None:
        with _encodable(codepage, f"text file {f.name}"):
            records = text_records(f.text, codepage)
        size = len(codepage.encode(f.text))
        kind = ATTACHMENT_TEXT_FILE
    else:
        records = binary_records(f.content, f.lrecl or DEFAULT_BINARY_LRECL)
        size = len(f.content)
        kind = ATTACHMENT_BINARY_FILE
    lrecl = f.lrecl or max((len(r) for r in records), default=0)
    payloads = file_payloads(records, lrecl, size, options.wire, options.max_message_bytes)
    return OutgoingAttachment(kind, "FILENAME", f.name, "", payloads)


def _encodable(codepage, what: str):
    """Turn a code page's UnicodeEncodeError into a CmiEncodeError saying what could not be written."""
    @contextlib.contextmanager
    def guard():
        try:
            yield
        except UnicodeEncodeError as e:
            raise not_encodable(what, e, codepage) from None
    return guard()


def stream_messages(attachments: Sequence[OutgoingAttachment], options: WriteOptions,
                    ids: Optional[IdSource] = None) -> Iterator[OutgoingMessage]:
    """The messages of one header; ``ids`` gives its correlation keys and MsgIds (by default
    random, or derived from ``options.deterministic_seed``)."""
    codepage = code_page(options.ccsid)
    with _encodable(codepage, "the application message"):
        application = codepage.encode(options.application_message)
    messages = attachment_messages(attachments, application_message=application, codepage=codepage,
                                   encoding=options.encoding, wire=options.wire,
                                   ids=ids or IdSource(options.deterministic_seed),
                                   deterministic=options.deterministic_seed is not None)
    with _encodable(codepage, "a dataset or file name or an attachment description"):
        yield from messages


def build_messages(datasets: Sequence[DatasetToWrite] = (), files: Sequence[FileToWrite] = (),
                   options: WriteOptions = WriteOptions()) -> List[OutgoingMessage]:
    """All physical messages of one header carrying the given attachments (held in memory)."""
    codepage = code_page(options.ccsid)
    # Planned first (column types and names are refused there), encoded only as messages are drawn.
    outgoing = [dataset_attachment(d.table.schema, string_lengths(d.table, codepage), d.table.num_rows,
                                   d.table.to_batches(), d.library, d.member, options, d.description, d.label)
                for d in datasets]
    if not options.lossy_numbers:
        for d in datasets:
            check_exact_numbers(d.table)
    outgoing += [file_attachment(f, options) for f in files]
    return list(stream_messages(outgoing, options))


def write_attachments_dump(out: BinaryIO, datasets: Sequence[DatasetToWrite] = (),
                           files: Sequence[FileToWrite] = (), options: WriteOptions = WriteOptions(),
                           format: Optional[str] = None, **format_options) -> int:
    """One header's attachments written as a capture file in ``format`` (by default the default
    transport's); ``format_options`` go to that format's writer (dmpmqmsg: ``queue_manager``,
    ``queue`` for the file header)."""
    chosen = capture_format(format) if format else write_format(DEFAULT_TRANSPORT)
    return chosen.write(out, build_messages(datasets, files, options),
                        deterministic=options.deterministic_seed is not None, **format_options)
