"""The ``sapdb`` view: one row per part of every SQL packet of a capture (docs/spec/sapdb.md).

A file is either RTE frames logged back to back (both directions, as a TCP stream logger
keeps them) or a pcap/pcapng capture, whose SAP DB connections are those whose client stream
starts with an RTE header or whose server is on port 7210 (option ``sapdb.port``: others).

Data parts are decoded through the shortinfo of their statement: a parse reply carries the
statement's parse id and shortinfo; a later execute carrying that parse id (on the same
connection) has its data part read as the statement's inputs and its reply's as its outputs; a
reply with a shortinfo of its own uses that. A data part whose statement was not captured
keeps ``values`` NULL, its bytes in ``buf``. A columnnames part names the statement's entries
(the shortinfo of its segment, else the statement the segment runs; a reply naming the statement
of its request's parse id, as a DESCRIBE's, names it for later executes): ``columns`` names each
of ``values``. A FETCH carries neither: its rows are read by the statement of the cursor its SQL
names (the result table name of the execute or reply that opened it, or of a DESCRIBE of it).
"""
from __future__ import annotations

import bisect
import re
from collections import deque
from decimal import Decimal
from dataclasses import dataclass, field
from typing import Any, Deque, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa

from ...containers import max_record_bytes, open_capture, read_in_chunks
from ...errors import Location, message_number
from ...option_table import READ, Option
from ..base import READ_CHUNK_BYTES
from ..tcp import Connection, StreamReader, is_pcap, read_connections, server_ports
from . import codes
from .codes import (MESS_CODES, MESS_TYPES, PART_KINDS, PRODUCERS, SEGMENT_KINDS, SQLMODES, function_name,
                    name_of)
from .packet import Part, Segment, SqlPacket, read_packet, swap_name
from .rte import RTE_HEADER, RtePacket, looks_like_rte, opens_connection, read_rte_packets, whole_rte_packets
from .values import (FIXED, STATUS_TEXT, FieldPlan, ParamInfo, direction_entries, named_entries, read_column_names,
                     read_shortinfo, text_codec)

SAPDB_PORT = 7210
PORT_OPTION = "sapdb.port"
RTE_STREAM_FORMAT = "sapdb"  # the capture format name of RTE streams (transport.py)

SQL_PARTS_SCHEMA = pa.schema([
    pa.field("source", pa.string()), pa.field("packet", pa.int64()), pa.field("offset", pa.int64()),
    pa.field("connection", pa.string()), pa.field("frame", pa.int64()), pa.field("direction", pa.string()),
    pa.field("rte_class", pa.string()),
    pa.field("mess_code", pa.string()), pa.field("swap", pa.string()), pa.field("appl_version", pa.string()),
    pa.field("application", pa.string()), pa.field("segment", pa.int32()), pa.field("segment_kind", pa.string()),
    pa.field("mess_type", pa.string()), pa.field("sqlmode", pa.string()), pa.field("producer", pa.string()),
    pa.field("with_info", pa.bool_()), pa.field("mass_cmd", pa.bool_()), pa.field("returncode", pa.int32()),
    pa.field("sqlstate", pa.string()), pa.field("errorpos", pa.int32()), pa.field("function_code", pa.string()),
    pa.field("part", pa.int32()), pa.field("part_kind", pa.string()), pa.field("arg_count", pa.int32()),
    pa.field("buf", pa.binary()), pa.field("text", pa.string()), pa.field("result_count", pa.int64()),
    pa.field("values", pa.list_(pa.string())), pa.field("columns", pa.list_(pa.string())),
    pa.field("problem", pa.string()),
])


PORT = Option(PORT_OPTION, READ, server_ports, "With `view` `sapdb`: the TCP ports of a pcap read as SAP DB, "
              "besides connections that open with an RTE request (comma-separated).", (SAPDB_PORT,), str(SAPDB_PORT),
              transport="sapdb")


def sapdb_ports(options: Mapping[str, str]) -> Tuple[int, ...]:
    """The server ports option ``sapdb.port`` names (comma-separated), else 7210."""
    return PORT.value(options)


@dataclass
class CapturedPacket:
    """A packet and where it was captured."""

    rte: RtePacket
    offset: int  # file byte offset: of its RTE header, or of the capture frame that carried its first byte
    conversation: str  # what parse ids are scoped by: the connection, or the file of a stream log
    connection: Optional[str] = None
    frame: Optional[int] = None


def captured_packets(path: str, ports=(SAPDB_PORT,), rte_stream: bool = False) -> Iterator[CapturedPacket]:
    """The packets of one capture file, in capture order, read as they come (nothing held whole):
    none when it holds no SAP DB traffic. ``rte_stream``: the file is an RTE stream whatever its
    first bytes (a broken first header is then a row with its problem, not a file of other traffic)."""
    with open_capture(path) as f:
        head = f.read(RTE_HEADER.size)
    if is_pcap(head) and not rte_stream:
        return _pcap_packets(path, ports)
    if rte_stream or looks_like_rte(head):
        return _stream_packets(path)
    return iter(())


def _stream_packets(path: str) -> Iterator[CapturedPacket]:
    """The packets of an RTE stream file, read in pieces of whole packets."""
    for base, data, stop in read_in_chunks(path, READ_CHUNK_BYTES, whole_rte_packets):
        if stop == 0 and data:  # no packet ends within the bound: the rest cannot be read
            yield CapturedPacket(RtePacket(base, base + len(data), None, "<", b"", problem=(
                f"no RTE packet that starts at stream byte {base} ends within {len(data)} bytes (read option "
                f"maxRecordBytes): the rest of the file is not read")), base, path)
            return
        for p in read_rte_packets(data if stop == len(data) else data[:stop], Location(path, None, base), base):
            yield CapturedPacket(p, p.start, path)


class _RteReader(StreamReader):
    """One direction of a SAP DB connection in a pcap, read packet by packet as its bytes come."""

    def __init__(self, path: str, connection: Connection):
        super().__init__()
        self.path, self.name = path, connection.name
        self.gap_reported = False

    def read(self) -> Iterator[Tuple[int, CapturedPacket, int]]:
        stop = len(self.buffer) if self.ended else whole_rte_packets(self.buffer)
        if stop == 0 and len(self.buffer) > max_record_bytes():
            yield from self.overflow()
        if stop and not self.dead:
            for packet in read_rte_packets(bytes(self.buffer[:stop]), Location(self.path), self.start):
                yield self._placed(packet)
                if packet.problem is not None:  # what follows it cannot be found again
                    self.dead = True
            self.consume(len(self.buffer) if self.dead else stop)
        if self.ended and self.gap and not self.gap_reported:
            self.gap_reported = True
            yield from self.lost(self.gap)

    def lost(self, problem: str) -> Iterator[Tuple[int, CapturedPacket, int]]:
        frame = self.last_frame
        lost = RtePacket(self.start, self.start, None, "<", b"", problem=problem)
        yield (frame.number if frame else 0, CapturedPacket(lost, frame.end if frame else 0, self.name, self.name,
                                                           frame.number if frame else None), 0)

    def _placed(self, packet: RtePacket) -> Tuple[int, CapturedPacket, int]:
        first, _ = self.frames_of(packet.start, packet.end)
        return first.number, CapturedPacket(packet, first.offset, self.name, self.name, first.number), \
            len(packet.body) + 256


def _pcap_packets(path: str, ports) -> Iterator[CapturedPacket]:
    return read_connections(path, opens_connection, ports,
                            lambda connection: (_RteReader(path, connection), _RteReader(path, connection)))


Shortinfo = List[ParamInfo]  # what a conversation knows of a statement (its entries, named or not)


@dataclass(frozen=True)
class _Requested:
    """What a request segment runs, for its reply: its parse id and that statement."""

    parse_id: Optional[bytes] = None
    statement: Optional[Shortinfo] = None
    cursor: Optional[str] = None  # the result table it opens, fetches from or describes


@dataclass
class _Conversation:
    statements: Dict[bytes, Shortinfo] = field(default_factory=dict)  # by parse id
    cursors: Dict[str, Shortinfo] = field(default_factory=dict)  # by result table name
    awaiting: Deque[List[_Requested]] = field(default_factory=deque)  # requests' statements, per segment


@dataclass
class _Rows:
    """The table being built: plain columns, and the fields of its values rendered in one go."""

    columns: Dict[str, List[Any]] = field(default_factory=lambda: {f.name: [] for f in SQL_PARTS_SCHEMA})
    plan: FieldPlan = field(default_factory=FieldPlan)
    field_ranges: List[Optional[Tuple[int, int]]] = field(default_factory=list)  # per row: its fields in plan
    result_fields: List[Optional[int]] = field(default_factory=list)  # per row: its resultcount field
    names: List[Optional[str]] = field(default_factory=list)  # every row's names of one record, back to back
    name_ranges: List[Optional[Tuple[int, int, int]]] = field(default_factory=list)  # per row: (first, width, records)

    def add(self, row: Dict[str, Any], fields: Optional[Tuple[int, int]] = None,
            result_field: Optional[int] = None, names: Optional[Sequence[Optional[str]]] = None) -> None:
        """``names``: the names of one record of ``fields`` (repeated for each), or of a columnnames part."""
        for name, column in self.columns.items():
            column.append(row.get(name))
        self.field_ranges.append(fields)
        self.result_fields.append(result_field)
        if names is None or not any(n is not None for n in names):
            self.name_ranges.append(None)
            return
        records = (fields[1] - fields[0]) // len(names) if fields else 1
        self.name_ranges.append((len(self.names), len(names), records))
        self.names.extend(names)

    def table(self) -> pa.Table:
        text, status = self.plan.render()
        bad = {int(i): STATUS_TEXT[int(status[i])] for i in np.flatnonzero(status)}
        problems, counts = self.columns["problem"], self.columns["result_count"]
        spanned = [(span[0], row) for row, span in enumerate(self.field_ranges) if span is not None]
        for i, why in bad.items():  # a field's row: the last whose fields start at or before it
            at = bisect.bisect_right(spanned, (i, len(self.field_ranges))) - 1
            if at >= 0 and i < self.field_ranges[spanned[at][1]][1]:
                start, row = spanned[at]
                problems[row] = "; ".join(filter(None, [problems[row], f"value {i - start + 1} {why}"]))
        offsets, valid = [0], []
        for row, span in enumerate(self.field_ranges):
            offsets.append(offsets[-1] + (span[1] - span[0] if span else 0))
            valid.append(span is not None)
            result = self.result_fields[row]
            if result is not None:
                counts[row], why = _result_count(text[result].as_py(), bad.get(result))
                problems[row] = problems[row] or why
        ordered = np.concatenate([np.arange(*span) for span in self.field_ranges if span is not None] or
                                 [np.zeros(0, dtype=np.int64)])
        flat = text.take(pa.array(ordered, type=pa.int64())) if len(ordered) != len(text) else text
        values = pa.ListArray.from_arrays(pa.array(offsets, type=pa.int32()), flat,
                                          mask=pa.array([not v for v in valid], type=pa.bool_()))
        lists = {"values": values, "columns": self._columns()}
        arrays = [lists[f.name] if f.name in lists else pa.array(self.columns[f.name], type=f.type)
                  for f in SQL_PARTS_SCHEMA]
        return pa.Table.from_arrays(arrays, schema=SQL_PARTS_SCHEMA)


    def _columns(self) -> pa.ListArray:
        """Each row's names, one per value: a record's names taken once per record (no Python per value)."""
        offsets, taken = [0], []
        for span in self.name_ranges:
            if span is not None:
                first, width, records = span
                taken.append(np.tile(np.arange(first, first + width, dtype=np.int64), records))
            offsets.append(offsets[-1] + (len(taken[-1]) if span is not None else 0))
        flat = pa.array(self.names, type=pa.string()).take(
            pa.array(np.concatenate(taken or [np.zeros(0, dtype=np.int64)]), type=pa.int64()))
        return pa.ListArray.from_arrays(pa.array(offsets, type=pa.int32()), flat,
                                        mask=pa.array([span is None for span in self.name_ranges], type=pa.bool_()))


def _result_count(text: Optional[str], bad: Optional[str]) -> Tuple[Optional[int], Optional[str]]:
    """A resultcount part's number, and why there is none."""
    if bad is not None or text is None:
        return None, f"the result count {bad or 'is NULL'}"
    value = Decimal(text)
    if value != value.to_integral_value() or not -2 ** 63 <= value < 2 ** 63:
        return None, f"the result count {text} is no whole number of rows"
    return int(value), None


def sql_parts_table(path: str, options: Mapping[str, str] = {}) -> pa.Table:
    """The ``sapdb`` view of one capture file (``options``: ``sapdb.port``; ``format`` "sapdb"
    reads a file as an RTE stream even when its first bytes are no RTE header)."""
    rows = _Rows()
    conversations: Dict[str, _Conversation] = {}
    named = options.get("format") == RTE_STREAM_FORMAT
    for packet_index, captured in enumerate(captured_packets(path, sapdb_ports(options), named)):
        conversation = conversations.setdefault(captured.conversation, _Conversation())
        _packet_rows(rows, path, packet_index, captured, conversation)
    return rows.table()


def _packet_rows(rows: _Rows, path: str, packet_index: int, captured: CapturedPacket,
                 conversation: _Conversation) -> None:
    """Rows of the packet at 0-based ``packet_index`` in the file; its ``packet`` column counts from
    1, as users number messages (and as error texts do)."""
    rte = captured.rte
    where = Location(path, packet_index, captured.offset)
    base = {"source": path, "packet": message_number(packet_index), "offset": captured.offset,
            "connection": captured.connection, "frame": captured.frame, "direction": rte.direction,
            "rte_class": None if rte.header is None else name_of(codes.RTE_CLASSES, rte.mess_class)}
    if not rte.carries_sql:  # a connect or release frame, or what could not be read: one row
        rows.add({**base, "problem": rte.problem})
        return
    packet = read_packet(rte.body, where)
    header = packet.header or {}
    base.update({"mess_code": name_of(MESS_CODES, header["mess_code"]) if header else None,
                 "swap": swap_name(header["mess_swap"]) if header else None,
                 "appl_version": _text(header.get("appl_version")), "application": _text(header.get("application"))})
    reply = rte.direction == "reply"
    statements = conversation.awaiting.popleft() if reply and conversation.awaiting else []
    requested: List[_Requested] = []
    for index, segment in enumerate(packet.segments):
        requested.append(_segment_rows(rows, base, where, index + 1, segment, packet, conversation,
                                       statements[index] if index < len(statements) else _Requested(), reply))
    if not reply:
        conversation.awaiting.append(requested)
    if packet.problem is not None or not packet.segments:  # what is wrong, or a packet of no segments
        rows.add({**base, "problem": packet.problem})


def _segment_rows(rows: _Rows, base: Dict[str, Any], where: Location, number: int, segment: Segment,
                  packet: SqlPacket, conversation: _Conversation, requested: _Requested, reply: bool) -> _Requested:
    """Rows of one segment; returns what a request segment runs (for its reply)."""
    h = segment.header
    row = {**base, "segment": number, "segment_kind": name_of(SEGMENT_KINDS, h["segm_kind"])}
    if segment.is_return:
        row.update(returncode=h["returncode"], sqlstate=_text(h["sqlstate"]), errorpos=h["errorpos"],
                   function_code=function_name(h["function_code"]))
    else:
        row.update(mess_type=name_of(MESS_TYPES, h["mess_type"]), sqlmode=name_of(SQLMODES, h["sqlmode"]),
                   producer=name_of(PRODUCERS, h["producer"]), with_info=h["with_info"], mass_cmd=h["mass_cmd"])
    by_kind = {part.header["part_kind"]: part for part in segment.parts}
    mess_code = packet.header["mess_code"]
    runs, names, problems = _statement_of(by_kind, packet, where, conversation, requested, reply)
    statement = runs.statement
    if not segment.parts:
        rows.add(row)
    for index, part in enumerate(segment.parts, start=1):
        kind = part.header["part_kind"]
        part_row = {**row, "part": index, "part_kind": name_of(PART_KINDS, kind),
                    "arg_count": part.header["arg_count"], "buf": part.buf}
        fields = result_field = part_names = None
        if kind in codes.TEXT_PARTS:
            part_row["text"] = part.buf.decode(text_codec(mess_code, packet.swap), errors="replace")
        elif kind == codes.PART_RESULTCOUNT and part.buf:
            result_field = rows.plan.add(rows.plan.add_buffer(part.buf), len(part.buf), FIXED)
        elif kind in problems:
            part_row["problem"] = problems[kind]
            part_names = names if kind == codes.PART_COLUMNNAMES else None
        elif kind == codes.PART_DATA and statement is not None:
            entries = direction_entries(statement, reply)
            fields, part_row["problem"] = _data_fields(rows.plan, part, entries, mess_code, packet.swap, reply)
            part_names = [e.name for e in entries] if fields is not None else None
        rows.add(part_row, fields, result_field, part_names)
    return runs


def _statement_of(by_kind: Mapping[int, Part], packet: SqlPacket, where: Location, conversation: _Conversation,
                  requested: _Requested, reply: bool
                  ) -> Tuple[_Requested, Optional[List[str]], Dict[int, Optional[str]]]:
    """The statement whose data a segment holds, by what its parts say and what it answers (a reply:
    its request's; a request: its parse id's, or a FETCH's cursor's); what the segment teaches the
    conversation of it is kept (by parse id, by cursor name). Also the names of its columnnames part,
    and the problems of its shortinfo and columnnames parts."""
    codec = text_codec(packet.header["mess_code"], packet.swap)
    statement, problems = requested.statement, {}
    parse_id = by_kind[codes.PART_PARSID].buf if codes.PART_PARSID in by_kind else None
    cursor = requested.cursor if reply else None
    if not reply:
        if parse_id is not None:
            statement = conversation.statements.get(parse_id)
        if codes.PART_COMMAND in by_kind:
            verb, cursor = cursor_command(by_kind[codes.PART_COMMAND].buf.decode(codec, errors="replace"))
            if verb == "FETCH" and cursor is not None:
                statement = conversation.cursors.get(cursor)
    if codes.PART_RESULTTABLENAME in by_kind:  # the cursor a select opens (the client's name, or the kernel's)
        cursor = by_kind[codes.PART_RESULTTABLENAME].buf.decode(codec, errors="replace").rstrip("\0 ") or cursor
    if codes.PART_SHORTINFO in by_kind:
        part = by_kind[codes.PART_SHORTINFO]
        statement, problems[codes.PART_SHORTINFO] = read_shortinfo(part.buf, part.header["arg_count"], packet.swap,
                                                                    where)
    names: Optional[List[str]] = None
    if codes.PART_COLUMNNAMES in by_kind:
        part = by_kind[codes.PART_COLUMNNAMES]
        names, problem = read_column_names(part.buf, part.header["arg_count"], codec, where)
        if statement is not None and problem is None:  # a damaged part names nothing: which name is whose?
            statement, problem = named_entries(statement, names)
        problems[codes.PART_COLUMNNAMES] = problem
    learned = codes.PART_SHORTINFO in by_kind or (names is not None and statement is not None)
    known_as = parse_id if parse_id is not None else requested.parse_id if reply else None
    if learned and known_as is not None:  # a parse (or DESCRIBE) reply: the statement executes later by this id
        conversation.statements[known_as] = statement
    if cursor is not None and statement is not None:  # later FETCHes of the cursor read their rows by it
        conversation.cursors[cursor] = statement
    return _Requested(parse_id, statement, cursor), names, problems


# A FETCH or DESCRIBE naming its cursor (MaxDB's FETCH [<position>] [<result table name>] INTO ...):
# the verb, an optional position, then the name, quoted (as written) or not (upper case).
_CURSOR_COMMAND = re.compile(
    r'\s*(FETCH|DESCRIBE)\b(?:\s+(?:FIRST|LAST|NEXT|PREV|SAME|POS\s*\([^)]*\)|(?:ABSOLUTE|RELATIVE)\s+[^\s"]+)'
    r'(?![\w#@$]))?\s*("(?:[^"]|"")*"|[A-Za-z_][\w#@$]*)?', re.IGNORECASE)
_NO_CURSOR = ("INTO", "USING")  # FETCH NEXT INTO ...: the session's unnamed result


def cursor_command(sql: str) -> Tuple[Optional[str], Optional[str]]:
    """("FETCH" or "DESCRIBE", the cursor it names or None) of a command, else (None, None)."""
    match = _CURSOR_COMMAND.match(sql)
    if match is None:
        return None, None
    verb, name = match.group(1).upper(), match.group(2)
    if name is None or name.upper() in _NO_CURSOR:
        return verb, None
    return verb, name[1:-1].replace('""', '"') if name.startswith('"') else name.upper()


def _data_fields(plan: FieldPlan, part: Part, entries: List[ParamInfo], mess_code: int, swap: int,
                 reply: bool) -> Tuple[Optional[Tuple[int, int]], Optional[str]]:
    """The fields of a data part, ``arg_count`` records of the entries laid out by their bufpos,
    added to ``plan``: (first, end) of them there, and what is wrong."""
    if not entries:
        return None, f"the statement's shortinfo names no {'outputs' if reply else 'inputs'} to read it by"
    broken = [e for e in entries if e.bufpos < 1 or e.in_out_len < 1]
    if broken:
        return None, (f"shortinfo entry with bufpos {broken[0].bufpos}, in_out_len {broken[0].in_out_len} "
                      "locates nothing")
    record = max(e.bufpos - 1 + e.in_out_len for e in entries)
    if sum(e.in_out_len for e in entries) > record:  # fields never share bytes: this shortinfo is not one
        return None, f"the shortinfo's {len(entries)} fields overlap in a record of {record} bytes"
    declared = max(part.header["arg_count"], 1)
    whole = min(declared, len(part.buf) // record)
    problem = None if whole == declared else (f"data part declares {declared} records of {record} bytes; "
                                              f"its {len(part.buf)} bytes hold {whole}")
    fields = plan.add_records(plan.add_buffer(part.buf), record, whole, [e.bufpos - 1 for e in entries],
                              [e.in_out_len for e in entries], [e.kind(mess_code, swap) for e in entries],
                              [e.frac for e in entries], [e.code_page(mess_code) for e in entries])
    return fields, problem


def _text(raw: Optional[bytes]) -> Optional[str]:
    return None if raw is None else raw.decode("latin-1").rstrip("\0 ")
