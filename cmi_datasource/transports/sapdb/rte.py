"""RTE frames: how SAP DB / MaxDB packets travel on TCP (port 7210).

Every transmission starts with a 24-byte RTE header (``RTE_HEADER``). Its integers are in the
sender's own byte order, which the frame does not name except in ``new_swap_type`` (4 from a
little-endian sender, 3 from a big-endian one; some drivers write 0): the order is the one in
which the header's lengths make sense, ``new_swap_type`` deciding when both do. A packet
larger than the connection's segment size is sent as several frames, each with its own header,
``residual_packets`` counting down to 0; they are joined into one packet here.

A frame whose lengths cannot be read ends what can be read of the stream: nothing after it
can be found again. It is reported as a packet with a problem, never skipped in silence.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterator, Optional

from ...containers import max_record_bytes
from ...errors import Location
from ...layout import BIG, LITTLE, Field, Layout
from .codes import RTE_CLASSES, RTE_PROTOCOL_TCP, USER_DATA_REPLY, USER_DATA_REQUEST

RTE_HEADER = Layout("RTE header", [
    Field("act_send_len", "i"), Field("protocol_id", "B", RTE_PROTOCOL_TCP), Field("mess_class", "B"),
    Field("rte_flags", "B"), Field("residual_packets", "B"), Field("sender_ref", "i"), Field("receiver_ref", "i"),
    Field("rte_return_code", "h"), Field("new_swap_type", "B"), Field("filler", "B"), Field("max_send_len", "i")])
_SWAP_TYPE_ORDER = {4: LITTLE, 3: BIG}  # new_swap_type: where the 1 of 2**32 lies in an 8-byte integer
DIRECTIONS = {USER_DATA_REQUEST: "request", USER_DATA_REPLY: "reply"}


@dataclass
class RtePacket:
    """One packet as it came over the wire: its first frame's RTE header and the frames' bodies joined."""

    start: int  # offset of its first RTE header in the stream
    end: int  # offset after its last frame
    header: Optional[Dict[str, Any]]
    order: str  # of the RTE header
    body: bytes
    frames: int = 1
    problem: Optional[str] = None

    @property
    def mess_class(self) -> Optional[int]:
        return self.header["mess_class"] if self.header else None

    @property
    def direction(self) -> str:
        if self.mess_class is None:
            return "unknown"
        found = DIRECTIONS.get(self.mess_class)
        if found:
            return found
        name = RTE_CLASSES.get(self.mess_class, "")
        return "reply" if "reply" in name else "request" if "request" in name else "other"

    @property
    def carries_sql(self) -> bool:
        return self.mess_class in DIRECTIONS and self.problem is None


def header_order(buf, at: int) -> Optional[str]:
    """The byte order in which the RTE header at ``at`` reads as one (``None``: in neither): its
    lengths must make sense, and a frame that fits in what follows wins over one that does not
    (a sender writing 0 for ``new_swap_type`` names no order)."""
    if len(buf) - at < RTE_HEADER.size or buf[at + 4] != RTE_PROTOCOL_TCP or buf[at + 5] not in RTE_CLASSES:
        return None
    preferred = _SWAP_TYPE_ORDER.get(buf[at + 18], LITTLE)
    plausible = []
    for order in (preferred, BIG if preferred == LITTLE else LITTLE):
        header = RTE_HEADER.unpack(buf, at, order)
        if _plausible(header):
            plausible.append((header["act_send_len"] > len(buf) - at, order))
    return sorted(plausible, key=lambda found: found[0])[0][1] if plausible else None  # stable: preferred first


def looks_like_rte(head: bytes) -> bool:
    """Whether ``head`` starts with an RTE header of a frame the SAP DB transport reads."""
    return header_order(head, 0) is not None


def opens_connection(head: bytes) -> bool:
    """Whether a TCP stream starting with ``head`` is a SAP DB client's: an RTE request frame
    (the kernel's side starts with a reply)."""
    return looks_like_rte(head) and RTE_CLASSES[head[5]].endswith("request")


def read_rte_packets(data, where: Location, base: int = 0) -> Iterator[RtePacket]:
    """The packets of one direction of a connection, or of both logged back to back. ``where``
    locates ``data``'s first byte, which is byte ``base`` of the stream: packet offsets (and those
    problems name) are the stream's."""
    at = 0
    while at < len(data):
        order = header_order(data, at)
        if order is None:
            yield _broken(data, base, at,
                          f"no RTE header at stream byte {base + at}: {bytes(data[at:at + 8]).hex(' ')}")
            return
        first = RTE_HEADER.unpack(data, at, order)
        bodies, start, frames = [], at, 0
        header = first
        while True:
            frames += 1
            end = at + header["act_send_len"]
            if end > len(data):
                yield _broken(data, base, start, f"RTE frame at stream byte {base + at} declares "
                                                  f"{header['act_send_len']} bytes; {len(data) - at} remain",
                              first, order)
                return
            bodies.append(bytes(data[at + RTE_HEADER.size:end]))
            at = end
            if header["residual_packets"] == 0:
                break
            if at >= len(data) or header_order(data, at) != order:
                yield _broken(data, base, start, f"RTE frame at stream byte {base + start} announces "
                                                  f"{header['residual_packets']} more frames; the stream "
                                                  f"{'ends' if at >= len(data) else 'holds no RTE header'} at byte "
                                                  f"{base + at}", first, order)
                return
            following = RTE_HEADER.unpack(data, at, order)
            if following["mess_class"] != first["mess_class"] or \
                    following["residual_packets"] != header["residual_packets"] - 1:
                yield _broken(data, base, start, f"RTE frame at stream byte {base + at} does not continue the packet "
                                                  f"begun at byte {base + start} (class {following['mess_class']}, "
                                                  f"{following['residual_packets']} residual)", first, order)
                return
            header = following
        yield RtePacket(base + start, base + at, first, order, b"".join(bodies), frames)


def whole_rte_packets(data) -> int:
    """Where the last packet held whole in ``data`` ends (0: none is), from the frames' headers
    alone: a stream is read in pieces of whole packets. A header that is no header stops the walk
    (the piece that starts there reports it), and so does a frame that does not fit in ``data``
    in the byte order its header names: more bytes may make it fit, which decides the order
    (``header_order``) as it is decided on the whole stream."""
    limit = max_record_bytes()
    at = whole = 0
    while at < len(data):
        order = header_order(data, at)
        if order is None:
            return whole
        named = RTE_HEADER.unpack(data, at, _SWAP_TYPE_ORDER.get(data[at + 18], LITTLE))
        header = RTE_HEADER.unpack(data, at, order)
        if (_plausible(named) and len(data) - at < named["act_send_len"] <= limit) or \
                header["act_send_len"] > len(data) - at:
            return whole
        at += header["act_send_len"]
        if header["residual_packets"] == 0:
            whole = at
    return whole


def _plausible(header: Dict[str, Any]) -> bool:
    """Whether an RTE header's lengths make sense (in the byte order it was read in)."""
    return header["act_send_len"] >= RTE_HEADER.size and (
        header["max_send_len"] == 0 or header["act_send_len"] <= header["max_send_len"])


def _broken(data, base: int, at: int, problem: str, header: Optional[Dict[str, Any]] = None,
            order: str = LITTLE) -> RtePacket:
    return RtePacket(base + at, base + len(data), header, order, b"", problem=problem)


def rte_frame(mess_class: int, packet: bytes, order: str = LITTLE, max_send_len: Optional[int] = None,
              **fields: Any) -> bytes:
    """One RTE frame around ``packet`` (tests, samples)."""
    size = RTE_HEADER.size + len(packet)
    values = {"act_send_len": size, "mess_class": mess_class, "max_send_len": max_send_len or size,
              "new_swap_type": 4 if order == LITTLE else 3, **fields}
    return RTE_HEADER.pack(values, order) + packet
