"""IBM MQ ``dmpmqmsg`` (formerly qload, SupportPac MO03) text dumps: read and write.

Format (ibm-messaging/mq-q-qload, src/qloadfnc.c):

* ``*`` lines are comments (``* QLOAD Version:...``, ``* Index n``); empty lines are skipped.
* A message is a run of ``A XXX value`` attribute lines (or one ``N`` line: no descriptor),
  then one or more data lines; it ends at the next ``A``/``N`` line or at the end of file.
* Attribute code in columns 2-4, value from column 6; a value-less line keeps the default.
* Data lines: ``X`` hex (any width, optional ``<ascii>`` column after the hex),
  ``S "..."`` raw characters with ``~`` escapes (``~"`` and ``~~``), ``T`` text plus a newline.

The reader is stricter than IBM's about junk (bad hex, unknown codes, out-of-place lines all
raise ``DumpSyntaxError`` with file and byte offset) and more tolerant about layout: CRLF line
ends, whitespace-only lines, files without the header line.
"""
from __future__ import annotations

import binascii
import dataclasses
import functools
import io
import operator
import re
import time
from typing import Any, BinaryIO, Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from ..base import Keep, parse_in_chunks
from ...compiled import native_module
from ...errors import Location, TruncatedError
from ...frozen import made_whole
from ...messages import Descriptor, Origin, PhysicalMessage
from .envelope import is_envelope_format
from .errors import DumpSyntaxError
from .hex_lines import text_line, x_lines, x_records, x_run
from .message import DESCRIPTOR_FIELDS, mq_message
from .mqmd import FIELDS_BY_DUMP_CODE, MQLONG_MAX, MQLONG_MIN, MQMD, MQMD_FIELDS, mqmd_of_fields
from .segments import SEGMENT_FLAGS

DEFAULT_DATA_WIDTH = 25  # bytes per X line, as dmpmqmsg writes by default
STRING_ESCAPE = ord("~")
_INDEX_COMMENT = re.compile(rb"^\*\s*Index\s+(\d+)")
_HEX_RUN = re.compile(rb"[0-9A-Fa-f]*")
_HEX_DIGITS = b"0123456789ABCDEFabcdef"


class _MessageRecord:
    """A message being collected from the dump lines."""

    __slots__ = ("start", "attributes", "has_descriptor", "data_parts", "hex_lines")

    def __init__(self, start: int, has_descriptor: bool):
        self.start = start
        self.attributes: dict = {}
        self.has_descriptor = has_descriptor
        self.data_parts: List[bytes] = []
        self.hex_lines: List[Tuple[int, bytes]] = []  # (file offset, hex) for error reporting

    @property
    def has_data(self) -> bool:
        return bool(self.data_parts)


_END_OF_X_RUN = re.compile(rb"\n(?!X)")
# The banner dmpmqmsg prints to the terminal, kept when its output is redirected to a file
# (docs/spec/mq.md#dmpmqmsg-text-dumps): "5724-H72 (C) Copyright IBM Corp. 1994, 2026." and the tool's name.
BANNER = re.compile(rb"^\s*(?:\d{4}-\w{3} \(C\) Copyright IBM Corp\.|(?:IBM |WebSphere |IBM WebSphere )?MQ "
                    rb"Queue Load/Unload Utility\s*$)")
_ATTRIBUTE_BLOCK = re.compile(rb"(?:A [^\n]*\n)+")


# Below this many bytes of text, X runs are decoded by bytes.fromhex rather than the kernel: a
# process that only plans (rereading one definition message) then never loads numba's compiler
# (0.5 s the first time in each fresh Python worker).
SMALL_TEXT_BYTES = 1 << 16


def _plain_x_run(data: bytes, view: np.ndarray, pos: int, size: int, out: np.ndarray) -> Optional[Tuple[int, bytes]]:
    """(end, bytes) of the run of X lines starting at ``pos`` when each is ``X `` and an even
    number of hex digits (as dmpmqmsg writes them), decoded by a compiled kernel; None for
    anything else (ASCII columns, spaces, CRs, odd or bad digits), which the line-by-line path
    then parses and reports. Nearly all of a dump's bytes go through here."""
    if size - pos <= SMALL_TEXT_BYTES:
        return _plain_x_run_small(data, pos, size)
    end, written = x_run(view, pos, size, out)
    return None if end < 0 else (end, out[:written].tobytes())


def _plain_x_run_small(data: bytes, pos: int, size: int) -> Optional[Tuple[int, bytes]]:
    """``_plain_x_run`` for a little text, with the same answers, in C through the standard
    library (bytes.fromhex alone would accept spaces between digits: each line is checked first)."""
    found = _END_OF_X_RUN.search(data, pos, size)
    end = size if found is None else found.start()
    # Checked by C string methods, not a regex per line (50 us a message: 10,000 small dumps
    # spent 6 s there): every line "X " and an even count of digits, all digits hex.
    run = data[pos:end]
    lines = run.split(b"\n")
    if (not run.startswith(b"X ") or run.count(b"\nX ") != len(lines) - 1
            or any(length & 1 for length in set(map(len, lines)))):
        return None
    digits = run[2:].replace(b"\nX ", b"")
    if digits.translate(None, _HEX_DIGITS):
        return None
    return end, bytes.fromhex(digits.decode("ascii"))


def _x_lines(run: bytes, offset: int) -> Iterator[Tuple[int, bytes]]:
    """(file offset, hex digits) of each X line of a run."""
    for line in run.split(b"\n"):
        yield offset, _hex_of_x_line(line[:-1] if line.endswith(b"\r") else line)
        offset += len(line) + 1


def _parse_int(value: bytes, where: Location, code: str) -> int:
    text = value.strip()
    try:
        number = int(text)
    except ValueError:
        raise DumpSyntaxError(f"attribute {code} has value {text[:40]!r}, not a decimal integer",
                              where) from None
    if not MQLONG_MIN <= number <= MQLONG_MAX:
        raise DumpSyntaxError(f"attribute {code} has value {text[:40]!r}, which does not fit the field's 4 bytes",
                              where)
    return number


def _parse_hex_field(value: bytes, size: int, default: bytes, where: Location, code: str) -> bytes:
    digits = value.strip()
    try:  # fromhex passes over spaces between bytes: then it gives fewer bytes than half the digits
        raw = bytes.fromhex(digits.decode("ascii"))
    except ValueError:  # odd, not hex or not ASCII (UnicodeDecodeError)
        raw = b""
    if 2 * len(raw) != len(digits):
        raise DumpSyntaxError(f"attribute {code} has value {digits[:60]!r}, not an even run of hex digits",
                              where)
    if len(raw) > size:
        raise DumpSyntaxError(f"attribute {code} holds {len(raw)} bytes, the field has {size}", where)
    return raw + default[len(raw):]


class _AttributeCode(NamedTuple):
    """How the value of one attribute code is read (from its ``MQMD_FIELDS`` row, worked out once:
    each message has a few lines no other message has, its MsgId and put time, parsed each time)."""
    code: str
    name: str  # the MQMD field's
    how: str  # "int", "hex" (digits) or "characters" (raw, blank-padded; kept as bytes or as text)
    size: int  # bytes
    default: Any
    as_text: bool  # characters decoded as latin-1 text


def _attribute_code(code: str, field: Any) -> _AttributeCode:
    how = field.kind if field.kind == "int" or (field.kind == "hex" and code not in ("AID", "AOD")) else "characters"
    return _AttributeCode(code, field.name, how, 4 if field.kind == "int" else int(field.code[:-1]), field.default,
                          field.kind != "hex")


_ATTRIBUTE_CODES = {code.encode("latin-1"): _attribute_code(code, field) for code, field in FIELDS_BY_DUMP_CODE.items()}
# The same codes as the C reader of plain records' attribute lines (``_native.attribute_fields``)
# takes them: (code, field name, kind, size, default), the kind numbered as in _native.c: int 0,
# hex 1, characters as text 2, characters kept as bytes 3.
_ATTRIBUTE_TABLE = tuple((key, a.name, 0 if a.how == "int" else 1 if a.how == "hex" else 2 if a.as_text else 3,
                          a.size, a.default) for key, a in _ATTRIBUTE_CODES.items())


def _parse_attribute(line: bytes, where: Location) -> Optional[Tuple[str, object]]:
    """(field name, value) of an ``A`` line, or None for a value-less line (the field keeps its default)."""
    if len(line) < 5:
        raise DumpSyntaxError(f"attribute line {line!r} is too short to name an attribute", where)
    attribute = _ATTRIBUTE_CODES.get(line[2:5])
    if attribute is None:
        raise DumpSyntaxError(f"unknown attribute code {line[2:5].decode('latin-1')!r}", where)
    if len(line) < 7:
        return None
    value = line[6:]
    code, size = attribute.code, attribute.size
    if attribute.how == "int":
        parsed: object = _parse_int(value, where, code)
    elif attribute.how == "hex":
        parsed = _parse_hex_field(value, size, attribute.default, where, code)
    else:
        raw = value[:size]
        if len(value) > size and value[size:].strip():
            raise DumpSyntaxError(f"attribute {code} is {len(value)} characters, the field has {size}", where)
        raw = raw.ljust(size, b" ")
        parsed = raw.decode("latin-1") if attribute.as_text else raw
    return attribute.name, parsed


# Most attribute lines repeat from message to message (MST, ENC, CCS, FMT...): parse each once.
# The cache is emptied when full; the lines that repeat are back in it after one message. Kept
# small because the lines that do not repeat (each message's MsgId, put time) outlive the
# scan's temporaries and pin the pages they were made among: a process that planned a 5M-row
# dump, then a 20M-row one, held 157 MB after with 50,000 lines, 126 MB with 1,024.
_ATTRIBUTE_CACHE: dict = {}
_ATTRIBUTE_CACHE_LIMIT = 1024
_NOWHERE = Location()  # what a line parsed before any error is known stands at


def _attribute(line: bytes, place: Callable[[], Location]) -> Tuple:
    """``_parse_attribute`` of a line, () for a value-less line, kept in the cache; ``place``
    makes the line's Location, only for an error."""
    try:
        parsed = _parse_attribute(line, _NOWHERE)
    except DumpSyntaxError:  # parsed again where it is
        parsed = _parse_attribute(line, place())
    if len(_ATTRIBUTE_CACHE) >= _ATTRIBUTE_CACHE_LIMIT:
        _ATTRIBUTE_CACHE.clear()
    _ATTRIBUTE_CACHE[line] = found = parsed or ()
    return found


def _attribute_block(text: bytes, source: str, index: int, offset: int) -> Dict[str, object]:
    """The fields the lines of ``text``, a block of attribute lines starting at file offset
    ``offset``, give (field name -> value; a value-less line gives none, a later line of a field
    overrides an earlier one). The lines are looked up in the cache at once (a dump's messages
    repeat most of them) and only those it lacks (a message's MsgId, its put time) are parsed,
    their place worked out only for an error: line by line, with the places, the 28 lines of
    each message took 20 us, a fifth of indexing a dump."""
    lines = text.split(b"\n")
    if b"\r" in text:  # CRLF line ends: each line is looked up and parsed without its CR
        lines = [line[:-1] if line.endswith(b"\r") else line for line in lines]
    found = list(map(_ATTRIBUTE_CACHE.get, lines))  # (name, value), () for a value-less line, None if not cached
    if None in found:
        i = found.index(None)
        while True:
            found[i] = _attribute(lines[i], lambda at=i: Location(source, index, offset + _line_start(text, at)))
            if None not in found:
                break
            i = found.index(None, i + 1)
    try:
        return dict(found)
    except ValueError:  # a value-less line's (): the field keeps what it had
        return dict(filter(None, found))


def _line_start(text: bytes, line: int) -> int:
    """Where line ``line`` (counted from 0) of ``text`` starts in it."""
    start = 0
    for _ in range(line):
        start = text.index(b"\n", start) + 1
    return start


def _parse_string_line(line: bytes, where: Location) -> bytes:
    body = line[1:].lstrip(b" ")
    if not body:
        return b""
    if body[:1] != b'"':
        # IBM's reader drops the last character of an unquoted S line (a bug); we keep it.
        return body.rstrip(b" ")
    out = bytearray()
    i, n = 1, len(body)
    while i < n:
        c = body[i]
        if c == STRING_ESCAPE:
            if i + 1 >= n or body[i + 1] not in (ord('"'), STRING_ESCAPE):
                raise DumpSyntaxError("bad escape sequence in S line: only ~\" and ~~ are allowed", where)
            out.append(body[i + 1])
            i += 2
        elif c == ord('"'):
            return bytes(out)
        else:
            out.append(c)
            i += 1
    raise DumpSyntaxError('S line has no closing " character', where)


def _hex_of_x_line(line: bytes) -> bytes:
    body = line[1:].lstrip(b" ")
    end = body.find(b" ")
    hex_part = body if end < 0 else body[:end]
    if hex_part.endswith(b"<"):  # an ASCII column glued to the hex
        hex_part = hex_part[:-1]
    return hex_part


def _finish(record: _MessageRecord, source: str, index: int, end: int) -> PhysicalMessage:
    payload = b"".join(record.data_parts)
    mqmd = mqmd_of_fields(record.attributes) if record.has_descriptor else None
    return mq_message(mqmd, payload, source, index, record.start, end)


def _decode_hex(hex_lines: List[Tuple[int, bytes]], source: str, index: int, start: int) -> bytes:
    # The line-by-line path: every line must hold whole bytes of hex on its own.
    for offset, h in hex_lines:
        if len(h) % 2 or _HEX_RUN.fullmatch(h) is None:
            raise DumpSyntaxError(f"X line holds {h[:60]!r}, not an even run of hex digits",
                                  Location(source, index, offset))
    return bytes.fromhex(b"".join(h for _, h in hex_lines).decode("ascii"))


# What one call of the C walker over plain records (``_native.plain_records``) returns at most.
PLAIN_RECORDS_AT_A_TIME = 1024
# and the payload bytes after which it stops: the part of its output buffer it writes again and
# again stays small (each chunk's buffer is new: 8 MiB written end to end cost 0.4 s CPU of page
# faults for a 1.4 GB dump).
PLAIN_BYTES_AT_A_TIME = 256 << 10


def _plain_records_kernel() -> Optional[Callable[..., Tuple[int, int]]]:
    """The C walker over a run of plain records (``_native.plain_records``: each a block of ``A``
    lines without CRs, then a run of X lines as ``x_run`` takes it, then filler lines up to the next
    ``A`` line), which decodes their hex without the GIL, so that the parse threads of a large dump
    run side by side; None without the C kernels (the line parser then takes every record)."""
    native = native_module()
    return getattr(native, "plain_records", None) if native is not None else None


def _plain_attribute_fields(data: bytes, records: np.ndarray, wanted: Optional[Tuple[int, ...]] = None
                            ) -> List[Any]:
    """The fields of each plain record's attribute block (``records``: rows from ``plain_records``)
    as ``_attribute_block`` gives them, read in C (``_native.attribute_fields``) from the codes of
    ``_ATTRIBUTE_TABLE``; None for a block with a line outside the well-formed case (a number
    with blanks or a sign +, hex with blanks, an unknown code...), which the line parser reads.
    ``wanted`` (rows of the table): the values of those fields alone, a tuple a block, each
    field's default where the block gives it none."""
    native = native_module()
    reader = getattr(native, "attribute_fields", None) if native is not None else None
    if reader is None:
        return [None] * len(records)
    if wanted is None:
        return reader(data, records, len(records), _ATTRIBUTE_TABLE)
    return reader(data, records, len(records), _ATTRIBUTE_TABLE, wanted)


# What a scan for a message index reads of a plain record in C (``_plain_attribute_fields``): the
# fields of its descriptor, then those saying whether it is a plain message (``_is_plain``).
_ENTRY_FIELDS = DESCRIPTOR_FIELDS + ("msg_flags", "format")
_FLAGS_AT, _FORMAT_AT = _ENTRY_FIELDS.index("msg_flags"), _ENTRY_FIELDS.index("format")


def _table_row(name: str) -> int:
    """The row of _ATTRIBUTE_TABLE of the one attribute code of field ``name``."""
    (row,) = [i for i, (_, field, *_) in enumerate(_ATTRIBUTE_TABLE) if field == name]
    return row


_ENTRY_ROWS = tuple(map(_table_row, _ENTRY_FIELDS))


def _plain_messages(data: bytes, decoded: np.ndarray, records: np.ndarray, source: str, base_offset: int,
                    index: int, plain_entry: Optional[PlainEntry] = None) -> Iterator[PhysicalMessage]:
    """The messages of the plain records ``plain_records`` found: rows (start, end of the attribute
    block, end of the X run, end of the payload in ``decoded``), offsets in ``data``; the same
    messages, attribute lines parsed and errors raised the same, as the line parser makes. With
    ``plain_entry``, a message that is no segment and has no MQ headers to remove (nearly every
    one) is given as the entry it makes of its descriptor, payload and origin instead, only the
    fields of ``_ENTRY_FIELDS`` read of its attribute lines (no dict of 30 fields a message)."""
    payload_start = 0
    parsed = _plain_attribute_fields(data, records, None if plain_entry is None else _ENTRY_ROWS)
    payloads = memoryview(decoded)
    for (start, attributes_end, run_end, payload_end), fields in zip(records.tolist(), parsed):
        offset, end = base_offset + start, base_offset + run_end
        descriptor: Optional[Descriptor] = None  # set: the message is given as its index entry
        if plain_entry is not None and fields is not None and _is_plain(fields[_FLAGS_AT], fields[_FORMAT_AT]):
            descriptor = made_whole(Descriptor, dict(zip(DESCRIPTOR_FIELDS, fields)))
        else:
            # The line parser reads what C declined (and raises its error), and the whole block of a
            # message that is no plain one: C gave the entry's fields alone, too few for an MQMD.
            if fields is None or plain_entry is not None:
                fields = _attribute_block(data[start:attributes_end], source, index, offset)
            if plain_entry is not None and _is_plain(fields.get("msg_flags", _MQMD_DEFAULTS["msg_flags"]),
                                                     fields.get("format", _MQMD_DEFAULTS["format"])):
                descriptor = _descriptor_of(fields)
        if plain_entry is not None and descriptor is not None:
            yield plain_entry(descriptor, payloads[payload_start:payload_end], Origin(source, index, offset, end))
        else:
            payload = decoded[payload_start:payload_end].tobytes()
            yield mq_message(mqmd_of_fields(fields), payload, source, index, offset, end)
        payload_start = payload_end
        index += 1


# plain_entry(descriptor, payload, origin): what a scan keeps of a plain message (``IndexKeep.plain``).
PlainEntry = Callable[[Descriptor, memoryview, Origin], PhysicalMessage]
_MQMD_DEFAULTS = {f.name: f.default for f in dataclasses.fields(MQMD)}


@functools.lru_cache(maxsize=64)
def _is_envelope_format(format_name: str) -> bool:
    """``is_envelope_format``, asked once per format: a dump's messages share a few."""
    return is_envelope_format(format_name)


def _is_plain(msg_flags: int, format_name: str) -> bool:
    """Whether the message whose MQMD has these MsgFlags and Format is no segment and starts with no MQ
    header (``segments.is_segment``, ``envelope.has_envelope``): its MQMD describes its data as captured."""
    return not (msg_flags & SEGMENT_FLAGS) and not _is_envelope_format(format_name)


def _descriptor_of(fields: Dict[str, object]) -> Descriptor:
    """``neutral_descriptor(mqmd_of_fields(fields))`` without the MQMD."""
    return made_whole(Descriptor, {name: fields.get(name, _MQMD_DEFAULTS[name]) for name in DESCRIPTOR_FIELDS})


# Empty, blank and comment lines, all at once (a message's "* Index n" and the empty line before
# it). A run of line ends is a repeat of one byte, which sre runs at memchr-like speed: a GiB of
# them is not a GiB of lines.
_FILLER_LINES = re.compile(rb"\n*(?:(?:\*[^\n]*|[ \t\r\x0b\x0c]+)\n\n*)*")


def parse_dump(data: bytes, source: str, base_offset: int = 0, first_index: int = 0, stop: Optional[int] = None,
               walk: bool = True, plain_entry: Optional[PlainEntry] = None) -> Iterator[PhysicalMessage]:
    """Physical messages of a dmpmqmsg text dump held in ``data`` (up to ``stop``, a line start).

    ``base_offset``/``first_index`` place a slice of a larger file: offsets and indexes
    in the result and in errors are then those of the whole file. ``walk`` False: the line parser
    takes every record, not only those the C walker leaves (``_plain_records_kernel``): the
    reference the walker is compared with (tests, the dmpmqmsg fuzz target). ``plain_entry``: the
    plain messages of the records the walker takes are given as the entries it makes of them
    (``_plain_messages``), the others as they are.
    """
    record: Optional[_MessageRecord] = None
    index = first_index
    last_line_start = base_offset

    def flush_hex() -> None:
        if record is not None and record.hex_lines:
            record.data_parts.append(_decode_hex(record.hex_lines, source, index, record.start))
            record.hex_lines = []

    def finish(end: int) -> PhysicalMessage:
        flush_hex()
        if not record.has_data:
            raise TruncatedError("message has attribute lines but no data lines",
                                 Location(source, index, record.start))
        return _finish(record, source, index, end)

    pos, size = 0, len(data) if stop is None else max(0, min(stop, len(data)))
    view = np.frombuffer(data, dtype=np.uint8)
    x_run_bytes = np.empty(size // 2, dtype=np.uint8)  # any X run fits: two digits a byte
    plain_records = _plain_records_kernel() if walk else None
    records = np.empty((PLAIN_RECORDS_AT_A_TIME, 4), dtype=np.int64) if plain_records is not None else None
    while pos < size:
        # The lines that need no more than their first byte are taken without cutting them out:
        # X runs, empty lines and comments (three of each message's four lines in a dump).
        tag = data[pos:pos + 1]
        if tag == b"X" and record is not None:
            # A whole run of X lines at once: this is where nearly all of a dump's bytes are.
            fast = _plain_x_run(data, view, pos, size, x_run_bytes)
            if fast is None:
                found = _END_OF_X_RUN.search(data, pos, size)
                run_end = size if found is None else found.start()
                record.hex_lines.extend(_x_lines(data[pos:run_end], base_offset + pos))
            else:
                flush_hex()
                run_end, decoded = fast
                record.data_parts.append(decoded)
            last_line_start = base_offset + run_end
            pos = run_end + 1
            continue
        if tag == b"\n" or tag == b"*":
            skipped = _FILLER_LINES.match(data, pos, size).end()
            if skipped > pos:  # not a last comment cut off by ``size``: the line parser takes that
                pos = skipped
                continue
        line, end = text_line(data, pos, size)
        offset = base_offset + pos
        tag = line[:1]
        pos = end + 1
        if tag == b"*" or not line.strip():
            pos = _FILLER_LINES.match(data, pos, size).end()
            continue
        if tag in (b"A", b"N"):
            if record is not None and (record.has_data or record.hex_lines):
                yield finish(last_line_start)
                index += 1
                record = None
            if record is None and plain_records is not None and tag == b"A":
                # This record and the plain ones after it at once, their hex decoded without the GIL.
                count, taken_to = plain_records(view, offset - base_offset, size, x_run_bytes, PLAIN_BYTES_AT_A_TIME,
                                                records)
                if count:
                    yield from _plain_messages(data, x_run_bytes, records[:count], source, base_offset, index,
                                               plain_entry)
                    index += count
                    pos = taken_to
                    continue
            if record is None:
                record = _MessageRecord(offset, has_descriptor=(tag == b"A"))
            elif tag == b"N":
                raise DumpSyntaxError("N line inside a message's attribute lines",
                                      Location(source, index, offset))
            if tag == b"A":
                # The whole block of attribute lines at once, each line looked up in the cache.
                block = _ATTRIBUTE_BLOCK.match(data, pos, size)
                block_end = end if block is None else block.end() - 1  # the last line's LF
                if block is not None:
                    pos = block.end()
                text = data[offset - base_offset:block_end]
                fields = _attribute_block(text, source, index, offset)
                if record.attributes:
                    record.attributes.update(fields)
                else:
                    record.attributes = fields
                last_line_start = base_offset + block_end - text.endswith(b"\r")
                record.has_descriptor = True
                continue
            last_line_start = offset + len(line)
            continue
        if tag in (b"X", b"S", b"T"):
            if record is None:
                raise DumpSyntaxError(f"{tag.decode()} data line before any A or N line",
                                      Location(source, index, offset))
            flush_hex()
            if tag == b"S":
                record.data_parts.append(_parse_string_line(line, Location(source, index, offset)))
            else:
                record.data_parts.append(line[2:] + b"\n")
            last_line_start = offset + len(line)
            continue
        if BANNER.match(line):  # saved from the terminal, or several such dumps concatenated
            continue
        raise DumpSyntaxError(f"line starts with {line[:10]!r}: not a comment, attribute or data line",
                              Location(source, index, offset))
    if record is not None:
        yield finish(last_line_start)


_RECORD_START = re.compile(rb"^(?:A |N[ \t\r]*$)", re.M)


def _after_attribute_line(data: bytes, line_start: int) -> bool:
    """Whether the significant line before the one at ``line_start`` (comments and blank lines
    passed over) is an attribute line: then that line is inside a message's attribute block."""
    end = line_start - 1
    while end > 0:
        start = data.rfind(b"\n", 0, end) + 1
        line = data[start:end].strip()
        if line and not line.startswith(b"*"):
            return line.startswith(b"A ")
        end = start - 1
    return False


# A line end followed by a record's first line: the literal line end first lets the regex engine
# skip to each one (``_RECORD_START``, anchored at every line start, tries each byte: 10 s a GiB).
_BEFORE_RECORD_START = re.compile(rb"\n(?=A |N[ \t\r]*$)", re.M)


def next_message_start(data: bytes, offset: int) -> Optional[int]:
    """The start of the first message record at or after ``offset``: an A line (or N line) that
    opens an attribute block; None when there is none."""
    if (offset == 0 or data[offset - 1:offset] == b"\n") and _RECORD_START.match(data, offset) \
            and not _after_attribute_line(data, offset):
        return offset
    for found in _BEFORE_RECORD_START.finditer(data, offset):
        if not _after_attribute_line(data, found.end()):
            return found.end()
    return None


def salvage(data: bytes, source: str, index: int, start: int, end: int) -> Tuple[Optional[MQMD], int]:
    """(MQMD, offset of its first A line) of a damaged stretch whose attribute lines still read,
    or (None, start): its data is lost, but its descriptor says which attachment lost it."""
    found = _RECORD_START.search(data, start, end)
    if found is None or data[found.start():found.start() + 1] != b"A":
        return None, start
    block = _ATTRIBUTE_BLOCK.match(data, found.start(), end)
    attributes = {}
    try:
        offset = found.start()
        for raw in (block.group(0).split(b"\n")[:-1] if block else ()):
            parsed = _parse_attribute(raw.rstrip(b"\r"), Location(source, index, offset))
            if parsed is not None:
                attributes[parsed[0]] = parsed[1]
            offset += len(raw) + 1
        return MQMD(**attributes), found.start()
    except (DumpSyntaxError, TypeError, ValueError):
        return None, start


READ_CHUNK_BYTES = 16 << 20  # small enough that a 280 MB dump keeps 2 threads busy
_DATA_TAGS = (b"X", b"S", b"T")


def start_of_last_message(data: bytes) -> int:
    """Offset of the first line of the last message that starts in ``data`` after a data line,
    or 0: everything before it is whole messages, so the text can be parsed in pieces."""
    last_a = data.rfind(b"\nA ")  # N lines (rare) are looked for only after it: each rfind scans
    at = max(last_a, data.rfind(b"\nN\n", max(last_a, 0)), data.rfind(b"\nN\r", max(last_a, 0)))
    while at >= 0:
        line_start = at + 1  # an A or N line; look at the significant line before it
        prev_end = at
        while prev_end > 0:
            prev_start = data.rfind(b"\n", 0, prev_end) + 1
            line = data[prev_start:prev_end].rstrip(b"\r")
            if line.strip() and not line.startswith(b"*"):
                break
            prev_end = prev_start - 1
        else:
            return 0
        if line[:1] in _DATA_TAGS:
            return line_start
        at = prev_start - 1 if line[:1] in (b"A", b"N") else -1
    return 0


def read_dump(path: str, chunk_bytes: int = READ_CHUNK_BYTES, keep: Optional[Keep] = None) -> Iterator[PhysicalMessage]:
    """Physical messages of the dump file at ``path`` (plain or compressed), each through ``keep``,
    read in chunks parsed on several threads (``parse_in_chunks``), so that memory stays bounded by
    a few chunks (plus the largest message), whatever the file size. The unfinished last message
    of a chunk is read again with the next one."""
    return parse_in_chunks(path, chunk_bytes, start_of_last_message, parse_dump, keep)


# ---------------------------------------------------------------------------------------------
# Writing


class _AttributeFormat(NamedTuple):
    """How the ``A`` lines of a descriptor of one MQMD version are written."""
    template: bytes  # every line, numbers as %d, hex and text as %s
    values: Callable[[MQMD], Tuple[Any, ...]]  # the fields' values, in the template's order
    hexes: Tuple[int, ...]  # where the values written in hex are
    texts: Tuple[int, ...]  # where the text values are
    # The same lines cut around those of the fields each message of a write has its own of
    # (``_VARYING_FIELDS``): the template's pieces before, between and after them, and the getters
    # of the fields that are not they and of the fields that are.
    pieces: Tuple[bytes, ...]
    cuts: Tuple[int, ...]  # where the varying values are
    repeated: Callable[[MQMD], Tuple[Any, ...]]
    varying: Callable[[MQMD], Tuple[Any, ...]]


# The fields a write gives each message its own value of (the MsgId, the CorrelId of its sequence
# number), written in hex: the rest of a descriptor repeats from message to message.
_VARYING_FIELDS = ("msg_id", "correl_id")


@functools.lru_cache(maxsize=2)
def _attribute_format(version_2: bool) -> _AttributeFormat:
    """The ``A`` lines' format for descriptors of version 2 or not. Made once: a commit writes
    tens of thousands of descriptors, and looking up each field's kind for each one cost about
    30 µs a message."""
    fields = [f for f in MQMD_FIELDS if f.dump_code is not None and (version_2 or f.version == 1)
              # dmpmqmsg writes VER only for version-2 descriptors
              and (version_2 or f.dump_code != "VER")]
    lines = [b"A %s %%%s" % (f.dump_code.encode("ascii"), b"d" if f.kind == "int" else b"s") for f in fields]
    cuts = [i for i, f in enumerate(fields) if f.name in _VARYING_FIELDS]
    pieces = []
    for start, end in zip([-1] + cuts, cuts + [len(fields)]):  # the lines between two varying values
        between = b"\n".join(lines[start + 1:end])
        before_value = b"" if end == len(fields) else (b"\n" if between else b"") + lines[end][:-len(b"%s")]
        pieces.append((b"\n" if start >= 0 else b"") + between + before_value)
    return _AttributeFormat(b"\n".join(lines), operator.attrgetter(*(f.name for f in fields)),
                            tuple(i for i, f in enumerate(fields) if f.kind == "hex"),
                            tuple(i for i, f in enumerate(fields) if f.kind == "text"), tuple(pieces), tuple(cuts),
                            operator.attrgetter(*(f.name for f in fields if f.name not in _VARYING_FIELDS)),
                            operator.attrgetter(*(fields[i].name for i in cuts)))


def _attribute_lines(descriptor: MQMD) -> bytes:
    """The descriptor's ``A`` lines, without the last newline."""
    form = _attribute_format(descriptor.version >= 2)
    return form.template % tuple(_written_values(form, descriptor))


def _written_values(form: _AttributeFormat, descriptor: MQMD) -> List[Any]:
    """The descriptor's values as the template takes them: numbers as they are, hex and text as bytes."""
    values = list(form.values(descriptor))
    for i in form.hexes:
        values[i] = bytes(values[i]).hex().upper().encode("ascii")
    for i in form.texts:
        values[i] = values[i].encode("latin-1").split(b"\0", 1)[0]
    return values


# The A lines of descriptors alike but for their varying fields, as ``_AttributeFormat.pieces``
# filled in: a write's messages have a few such kinds (header, subordinate). Emptied when full.
_REPEATED_LINES: Dict[Tuple[bool, Tuple[Any, ...]], Tuple[bytes, ...]] = {}
_REPEATED_LINES_LIMIT = 256


def _write_attribute_lines(descriptor: MQMD) -> bytes:
    """``_attribute_lines`` of the descriptor, for writing many: the lines its repeated fields make
    are looked up (made once for a write's run of messages), and only the hex of its varying
    fields made (formatted whole, the 28 lines cost about 26 us a message in a commit)."""
    version_2 = descriptor.version >= 2
    form = _attribute_format(version_2)
    key = (version_2, form.repeated(descriptor))
    try:
        pieces = _REPEATED_LINES.get(key)
    except TypeError:  # a value that cannot be a key (a bytearray id): the lines are made whole
        return _attribute_lines(descriptor)
    if pieces is None:
        values = _written_values(form, descriptor)
        pieces = tuple(piece % tuple(values[start + 1:end]) for piece, start, end
                       in zip(form.pieces, (-1,) + form.cuts, form.cuts + (len(values),)))
        if len(_REPEATED_LINES) >= _REPEATED_LINES_LIMIT:
            _REPEATED_LINES.clear()
        _REPEATED_LINES[key] = pieces
    parts = [pieces[0]]
    for value, piece in zip(form.varying(descriptor), pieces[1:]):
        parts += (binascii.hexlify(bytes(value)).upper(), piece)
    return b"".join(parts)


def dump_header(queue_manager: str = "", queue: str = "", created: Optional[str] = None,
                comments: Sequence[str] = ()) -> bytes:
    """The file header; IBM's loader requires the first line, extra ``*`` lines are comments."""
    created = created or time.strftime("%a %b %d %H:%M:%S %Y")
    lines = [f"* QLOAD Version:8.0 Created:{created}"]
    if queue_manager:
        lines.append(f"* Qmgr  = {queue_manager}")
    if queue:
        lines.append(f"* Queue = {queue}")
    lines.extend(f"* {c}" for c in comments)
    return ("\n".join(lines) + "\n\n").encode("latin-1")


def format_message(descriptor: Optional[MQMD], payload: bytes, index: Optional[int] = None,
                   data_width: int = DEFAULT_DATA_WIDTH) -> bytes:
    """One message record as dmpmqmsg writes it (with ``-di`` when ``index`` is given). The plain
    formatter: ``write_dump`` formats a group of records at once, and the tests compare it with this."""
    attributes = b"N" if descriptor is None else _attribute_lines(descriptor)
    index_line = b"" if index is None else b"* Index %d\n" % index
    return b"%s%s\n%s\n" % (index_line, attributes, x_lines(payload, data_width))


# Message text formatted at a time on a work thread (the payload bytes of a group of messages):
# hex digits by the compiled kernel, which releases the GIL, while this thread writes.
FORMAT_GROUP_BYTES = 512 << 10


def write_dump(out: BinaryIO, messages: Iterable[Tuple[Optional[MQMD], bytes]], *,
               queue_manager: str = "", queue: str = "", created: Optional[str] = None,
               data_width: int = DEFAULT_DATA_WIDTH, with_index: bool = True,
               comments: Sequence[str] = ()) -> int:
    """Write a complete dump; returns the number of messages written. The messages are drawn here,
    in order, formatted in groups on the work threads (``threads.ordered_map``) and written to
    ``out`` on a thread of its own (``threads.written_behind``)."""
    from ...threads import SpareBuffers, ordered_map, written_behind  # here: the reading side does not use them
    out.write(dump_header(queue_manager, queue, created, comments))
    # A group's text buffer serves a later group once written, when ``out`` is a file of the standard
    # library (its write has copied the bytes when it returns; another stream may keep them to send later).
    spare = SpareBuffers() if isinstance(out, (io.BufferedWriter, io.FileIO, io.BytesIO)) else None

    def text(group: List[Tuple[int, Optional[MQMD], bytes]]) -> Tuple[memoryview, int]:
        """The group's text (each message's record as ``format_message`` writes it), and the number
        of its last message."""
        heads = [b"%s%s\n" % (b"* Index %d\n" % index if with_index else b"",
                               b"N" if descriptor is None else _write_attribute_lines(descriptor))
                 for index, descriptor, _ in group]
        return x_records(heads, [payload for _, _, payload in group], data_width, spare).data, group[-1][0]

    def groups() -> Iterator[List[Tuple[int, Optional[MQMD], bytes]]]:
        group: List[Tuple[int, Optional[MQMD], bytes]] = []
        size = 0
        for index, (descriptor, payload) in enumerate(messages, start=1):
            group.append((index, descriptor, payload))
            size += len(payload)
            if size >= FORMAT_GROUP_BYTES:
                yield group
                group, size = [], 0
        if group:
            yield group

    count = 0

    def texts() -> Iterator[bytes]:
        nonlocal count
        for formatted, last in ordered_map(text, groups()):
            yield formatted
            count = last

    written_behind(out, texts(), written=None if spare is None else lambda text: spare.give(text.obj))
    return count
