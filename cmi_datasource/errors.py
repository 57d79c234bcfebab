"""Typed errors for bad captures.

Every error raised on bad input names where it happened: the file, the physical
message (0-based index in that file) and a byte offset, so a user can open the
capture and look. Which offset depends on the layer: for the dump text it is
the byte offset in the file; for a field inside a message payload it is the
offset inside that payload, with the message's own file offset alongside.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Location:
    """Where a problem was found. Any part may be unknown (None)."""

    source: Optional[str] = None
    message_index: Optional[int] = None
    file_offset: Optional[int] = None
    payload_offset: Optional[int] = None

    def at_payload(self, payload_offset: int) -> "Location":
        return Location(self.source, self.message_index, self.file_offset, payload_offset)

    def describe(self) -> str:
        parts = []
        if self.source is not None:
            parts.append(f"file {self.source}")
        if self.message_index is not None:
            parts.append(f"message {self.message_index}")
        if self.file_offset is not None:
            parts.append(f"file byte offset {self.file_offset}")
        if self.payload_offset is not None:
            parts.append(f"payload byte offset {self.payload_offset}")
        return ", ".join(parts) if parts else "unknown location"


class CmiError(Exception):
    """Base class of everything this package raises on purpose."""


class CmiOptionError(CmiError, ValueError):
    """An option given by the user is invalid or selects nothing."""


class CmiFormatError(CmiError):
    """The capture does not follow the format it claims to be in."""

    def __init__(self, problem: str, location: Location = Location()):
        self.problem = problem
        self.location = location
        super().__init__(f"{problem} ({location.describe()})")

    @property
    def source(self) -> Optional[str]:
        return self.location.source

    @property
    def message_index(self) -> Optional[int]:
        return self.location.message_index

    @property
    def offset(self) -> Optional[int]:
        loc = self.location
        return loc.payload_offset if loc.payload_offset is not None else loc.file_offset


class UnknownCaptureFormatError(CmiFormatError):
    """No registered capture format recognises the file (see option ``format``)."""


class DumpSyntaxError(CmiFormatError):
    """A line of a dmpmqmsg text dump cannot be parsed (bad hex, stray attribute line...)."""


class TruncatedError(CmiFormatError):
    """A declared length or count points past the end of the data it describes."""


class AttachmentError(CmiFormatError):
    """Physical messages cannot be assembled into a CMI attachment."""


class IncompleteAttachmentError(AttachmentError):
    """An attachment misses its count message or some of its sequenced messages."""


class FileLayoutError(CmiFormatError):
    """An external file attachment's records do not parse."""


class DatasetLayoutError(CmiFormatError):
    """A SAS dataset attachment's definitions and observations do not agree."""


class ValueConversionError(CmiFormatError):
    """A stored value cannot be represented in the column type chosen for it."""


class UnsupportedEncodingError(CmiFormatError):
    """A CCSID or MQ Encoding this package cannot decode."""


class CmiEncodeError(CmiError, ValueError):
    """Data cannot be written as CMI: a column type, a length or a character the target lacks."""
