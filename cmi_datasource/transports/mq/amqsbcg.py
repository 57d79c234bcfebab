"""Output of IBM's browse sample ``amqsbcg`` / ``amqsbcgc``: read and write (docs/spec/mq.md#amqsbcg-output).

The layout, as IBM MQ 7 to 9 print it (spacing, blank lines and the summary vary)::

    AMQSBCG0 - starts here
    **********************
     MQOPEN - 'SAS.CMI.QUEUE'
     MQGET of message number 1, CompCode:0 Reason:0
    ****Message descriptor****
      StrucId  : 'MD  '  Version : 2
      Report   : 0  MsgType : 8
      ...
      AccountingToken :
       X'0000000000000000000000000000000000000000000000000000000000000000'
      ...
    ****   Message      ****
     length - 174 of 174 bytes
    00000000:  5246 4820 0000 0002 0000 009C 0000 0111           'RFH ............'
     No more messages
     MQCLOSE

Descriptor lines hold one or two ``Name : value`` pairs, named as in the MQMD (the
``browse_name`` column of ``mqmd.MQMD_FIELDS``): numbers bare or quoted, characters quoted
with their trailing blanks, bytes as ``X'...'`` (AccountingToken's on the next line). Data rows
give the offset in the message, up to eight groups of four hex digits and the characters.
``length - N of M bytes`` with N < M means the browse buffer cut the message: it is read as the
N bytes held, with that problem attached, so its attachment is incomplete and says why.

A message whose lines cannot all be read keeps what was read: the descriptor fields of its
readable lines (an unreadable line's fields stay at their MQMD defaults) and the bytes of its
data rows up to the first row that does not continue it; its ``damage`` (and ``problem``) is
the first line that could not be read, or rows holding fewer or more bytes than the length line
shows (a cut file). Reading goes on at the next message.

Several runs of amqsbcg concatenated in one file read as one capture. The rows of a message
are decoded by a compiled kernel, at planning (``_rows``) and in partitions (``decode_spans``).
"""
from __future__ import annotations

import dataclasses
import re
from typing import BinaryIO, Iterable, Iterator, List, Optional, Tuple

import numpy as np

from ...compiled import kernel
from ..base import Keep, parse_in_chunks
from ...errors import CmiFormatError, KeptError, Location, TruncatedError
from ...messages import PhysicalMessage
from .errors import DumpSyntaxError
from .hex_lines import all_head, head_apart, line_end, text_line
from .message import mq_message
from .mqmd import FIELDS_BY_BROWSE_NAME, MQLONG_MAX, MQLONG_MIN, MQMD, MQMD_FIELDS, mqmd_of_fields

STARTS_HERE = b"AMQSBCG0 - starts here"
MESSAGE_START = re.compile(rb"^\s*MQGET of message number (\d+)")
# What ``bytes.strip`` does not strip: a line holding one is not blank.
_NOT_BLANK = re.compile(rb"[^ \t\r\n\x0b\x0c]")
NEXT_MESSAGE = re.compile(rb"^[ \t]*MQGET of message number \d+", re.M)  # where reading resumes past damage
_DESCRIPTOR = re.compile(rb"^\*+\s*Message descriptor\s*\*+\s*$")
_DATA = re.compile(rb"^\*+\s*Message\s*\*+\s*$")
_SUMMARY = re.compile(rb"^\*+\s*Summary\s*\*+\s*$")
_LENGTH = re.compile(rb"^\s*length\s*-\s*(\d+)(?:\s+of\s+(\d+))?\s+bytes?\s*$")
_ROW = re.compile(rb"^([0-9A-Fa-f]{8}):")
_CONTEXT = re.compile(rb"^\s*\*\*\s")  # "** Identity Context", "** Origin Context"
_BETWEEN = re.compile(rb"^(?:AMQSBCG0\b|\*+\s*$|\s*MQOPEN\b|\s*No more messages|\s*MQCLOSE|\s*MQDISC|"
                      rb"\s*MQGET ended|\s*Sample AMQSBCG0)")
_PAIR = re.compile(rb"([A-Za-z]+)\s*:\s*(X'[0-9A-Fa-f]*'|'[^']*'|-?\d+)?")
_LONE_VALUE = re.compile(rb"^\s*(X'[0-9A-Fa-f]*'|'[^']*')\s*$")

_NL, _CR, _SPACE, _QUOTE, _COLON = (ord(c) for c in "\n\r ':")

# amqsbcg's rows hold 16 bytes as eight groups of four digits, each row with its offset and
# characters: decoded a row at a time, a lookup per byte in a table of every two-character pair
# costs fewer instructions than the arithmetic of ``hex_lines.digit_value`` on each digit
# (measured: the partitions' kernel 0.145 s against 0.203 s for 300,000 observations), and the
# rows are too short for that arithmetic to vectorise. dmpmqmsg's X lines are decoded in
# blocks (``hex_lines``) instead.
_BAD_PAIR = 0x100


def _pair_values() -> np.ndarray:
    """Byte value of each two-character hex pair, indexed by first | second << 8; 0x100 if not hex."""
    digit = np.full(256, _BAD_PAIR, dtype=np.uint16)
    for value, char in enumerate(b"0123456789ABCDEF"):
        digit[char] = value
    for value, char in enumerate(b"abcdef", start=10):
        digit[char] = value
    first, second = digit[np.arange(65536) & 0xFF], digit[np.arange(65536) >> 8]
    return np.where((first | second) & _BAD_PAIR, _BAD_PAIR, (first << 4) | second).astype(np.uint16)


PAIR_VALUES = _pair_values()


@kernel
def decode_hex(text, start, stop, out, at, pairs):
    """Decode text[start:stop) (an even count of characters) to out[at:]; returns 0x100 when a
    character is not hex. Unsigned indexes: numba then skips its negative-index handling,
    which otherwise costs more than the decoding."""
    bad = np.uint16(0)
    first = np.uint64(start)
    to = np.uint64(at)
    for i in range(np.uint64((stop - start) >> 1)):
        j = first + np.uint64(2) * i
        v = pairs[np.uint64(text[j]) | (np.uint64(text[j + np.uint64(1)]) << np.uint64(8))]
        bad |= v
        out[to + i] = np.uint8(v & 0xFF)
    return bad & _BAD_PAIR


@kernel
def _hex_digit(c):
    """Value of a hex digit character, or -1."""
    if 48 <= c <= 57:
        return c - 48
    if 65 <= c <= 70:
        return c - 55
    if 97 <= c <= 102:
        return c - 87
    return -1


@kernel
def _is_row(text, p, e):
    """Whether text[p:] starts a data row: eight hex digits and a colon."""
    if p + 9 > e or text[p + 8] != _COLON:
        return False
    for i in range(8):
        if _hex_digit(text[p + i]) < 0:
            return False
    return True


@kernel
def _full_row(text, q, e, out, w, pairs):
    """The common row, decoded without looking for its groups: 16 bytes as eight groups of four
    digits from text[q], each followed by a space, then (after padding) a quoted column of 16
    characters and the line end. Returns the index past the line end, or -1 for any other row
    (the caller then reads it group by group; what it wrote is overwritten)."""
    if q + 40 > e or w + 16 > out.shape[0]:
        return -1
    bad = np.uint16(0)
    for g in range(8):
        t = np.uint64(q + 5 * g)
        high = pairs[np.uint64(text[t]) | (np.uint64(text[t + np.uint64(1)]) << np.uint64(8))]
        low = pairs[np.uint64(text[t + np.uint64(2)]) | (np.uint64(text[t + np.uint64(3)]) << np.uint64(8))]
        bad |= high | low
        out[w + 2 * g] = np.uint8(high & 0xFF)
        out[w + 2 * g + 1] = np.uint8(low & 0xFF)
        if text[t + np.uint64(4)] != _SPACE:
            return -1
    if bad & 0x100:
        return -1
    c = q + 40
    while c < e and text[c] == _SPACE:
        c += 1
    # The quoted column holds 16 characters with no line end among them (amqsbcg prints a dot).
    if c + 18 <= e and text[c] == _QUOTE and text[c + 17] == _QUOTE:
        if c + 18 < e and text[c + 18] == _NL:
            return c + 19
        if c + 19 < e and text[c + 18] == _CR and text[c + 19] == _NL:
            return c + 20
    return line_end(text, c, e) + 1


@kernel
def _decode_row(text, p, e, out, w, offset, pairs):
    """Decode the data row at text[p] (``_is_row``) into out[w:]; returns (index past the row's
    line end, bytes written), or (-1, 0) when its offset is not ``offset`` or its hex groups are
    not of two or four digits. Bounds: the row's bytes lie in text[p:e] and take at most half
    as many bytes of ``out`` past w, which the caller provides."""
    value = 0
    for i in range(8):
        value = value * 16 + _hex_digit(text[p + i])
    if value != offset:
        return -1, 0
    q = p + 9
    while q < e and text[q] == _SPACE:
        q += 1
    after = _full_row(text, q, e, out, w, pairs)
    if after >= 0:
        return after, 16
    written = 0
    while True:
        while q < e and text[q] == _SPACE:
            q += 1
        if q >= e or text[q] == _QUOTE or text[q] == _NL or text[q] == _CR:
            break
        t = q
        while q < e and _hex_digit(text[q]) >= 0:
            q += 1
        n = q - t
        if (n != 2 and n != 4) or (q < e and text[q] != _SPACE and text[q] != _NL and text[q] != _CR):
            return -1, 0
        if decode_hex(text, t, q, out, w + written, pairs) != 0:
            return -1, 0
        written += n >> 1
    return line_end(text, q, e) + 1, written


@kernel
def _rows(text, pos, size, out, offset, pairs):
    """Decode the run of data rows starting at text[pos] into out[0:]; returns (index of the
    first line after the run, bytes written), or (-1, index of the row that is not well formed)."""
    p = pos
    written = 0
    while p < size and _is_row(text, p, size):
        after, n = _decode_row(text, p, size, out, written, offset + written, pairs)
        if after < 0:
            return -1, p
        p = after
        written += n
    return p, written


@kernel
def _decode_spans(text, starts, ends, heads, first, out, w, head_out, hw, lengths, pairs):
    """``dump_spans._decode_spans`` for amqsbcg text: the data rows of spans ``first``.. ; lines
    that are no data row (descriptor, length) are skipped. Returns (failed span or len(starts),
    w, hw); on failure, w and hw are where the failed span began."""
    for s in range(first, starts.shape[0]):
        p, e, h = starts[s], ends[s], heads[s]
        span_w, span_hw = w, hw
        moved = h == 0
        while p < e:
            if _is_row(text, p, e):
                p, n = _decode_row(text, p, e, out, w, w - span_w + (h if moved else 0), pairs)
                if p < 0:
                    return s, span_w, span_hw
                w += n
                if not moved and w - span_w >= h:  # set the head apart as soon as it is whole
                    w = head_apart(out, span_w, w, h, head_out, hw)
                    moved = True
            else:
                p = line_end(text, p, e) + 1
        lengths[s] = w - span_w + (h if moved else 0)
        if not moved:
            w = all_head(out, span_w, w, head_out, hw)
        hw += h
    return starts.shape[0], w, hw


def decode_spans(text, starts, ends, heads, first, out, w, head_out, hw, lengths):
    """``_decode_spans`` with the pair table: ``dump_spans.read_spans_in_bulk``'s ``decode``."""
    return _decode_spans(text, starts, ends, heads, first, out, w, head_out, hw, lengths, PAIR_VALUES)


class _Record:
    """A message being collected from amqsbcg lines."""

    __slots__ = ("start", "end", "number", "values", "pending", "declared", "original", "parts", "held",
                 "state", "damage")

    def __init__(self, start: int, number: Optional[int]):
        self.start, self.end, self.number = start, start, number
        self.values: dict = {}
        self.pending: Optional[str] = None  # a name whose value is on the next line
        self.declared: Optional[int] = None  # N of "length - N of M bytes"
        self.original: Optional[int] = None  # M
        self.parts: List[bytes] = []
        self.held = 0  # bytes of the data rows so far
        self.state = "descriptor"  # then "data"; "skipping" past a data row that does not continue the message
        self.damage: Optional[CmiFormatError] = None  # the first line that could not be read

    def refuse(self, error: CmiFormatError) -> None:
        """The message is damaged: what was read of it is kept, and the first error says why."""
        if self.damage is None:
            self.damage = error


def _field_value(name: bytes, raw: bytes, where: Location) -> Optional[Tuple[str, object]]:
    field = FIELDS_BY_BROWSE_NAME.get(name.decode("ascii"))
    if field is None:
        return None  # a name of a newer MQ version: not part of the MQMD we keep
    size = 4 if field.kind == "int" else int(field.code[:-1])
    if raw.startswith(b"X'"):
        if field.kind != "hex" or len(raw) - 3 > 2 * size or len(raw) % 2 == 0:
            raise DumpSyntaxError(f"{name.decode()} : {raw[:60]!r} is not {size} bytes of hex", where)
        value = bytes.fromhex(raw[2:-1].decode("ascii"))
        return field.name, value + field.default[len(value):]
    text = raw[1:-1] if raw.startswith(b"'") else raw
    if field.kind == "int":
        try:
            value = int(text.strip())
        except ValueError:
            raise DumpSyntaxError(f"{name.decode()} : {raw[:40]!r} is not a whole number", where) from None
        if not MQLONG_MIN <= value <= MQLONG_MAX:
            raise DumpSyntaxError(f"{name.decode()} : {raw[:40]!r} does not fit the field's 4 bytes", where)
        return field.name, value
    if len(text) > size:
        raise DumpSyntaxError(f"{name.decode()} holds {len(text)} characters, the field has {size}", where)
    padded = text.ljust(size, b" ")
    return field.name, padded if field.kind == "hex" else padded.decode("latin-1")


def _finish(record: _Record, source: str, index: int) -> PhysicalMessage:
    """The message collected: its descriptor as far as its lines were read and the bytes its rows
    hold, with ``damage`` (and that ``problem``) when a line could not be read or the rows do not
    hold what the length line shows."""
    where = Location(source, index, record.start)
    payload = b"".join(record.parts)
    problem = None
    if record.declared is not None:
        if record.held < record.declared:
            record.refuse(TruncatedError(f"amqsbcg shows a message of {record.declared} bytes but its rows hold "
                                         f"{record.held}: the file is cut", where))
        elif record.held > record.declared:
            record.refuse(DumpSyntaxError(f"the rows hold {record.held} bytes, more than the {record.declared} "
                                          f"the length line shows", where))
        elif record.original is not None and record.original > record.declared:
            problem = (f"the capture holds {record.declared} of its {record.original} bytes: amqsbcg's "
                       f"browse buffer cut it")
    mqmd = mqmd_of_fields(record.values) if record.values else None
    message = mq_message(mqmd, payload, source, index, record.start, record.end)
    if record.damage is not None:
        damage = KeptError.of(record.damage)
        return dataclasses.replace(message, problem=damage.problem, damage=damage)
    return message if problem is None else dataclasses.replace(message, problem=problem)


def _past_blank_lines(data: bytes, pos: int, size: int) -> int:
    """Where the first line of ``data[pos:size]`` that is not blank starts (``size`` when none is):
    ``pos`` itself when its line is not blank. Why: a capture can hold millions of blank lines (a
    decompression bomb of newlines), and a Python step for each would make the 64 MiB a record may
    span (``maxRecordBytes``) take minutes; one scan in C takes about 0.5 s."""
    found = _NOT_BLANK.search(data, pos, size)
    if found is None:
        return size
    return data.rfind(b"\n", pos, found.start()) + 1 or pos


def parse_browse(data: bytes, source: str, base_offset: int = 0, first_index: int = 0,
                 stop: Optional[int] = None) -> Iterator[PhysicalMessage]:
    """Physical messages of amqsbcg output held in ``data`` (up to ``stop``, a line start); offsets
    and indexes are those of the whole file when ``data`` is a piece of it (``base_offset``)."""
    size = len(data) if stop is None else max(0, min(stop, len(data)))
    view = np.frombuffer(data, dtype=np.uint8)
    rows_out = np.empty(size // 2, dtype=np.uint8)
    record: Optional[_Record] = None
    index = first_index
    pos = 0
    while pos < size:
        past_blank = _past_blank_lines(data, pos, size)
        if past_blank != pos:
            pos = past_blank
            continue
        line, end = text_line(data, pos, size)
        offset = base_offset + pos
        where = Location(source, index, offset)
        line_pos, pos = pos, end + 1
        if not line.strip():
            continue
        started = MESSAGE_START.match(line)
        if started or _BETWEEN.match(line) or _SUMMARY.match(line):
            if record is not None:
                yield _finish(record, source, index)
                index += 1
            record = _Record(offset, int(started.group(1))) if started else None
            if record is not None:
                record.end = offset + len(line)
            elif _SUMMARY.match(line):
                # The summary block's lines are free-form: skip to the next message or run.
                while pos < size:
                    past_blank = _past_blank_lines(data, pos, size)
                    if past_blank != pos:
                        pos = past_blank
                        continue
                    following, following_end = text_line(data, pos, size)
                    if MESSAGE_START.match(following) or following.startswith(STARTS_HERE):
                        break
                    pos = following_end + 1
            continue
        if record is None:
            if _DESCRIPTOR.match(line):  # a paste that lost its MQGET line
                record = _Record(offset, None)
                record.end = offset + len(line)
                continue
            raise DumpSyntaxError(f"line starts with {line[:24]!r}: not part of amqsbcg output", where)
        if _DESCRIPTOR.match(line):
            record.state = "descriptor"
        elif _DATA.match(line):
            record.state = "data"
        elif record.state == "skipping":
            pass  # rows after one that does not continue the message cannot be placed in it
        elif _ROW.match(line):  # data rows, wherever they are (partitions decode any row of the message)
            record.state = "data"
            at, written = _rows(view, line_pos, size, rows_out, record.held, PAIR_VALUES)
            if at < 0:  # the rows before the one not well formed are kept; those after it cannot be placed
                bad_row = written
                at, written = _rows(view, line_pos, bad_row, rows_out, record.held, PAIR_VALUES)
                record.refuse(DumpSyntaxError(f"data row {data[bad_row:bad_row + 60]!r} does not continue the "
                                              f"message with its next offset in groups of two or four hex digits",
                                              Location(source, index, base_offset + bad_row)))
                record.state = "skipping"
                bad_line, bad_end = text_line(data, bad_row, size)
                at, row_end = bad_end + 1, bad_row + len(bad_line)
            else:
                row_end = min(at - 1, size)  # where the run's last row ends, its line end left out
                if data[row_end - 1:row_end] == b"\r":
                    row_end -= 1
            record.parts.append(rows_out[:written].tobytes())
            record.held += written
            record.end = base_offset + row_end
            pos = at
            continue
        elif record.state == "data":
            length = _LENGTH.match(line)
            if length:
                record.declared = int(length.group(1))
                record.original = int(length.group(2)) if length.group(2) else None
            else:
                record.refuse(DumpSyntaxError(f"line starts with {line[:24]!r}: not a length or data row", where))
        else:
            try:
                _descriptor_line(record, line, where)
            except DumpSyntaxError as e:
                record.refuse(DumpSyntaxError(f"{e.problem} (the descriptor keeps the fields of its other lines; "
                                              f"this line's are MQMD defaults)", e.location))
        record.end = offset + len(line)
    if record is not None:
        yield _finish(record, source, index)


def _descriptor_line(record: _Record, line: bytes, where: Location) -> None:
    """The fields of one descriptor line into the record: all of them, or none (DumpSyntaxError)."""
    if _CONTEXT.match(line):
        return
    lone = _LONE_VALUE.match(line)
    if lone and record.pending is not None:
        found = _field_value(record.pending.encode(), lone.group(1), where)
        if found:
            record.values[found[0]] = found[1]
        record.pending = None
        return
    pairs = list(_PAIR.finditer(line))
    if not pairs:
        raise DumpSyntaxError(f"descriptor line {line[:40]!r} holds no 'Name : value' pair", where)
    values, pending = {}, None
    for pair in pairs:
        name, raw = pair.group(1), pair.group(2)
        if raw is None:
            if pair is not pairs[-1] or line[pair.end():].strip():  # only a last, bare name waits
                raise DumpSyntaxError(f"descriptor line {line[:60]!r}: {name.decode()} has no value that reads as "
                                      f"a number, 'characters' or X'hex'", where)
            pending = name.decode("ascii")  # AccountingToken: its value is on the next line
            continue
        found = _field_value(name, raw, where)
        if found:
            values[found[0]] = found[1]
    record.values.update(values)
    if pending is not None:
        record.pending = pending


def _start_of_last_message(data: bytes) -> int:
    """Where the last message that starts in ``data`` starts, or 0: the text before it holds
    whole messages, so the file can be parsed in pieces."""
    at = data.rfind(b"MQGET of message number")
    return 0 if at < 0 else data.rfind(b"\n", 0, at) + 1


READ_CHUNK_BYTES = 16 << 20  # small enough to keep several threads busy


def read_browse(path: str, chunk_bytes: int = READ_CHUNK_BYTES,
                keep: Optional[Keep] = None) -> Iterator[PhysicalMessage]:
    """Physical messages of an amqsbcg output file (plain or compressed), each through ``keep``,
    read in chunks parsed on several threads (``parse_in_chunks``)."""
    return parse_in_chunks(path, chunk_bytes, _start_of_last_message, parse_browse, keep)


# ---------------------------------------------------------------------------------------------
# Writing: what amqsbcg prints (IBM MQ 9), so that the same messages can be read back both ways


def _printable(chunk: bytes) -> str:
    return "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)


def format_rows(payload: bytes) -> List[str]:
    rows = []
    for at in range(0, len(payload), 16):
        chunk = payload[at:at + 16]
        groups = " ".join(chunk[i:i + 2].hex().upper() for i in range(0, len(chunk), 2))
        rows.append(f"{at:08X}:  {groups:<50}'{_printable(chunk):<16}'")
    return rows


def _quoted(value) -> str:
    return "'" + (value.decode("latin-1") if isinstance(value, bytes) else str(value)) + "'"


def format_descriptor(mqmd: MQMD) -> List[str]:
    v = {f.browse_name: getattr(mqmd, f.name) for f in MQMD_FIELDS}

    def hx(name):
        return f"X'{v[name].hex().upper()}'"

    lines = [f"  StrucId  : {_quoted(v['StrucId'])}  Version : {v['Version']}",
             f"  Report   : {v['Report']}  MsgType : {v['MsgType']}",
             f"  Expiry   : {v['Expiry']}  Feedback : {v['Feedback']}",
             f"  Encoding : {v['Encoding']}  CodedCharSetId : {v['CodedCharSetId']}",
             f"  Format : {_quoted(v['Format'])}",
             f"  Priority : {v['Priority']}  Persistence : {v['Persistence']}",
             f"  MsgId : {hx('MsgId')}",
             f"  CorrelId : {hx('CorrelId')}",
             f"  BackoutCount : {v['BackoutCount']}",
             f"  ReplyToQ       : {_quoted(v['ReplyToQ'])}",
             f"  ReplyToQMgr    : {_quoted(v['ReplyToQMgr'])}",
             "  ** Identity Context",
             f"  UserIdentifier : {_quoted(v['UserIdentifier'])}",
             "  AccountingToken : ",
             f"   {hx('AccountingToken')}",
             f"  ApplIdentityData : {_quoted(v['ApplIdentityData'])}",
             "  ** Origin Context",
             f"  PutApplType    : '{v['PutApplType']}'",
             f"  PutApplName    : {_quoted(v['PutApplName'])}",
             f"  PutDate  : {_quoted(v['PutDate'])}    PutTime  : {_quoted(v['PutTime'])}",
             f"  ApplOriginData : {_quoted(v['ApplOriginData'])}"]
    if mqmd.version >= 2:
        lines += ["",
                  f"  GroupId : {hx('GroupId')}",
                  f"  MsgSeqNumber   : '{v['MsgSeqNumber']}'",
                  f"  Offset         : '{v['Offset']}'",
                  f"  MsgFlags       : '{v['MsgFlags']}'",
                  f"  OriginalLength : '{v['OriginalLength']}'"]
    return lines


def write_browse(out: BinaryIO, messages: Iterable[Tuple[MQMD, bytes]], queue: str = "SAS.CMI.QUEUE",
                 buffer_bytes: Optional[int] = None) -> int:
    """amqsbcg's output for ``messages``; ``buffer_bytes`` cuts longer messages as its browse
    buffer would (``length - N of M bytes``)."""
    lines = ["AMQSBCG0 - starts here", "**********************", "", f" MQOPEN - '{queue}'", "", ""]
    count = 0
    for count, (mqmd, payload) in enumerate(messages, start=1):
        held = payload if buffer_bytes is None else payload[:buffer_bytes]
        lines += [f" MQGET of message number {count}, CompCode:0 Reason:0", "****Message descriptor****", ""]
        lines += format_descriptor(mqmd)
        lines += ["", "****   Message      ****", "", f" length - {len(held)} of {len(payload)} bytes", ""]
        lines += format_rows(held)
        lines += ["", ""]
    lines += [" No more messages", " MQCLOSE", " MQDISC", ""]
    out.write("\n".join(lines).encode("latin-1"))
    return count
