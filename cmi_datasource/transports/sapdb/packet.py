"""The SQL packet of the SAP DB / MaxDB order interface (docs/spec/sapdb.md): header, segments, parts.

A packet is a 32-byte header and a varpart of ``no_of_segm`` segments; a segment is a 40-byte
header (the command variant from client to kernel, the return variant back) and
``no_of_parts`` parts; a part is a 16-byte header and ``buf_len`` bytes, the next part starting
on the next 8-byte boundary. Every structure is one ``Layout`` table below; the same tables
read packets and build them (``build_packet``, for tests and samples).

The packet's binary integers are in the byte order its ``mess_swap`` names, the client's, in
both directions: 1 normal (big-endian), 2 full swapped (little-endian), 3 part swapped (a
4-byte integer's two 16-bit halves exchanged, each big-endian: 0x01020304 is 03 04 01 02).
For 2-byte integers in a part swapped packet the sources disagree (the kernel swaps them
only when its own order differs); we read them big-endian, as an x86 kernel answers such a
client. Single bytes, texts, sets, the parse id and data values are never swapped.

Declared lengths and counts are checked against the bytes that are there before anything is
read by them: a part past its segment, a segment past the packet, or counts that disagree
with the lengths become the packet's ``problem``; what could be read before it is kept.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ...errors import CmiFormatError, Location
from ...layout import BIG, LITTLE, Field, Layout
from .codes import PART_ALIGNMENT, SEGMENT_RETURN_KINDS, SWAP_FULL, SWAP_KINDS, SWAP_NORMAL, SWAP_PART

PACKET_HEADER = Layout("packet header", [
    Field("mess_code", "B"), Field("mess_swap", "B", SWAP_FULL), Field("filler1", "h"),
    Field("appl_version", "5s", b"70400", text=True), Field("application", "3s", b"XCI", text=True),
    Field("varpart_size", "i"), Field("varpart_len", "i"), Field("filler2", "h"), Field("no_of_segm", "h"),
    Field("filler3", "8s", b"\0" * 8)])

_SEGMENT_COMMON = [Field("segm_len", "i"), Field("segm_offset", "i"), Field("no_of_parts", "h"),
                   Field("own_index", "h", 1), Field("segm_kind", "B", 1)]
COMMAND_SEGMENT = Layout("command segment header", _SEGMENT_COMMON + [
    Field("mess_type", "B", 2), Field("sqlmode", "B", 1), Field("producer", "B", 1),
    Field("commit_immediately", "?", False), Field("ignore_costwarning", "?", False), Field("prepare", "?", False),
    Field("with_info", "?", False), Field("mass_cmd", "?", False), Field("parsing_again", "?", False),
    Field("command_options", "B"), Field("filler1", "B"), Field("filler2", "16s", b"\0" * 16)])
RETURN_SEGMENT = Layout("return segment header", _SEGMENT_COMMON + [
    Field("sqlstate", "5s", b"00000", text=True), Field("returncode", "h"), Field("errorpos", "i"),
    Field("extern_warning", "2s", b"\0\0"), Field("intern_warning", "2s", b"\0\0"), Field("function_code", "h"),
    Field("tracelevel", "B"), Field("filler1", "B"), Field("filler2", "8s", b"\0" * 8)])
PART_HEADER = Layout("part header", [
    Field("part_kind", "B"), Field("attributes", "B"), Field("arg_count", "h", 1), Field("segm_offset", "i"),
    Field("buf_len", "i"), Field("buf_size", "i")])
# A shortinfo part is arg_count of these (tsp1_param_info), one per parameter or output column.
PARAM_INFO = Layout("shortinfo entry", [
    Field("mode", "B"), Field("io_type", "B"), Field("data_type", "B"), Field("frac", "B"), Field("length", "h"),
    Field("in_out_len", "h"), Field("bufpos", "i")])
# A columnnames part is arg_count of these, back to back: a name's length in bytes, then the name in the
# packet's mess_code (UCS-2 in unicode sessions; SQLDBC's and the loader's readers, the .NET provider's).
COLUMN_NAME = Layout("column name", [Field("name_len", "B")])


class SqlPacketError(CmiFormatError):
    """An SQL packet whose lengths, counts or byte order cannot be read."""


def _halves_exchanged(value: int) -> int:
    """A 4-byte integer read big-endian from part swapped bytes, put right (and back: it is its own inverse)."""
    raw = value & 0xFFFFFFFF
    fixed = ((raw & 0xFFFF) << 16) | (raw >> 16)
    return fixed - (1 << 32) if fixed & 0x80000000 else fixed


def _four_byte_fields(layout: Layout) -> Tuple[str, ...]:
    return tuple(f.name for f in layout.fields if f.code in ("i", "I"))


_FOUR_BYTE = {layout.name: _four_byte_fields(layout)
              for layout in (PACKET_HEADER, COMMAND_SEGMENT, RETURN_SEGMENT, PART_HEADER, PARAM_INFO, COLUMN_NAME)}


def unpack(layout: Layout, buf, at: int, swap: int, where: Location) -> Dict[str, Any]:
    """``layout`` read at ``at`` in the byte order of swap kind ``swap``."""
    values = layout.unpack(buf, at, LITTLE if swap == SWAP_FULL else BIG, where)
    if swap == SWAP_PART:
        for name in _FOUR_BYTE[layout.name]:
            values[name] = _halves_exchanged(values[name])
    return values


def pack(layout: Layout, values: Mapping[str, Any], swap: int) -> bytes:
    if swap == SWAP_PART:
        values = {**values, **{name: _halves_exchanged(values.get(name, layout.by_name[name].default))
                               for name in _FOUR_BYTE[layout.name]}}
    return layout.pack(values, LITTLE if swap == SWAP_FULL else BIG)


def aligned(length: int) -> int:
    return -(-length // PART_ALIGNMENT) * PART_ALIGNMENT


@dataclass
class Part:
    header: Dict[str, Any]
    buf: bytes
    offset: int  # of its header, in the packet


@dataclass
class Segment:
    header: Dict[str, Any]  # the command or the return variant, by segm_kind
    parts: List[Part] = field(default_factory=list)
    offset: int = 0  # of its header, in the packet

    @property
    def is_return(self) -> bool:
        return self.header["segm_kind"] in SEGMENT_RETURN_KINDS


@dataclass
class SqlPacket:
    header: Optional[Dict[str, Any]]  # None when not even the packet header could be read
    segments: List[Segment] = field(default_factory=list)
    problem: Optional[str] = None

    @property
    def swap(self) -> int:
        return self.header["mess_swap"] if self.header else 0


def read_packet(data: bytes, where: Location) -> SqlPacket:
    """The packet in ``data`` (an RTE frame's body): as much of it as its lengths allow, and
    what is wrong with the rest. ``where`` locates the packet; offsets are in the packet."""
    try:
        header = PACKET_HEADER.unpack(data, 0, BIG, where)
    except CmiFormatError as e:
        return SqlPacket(None, problem=e.problem)
    swap = header["mess_swap"]
    if swap not in (SWAP_NORMAL, SWAP_FULL, SWAP_PART):
        return SqlPacket(header, problem=f"mess_swap {swap} names no byte order (1 normal, 2 full, 3 part swapped)")
    header = unpack(PACKET_HEADER, data, 0, swap, where)
    packet = SqlPacket(header)
    try:
        _read_segments(packet, data, where)
    except CmiFormatError as e:
        packet.problem = f"{e.problem} (packet byte {e.location.payload_offset})"
    return packet


def _read_segments(packet: SqlPacket, data: bytes, where: Location) -> None:
    header, swap = packet.header, packet.swap
    varpart_start = PACKET_HEADER.size
    varpart_end = varpart_start + header["varpart_len"]
    if header["varpart_len"] < 0 or varpart_end > len(data):
        raise SqlPacketError(f"varpart_len {header['varpart_len']} reaches past the packet's "
                             f"{len(data) - varpart_start} bytes", where.at_payload(16))
    at = varpart_start
    for number in range(1, header["no_of_segm"] + 1):
        if at + COMMAND_SEGMENT.size > varpart_end:
            raise SqlPacketError(f"no_of_segm is {header['no_of_segm']} but the varpart ends after "
                                 f"{number - 1} segments", where.at_payload(at))
        kind = data[at + COMMAND_SEGMENT.offsets["segm_kind"]]
        layout = RETURN_SEGMENT if kind in SEGMENT_RETURN_KINDS else COMMAND_SEGMENT
        segment = Segment(unpack(layout, data, at, swap, where), offset=at)
        packet.segments.append(segment)
        length = segment.header["segm_len"]
        if length < layout.size or at + length > varpart_end:
            raise SqlPacketError(f"segment {number} declares {length} bytes; the varpart holds "
                                 f"{varpart_end - at} from its start", where.at_payload(at))
        _read_parts(segment, data, at + length, swap, number, where)
        at += length
    if at != varpart_end:
        raise SqlPacketError(f"no_of_segm is {header['no_of_segm']} but {varpart_end - at} bytes of the varpart "
                             f"follow the last segment", where.at_payload(at))


def _read_parts(segment: Segment, data: bytes, segment_end: int, swap: int, number: int, where: Location) -> None:
    at = segment.offset + COMMAND_SEGMENT.size
    count = segment.header["no_of_parts"]
    for index in range(1, count + 1):
        if at + PART_HEADER.size > segment_end:
            raise SqlPacketError(f"segment {number} declares {count} parts but ends after {index - 1}",
                                 where.at_payload(at))
        header = unpack(PART_HEADER, data, at, swap, where)
        start, length = at + PART_HEADER.size, header["buf_len"]
        if length < 0 or start + length > segment_end:
            raise SqlPacketError(f"part {index} of segment {number} declares buf_len {length}; the segment "
                                 f"holds {segment_end - start} bytes past its header", where.at_payload(at + 8))
        segment.parts.append(Part(header, data[start:start + length], at))
        at += aligned(PART_HEADER.size + length)
    if at < segment_end:
        raise SqlPacketError(f"segment {number} declares {count} parts but {segment_end - at} bytes follow "
                             f"the last", where.at_payload(at))


def swap_name(swap: int) -> str:
    return SWAP_KINDS.get(swap, str(swap))


# -- building packets (tests, samples) -----------------------------------------------------------

@dataclass
class PartSpec:
    kind: int
    buf: bytes
    arg_count: int = 1
    attributes: int = 0


@dataclass
class SegmentSpec:
    fields: Dict[str, Any]  # of COMMAND_SEGMENT or RETURN_SEGMENT, by segm_kind (default: a dbs command)
    parts: Sequence[PartSpec] = ()


def build_packet(segments: Sequence[SegmentSpec], swap: int = SWAP_FULL, mess_code: int = 0,
                 appl_version: bytes = b"70205", application: bytes = b"XCI", varpart_size: int = 0) -> bytes:
    """An SQL packet: the header, then each segment with its parts, every length filled in."""
    varpart = bytearray()
    for own_index, spec in enumerate(segments, start=1):
        fields = {"own_index": own_index, **spec.fields}
        layout = RETURN_SEGMENT if fields.get("segm_kind", 1) in SEGMENT_RETURN_KINDS else COMMAND_SEGMENT
        body = bytearray()
        for part in spec.parts:
            room = max(varpart_size - len(varpart) - layout.size - len(body) - PART_HEADER.size, len(part.buf))
            header = pack(PART_HEADER, {"part_kind": part.kind, "attributes": part.attributes,
                                        "arg_count": part.arg_count, "segm_offset": len(varpart),
                                        "buf_len": len(part.buf), "buf_size": room}, swap)
            body += header + part.buf + b"\0" * (aligned(PART_HEADER.size + len(part.buf))
                                                   - PART_HEADER.size - len(part.buf))
        varpart += pack(layout, {"segm_len": layout.size + len(body), "segm_offset": len(varpart),
                                 "no_of_parts": len(spec.parts), **fields}, swap) + body
    header = pack(PACKET_HEADER, {"mess_code": mess_code, "mess_swap": swap, "appl_version": appl_version,
                                  "application": application, "varpart_size": max(varpart_size, len(varpart)),
                                  "varpart_len": len(varpart), "no_of_segm": len(segments)}, swap)
    return header + bytes(varpart)
