"""Typed errors: what went wrong, what to do about it, and where.

Every error raised on bad input names where it happened, so a user can open the capture and
look: the file, the physical message, a byte offset and, once assembly knows them, the
attachment and the message's sequence number in it. Which offset depends on the layer: for the
capture it is the byte offset in the file; for a field inside a message payload it is the
offset inside that payload, with the message's own file offset alongside.

Messages are numbered from 1, as dmpmqmsg numbers them (``* Index 1``) and as the messages
view's ``index`` column does; internally (``PhysicalMessage.index``) they count from 0.

An error's text stands alone, because Spark hands users only text: a Python worker's exception
reaches the driver as the text of an ``AnalysisException`` or ``PythonException``. The first
line is the problem, the next what to do, then one labelled line per known part of the
location. ``cmi_datasource.spark.errors.unwrap`` reads that text back into the typed error,
with its fields; ``Location.from_lines`` is the inverse of ``Location.lines`` it uses.

Here are the errors more than one layer raises. An error one transport alone raises lives with
that transport (``transports/mq/errors.py``, ``transports/sapdb/packet.py``...), one the Spark
layer alone raises in ``spark/errors.py``: a class is found again by its module and name, wherever
it is defined (pickle across processes; ``unwrap`` from Spark's text).
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, replace
from typing import Dict, Optional, Sequence


def message_number(index: int) -> int:
    """How users number a message: from 1, as dmpmqmsg's ``* Index`` lines do."""
    return index + 1


@dataclass(frozen=True)
class Location:
    """Where a problem was found. Any part may be unknown (None)."""

    source: Optional[str] = None
    message_index: Optional[int] = None  # 0-based, as PhysicalMessage.index; shown from 1
    file_offset: Optional[int] = None
    payload_offset: Optional[int] = None
    attachment: Optional[str] = None  # the attachment key, 32 hex digits
    sequence: Optional[int] = None  # the message's sequence number in the attachment (0: the count message)

    def at_payload(self, payload_offset: int) -> "Location":
        return replace(self, payload_offset=payload_offset)

    def within(self, attachment: Optional[str] = None, sequence: Optional[int] = None) -> "Location":
        """The same place, with the attachment (and sequence number) it lies in, where not yet known."""
        return replace(self, attachment=self.attachment or attachment,
                       sequence=self.sequence if self.sequence is not None else sequence)

    def lines(self) -> Dict[str, str]:
        """Label -> value of each known part, in the order the error text shows them."""
        shown = {}
        if self.source is not None:
            shown["file"] = self.source
        if self.message_index is not None:
            shown["message"] = str(message_number(self.message_index))
        if self.file_offset is not None:
            shown["file offset"] = str(self.file_offset)
        if self.payload_offset is not None:
            shown["payload offset"] = str(self.payload_offset)
        if self.attachment is not None:
            shown["attachment"] = self.attachment
        if self.sequence is not None:
            shown["sequence"] = str(self.sequence)
        return shown

    def describe(self) -> str:
        """One line: "file x, message 5, file offset 120" (for problems kept in a view's column)."""
        return ", ".join(f"{label} {value}" for label, value in self.lines().items()) or "unknown location"

    @classmethod
    def from_lines(cls, shown: Dict[str, str]) -> "Location":
        def number(label: str) -> Optional[int]:
            return int(shown[label]) if label in shown else None
        message = number("message")
        return cls(shown.get("file"), message - 1 if message is not None else None, number("file offset"),
                   number("payload offset"), shown.get("attachment"), number("sequence"))


class CmiError(Exception):
    """Base class of everything this package raises on purpose."""


class CmiOptionError(CmiError, ValueError):
    """An option given by the user is unknown, invalid or selects nothing."""


class CmiEncodeError(CmiError, ValueError):
    """Data cannot be written as CMI: a column type, a name, a length or a character the target lacks."""


class CmiFormatError(CmiError):
    """The capture does not follow the format it claims to be in."""

    hint = ("option('view', 'messages') lists the file's messages with any problem found in them; "
            "leave a damaged file out of the load to read the rest")

    def __init__(self, problem: str, location: Location = Location(), hint: Optional[str] = None):
        self.problem = " ".join(str(problem).split("\n"))
        self.location = location
        if hint is not None:
            self.hint = hint
        lines = [self.problem, f"  what to do: {self.hint}"]
        lines += [f"  {label}: {value}" for label, value in location.lines().items()]
        super().__init__("\n".join(lines))

    def __reduce__(self):  # pickled across processes with its fields, not only its text
        return type(self), (self.problem, self.location, self.hint)

    def summary(self) -> str:
        """The problem and where, on one line: what a view's ``problem`` column holds."""
        return f"{self.problem} ({self.location.describe()})"

    def within(self, attachment: Optional[str] = None, sequence: Optional[int] = None) -> "CmiFormatError":
        """The same error placed in an attachment (a layer above the one that found it knows which)."""
        return type(self)(self.problem, self.location.within(attachment, sequence), self.hint)

    @property
    def source(self) -> Optional[str]:
        return self.location.source

    @property
    def message_index(self) -> Optional[int]:
        return self.location.message_index

    @property
    def message_number(self) -> Optional[int]:
        index = self.location.message_index
        return message_number(index) if index is not None else None

    @property
    def offset(self) -> Optional[int]:
        loc = self.location
        return loc.payload_offset if loc.payload_offset is not None else loc.file_offset

    @property
    def attachment(self) -> Optional[str]:
        return self.location.attachment

    @property
    def sequence(self) -> Optional[int]:
        return self.location.sequence


@dataclass(frozen=True)
class KeptError:
    """A ``CmiFormatError`` kept to report or raise later (a damaged message, an attachment's
    unreadable layout): its fields, not the exception, whose traceback's frames would hold what
    they saw alive in a reference cycle. Pickles small, as the message index stores it."""

    kind: type
    problem: str
    location: Location
    hint: str

    @classmethod
    def of(cls, e: CmiFormatError) -> "KeptError":
        return cls(type(e), e.problem, e.location, e.hint)

    def error(self) -> CmiFormatError:
        return self.kind(self.problem, self.location, self.hint)

    def within(self, attachment: Optional[str] = None, sequence: Optional[int] = None) -> "KeptError":
        return replace(self, location=self.location.within(attachment, sequence))

    def summary(self) -> str:
        return self.error().summary()


class UnknownCaptureFormatError(CmiFormatError):
    """No registered capture format recognises the file (see option ``format``)."""

    hint = ("name the format with option('format', ...) if the file is a capture in one of the known "
            "formats, or leave the file out of the load: option('pathGlobFilter', '*.dmp') reads only the files "
            "whose names match, option('ignoreCorruptFiles', 'true') leaves out the files that are no capture")


class TruncatedError(CmiFormatError):
    """A declared length or count points past the end of the data it describes."""

    hint = ("the data ends before what a length or count declares: the file was cut short (a copy that "
            "stopped early, a capture size limit) or the message is damaged; capture it again, or leave the "
            "file out of the load")


class AttachmentError(CmiFormatError):
    """Physical messages cannot be assembled into a CMI attachment."""

    hint = ("option('view', 'attachments') shows every attachment and why it is unusable; choose another "
            "with option('dataset', ...) or option('attachment', ...)")


class IncompleteAttachmentError(AttachmentError):
    """An attachment misses its count message or some of its sequenced messages."""

    hint = ("the missing messages may be in another capture file of the same transfer: load the files "
            "together; option('view', 'attachments') shows which attachments are complete")


class FileLayoutError(CmiFormatError):
    """An external file attachment's records do not parse."""


class DatasetLayoutError(CmiFormatError):
    """A SAS dataset attachment's definitions and observations do not agree."""

    hint = ("the attachment's messages do not make one SAS data set: option('view', 'messages') with a "
            "filter on its attachment shows them in sequence")


class ValueConversionError(CmiFormatError):
    """A stored value cannot be represented in the column type chosen for it."""

    hint = ("option('temporalTypes', 'false') reads dates, datetimes and times as plain SAS numbers, which "
            "holds every stored value; times read as intervals (option timeType=interval, the default) hold "
            "durations and negative times")


class UnsupportedEncodingError(CmiFormatError):
    """A CCSID or MQ Encoding this package cannot decode."""

    hint = ("name the code page with option('ccsid', ...), or option('defaultCcsid', ...) for messages "
            "that carry none")


def not_one_of(what: str, given: str, choices: Sequence[str]) -> CmiOptionError:
    """An error for a name that is none of ``choices``, suggesting the closest (matched without case)."""
    by_lower = {c.lower(): c for c in choices}
    close = difflib.get_close_matches(str(given).lower(), list(by_lower), n=1, cutoff=0.6)
    suggestion = f" (did you mean {by_lower[close[0]]!r}?)" if close else ""
    return CmiOptionError(f"{what} {given!r} is not known{suggestion}; valid: {', '.join(choices)}")


class CompressedStreamError(TruncatedError):
    """A compressed capture whose stream is cut short or corrupt: its decompressor stopped at the
    decompressed byte offset named (nothing after it can be read)."""

    hint = ("the compressed file was cut short (a copy or download that stopped early) or is damaged: test it "
            "with its own tool (gzip -t, zstd -t, xz -t, bzip2 -t), fetch it again, or leave it out of the load")


class RecordTooLargeError(CmiFormatError):
    """One record of a capture (a text line or message, a frame, a packet, the unread bytes of a
    TCP stream) is longer than option ``maxRecordBytes`` allows: what bounds a read's memory."""

    hint = ("if the capture does hold a message this large, raise option('maxRecordBytes', ...) (its default, "
            "64 MiB, holds any CMI message); otherwise the file is damaged from this offset: leave it out of the "
            "load")


class InputFileError(CmiFormatError):
    """A capture path that is no regular file (a directory, a FIFO, a device), or a file whose
    bytes the system fails to read (an I/O error; ``/proc/self/mem``)."""

    hint = ("give regular capture files: copy what a pipe, a device or a /proc file holds into a file first, "
            "or leave the path out of the load")
