"""pcap and pcapng captures (tcpdump, Wireshark) -> TCP connections, read frame by frame as they come.

Frames are read by dpkt (Ethernet, Linux cooked v1/v2 as ``tcpdump -i any`` writes, BSD loopback
and raw IP; IPv4 and IPv6), one at a time from the (decompressed) file; segments are placed into
streams by ``reassembly.py``. A connection's client is the side that sent the SYN; in a capture
that began after it, the side whose stream starts the way the protocol's clients start
(``opens``), else the side not on a server port.

A transport reads the streams of its connections with a ``StreamReader`` per direction, handed
the bytes in order as the frames carrying them are read; ``read_connections`` gives what the
readers make of them in capture order (by the frame that carried an item's first byte). Nothing
is held whole: memory is bounded by ``max_record_bytes()`` for what the streams hold unread
(bytes behind a hole, a record not yet complete, a connection not yet recognised) and again for
items read but not yet in order, whatever the capture's size.
"""
from __future__ import annotations

import bisect
import heapq
import itertools
import socket
import struct
from dataclasses import dataclass
from typing import Any, Callable, Collection, Dict, Iterator, List, Optional, Tuple

from ...containers import max_record_bytes, open_capture
from ...errors import CmiFormatError, CmiOptionError, Location, RecordTooLargeError
from .reassembly import NO_FRAME, Direction, Endpoint, Frame, Piece

PCAP_MAGICS = (b"\xa1\xb2\xc3\xd4", b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\x3c\x4d", b"\x4d\x3c\xb2\xa1")
PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
OPENING_BYTES = 64  # what ``opens`` sees of a client stream
READ_PIECE = 1 << 20  # most bytes asked of the file at once, whatever a record declares


class PcapFormatError(CmiFormatError):
    """A pcap or pcapng file that cannot be read (a bad header, a cut record)."""


def server_ports(raw: str, option: str) -> Tuple[int, ...]:
    """The TCP ports a read option names, comma-separated (``mqtt.port``: "1884,8884")."""
    try:
        ports = tuple(int(p) for p in str(raw).split(",") if p.strip())
    except ValueError:
        ports = ()
    if not ports or any(not 0 < p < 65536 for p in ports):
        raise CmiOptionError(f"option {option} must be TCP port numbers separated by commas, not {raw!r}")
    return ports


def is_pcap(head: bytes) -> bool:
    return head[:4] in PCAP_MAGICS or head[:4] == PCAPNG_MAGIC


@dataclass(frozen=True)
class Connection:
    client: Endpoint
    server: Endpoint

    @property
    def name(self) -> str:
        return f"{self.client[0]}:{self.client[1]} -> {self.server[0]}:{self.server[1]}"


class StreamReader:
    """One direction of a connection as its bytes come, in order (``push``): a protocol's reader
    subclasses it and turns them into items (``read``), keeping a record that is not yet whole.
    Every item is placed at the frame that carried its first byte."""

    def __init__(self):
        self.buffer = bytearray()  # bytes handed over, not yet read
        self.start = 0  # their stream offset
        self._starts: List[int] = []  # stream offset where each frame's bytes start, for the bytes held ...
        self._frames: List[Frame] = []  # ... and that frame (the last one always kept)
        self.ended = False  # no more bytes will come
        self.gap: Optional[str] = None  # the stream ended at a hole: why
        self.dead = False  # what the stream holds from here cannot be read: bytes pushed are dropped

    def push(self, data: bytes, frame: Frame) -> None:
        if self.dead:
            return
        if not self._frames or self._frames[-1] is not frame:
            self._starts.append(self.start + len(self.buffer))
            self._frames.append(frame)
        self.buffer += data

    def take_over(self, other: "StreamReader") -> None:
        """What ``other`` holds becomes this reader's (a connection recognised: its bytes so far)."""
        self.buffer, self.start, self._starts, self._frames = other.buffer, other.start, other._starts, other._frames
        self.ended, self.gap = other.ended, other.gap

    def consume(self, count: int) -> None:
        """The first ``count`` bytes held are read."""
        del self.buffer[:count]
        self.start += count
        keep_from = max(bisect.bisect_right(self._starts, self.start) - 1, 0)
        del self._starts[:keep_from], self._frames[:keep_from]

    def frame_at(self, offset: int) -> Frame:
        if not self._frames:
            return NO_FRAME
        return self._frames[max(bisect.bisect_right(self._starts, offset) - 1, 0)]

    def frames_of(self, start: int, end: int) -> Tuple[Frame, Frame]:
        """The frames that carried the first and the last byte of stream bytes [start, end)."""
        return self.frame_at(start), self.frame_at(max(end - 1, start))

    @property
    def last_frame(self) -> Optional[Frame]:
        """The frame that carried the last byte handed over, None before the first."""
        return self._frames[-1] if self._frames else None

    @property
    def waiting_frame(self) -> Optional[int]:
        """The frame that carried the first byte held unread: what this reader may yet give is placed no earlier."""
        return self.frame_at(self.start).number if self.buffer else None

    def read(self) -> Iterator[Tuple[int, Any, int]]:
        """(frame number, item, bytes it holds) of each item the bytes held make; at the end of
        the stream (``ended``, and ``gap`` when a hole ended it), of all of them."""
        return iter(())

    def overflow(self) -> List[Tuple[int, Any, int]]:
        """The bytes held are more than may be (a record longer than ``max_record_bytes()``, or
        all streams together holding too much): they are dropped, reported by ``lost``, and the
        reader reads no more."""
        problem = (f"more than {len(self.buffer)} bytes of the TCP stream from here hold no whole record "
                   f"(read option maxRecordBytes): the rest of the stream is not read")
        report = list(self.lost(problem))
        self.consume(len(self.buffer))
        self.dead = True
        return report

    def lost(self, problem: str) -> Iterator[Tuple[int, Any, int]]:
        """The item saying that the stream from ``start`` on is lost, and why."""
        return iter(())

    def stop_waiting(self) -> None:
        """Read what is held with what is known: the capture holds too much for this reader to
        wait for what its other direction may yet tell (MQTT: a packet that tells the version)."""


# (to the server, to the client): the readers of a connection's two directions
Readers = Callable[[Connection], Tuple[StreamReader, StreamReader]]


class _Link:
    """One TCP connection (both directions) while the capture is read: its segments placed, and
    its bytes held until the connection is recognised as the protocol's (or not), then read."""

    def __init__(self, number: int, limit: int):
        self.number, self.limit = number, limit
        self.directions: Dict[Tuple[Endpoint, Endpoint], Direction] = {}
        self.carried_data: Dict[Tuple[Endpoint, Endpoint], bool] = {}
        self.first_frame: Dict[Tuple[Endpoint, Endpoint], int] = {}  # of each direction's first bytes in order
        self.heads: Dict[Tuple[Endpoint, Endpoint], bytes] = {}  # each direction's first OPENING_BYTES
        self.readers: Dict[Tuple[Endpoint, Endpoint], StreamReader] = {}  # held bytes until recognised
        self.recognised = False
        self.ignored = False  # not the protocol's: its segments are passed over
        self.ended = False  # the capture ended: no more bytes will come

    def add(self, source: Endpoint, destination: Endpoint, seq: int, syn: bool, data: bytes, frame: Frame,
            initiates: bool) -> None:
        key = (source, destination)
        direction = self.directions.get(key)
        if direction is None:
            direction = self.directions[key] = Direction(source, destination, self.limit)
        if data:
            self.carried_data[key] = True
        self._hand_on(key, direction.add(seq, syn, data, frame, initiates))

    def _hand_on(self, key: Tuple[Endpoint, Endpoint], pieces: List[Piece]) -> None:
        direction = self.directions[key]
        reader = self.readers.get(key)
        if reader is None:
            reader = self.readers[key] = StreamReader()
        for data, frame in pieces:
            self.first_frame.setdefault(key, frame.number)
            head = self.heads.get(key, b"")
            if len(head) < OPENING_BYTES:
                self.heads[key] = head + data[:OPENING_BYTES - len(head)]
            reader.push(data, frame)
        if direction.gap is not None:
            reader.gap, reader.ended = direction.gap, True

    def end(self) -> None:
        self.ended = True
        for key, direction in self.directions.items():
            self._hand_on(key, direction.end())
        for reader in self.readers.values():
            reader.ended = True

    def recognise(self, opens: Callable[[bytes], bool], server_ports: Collection[int], readers: Readers,
                  forced: bool = False) -> None:
        """Decide whether the connection is the protocol's, once what decides it is known (or
        ``forced``: with what is known); then hand its bytes to the protocol's readers."""
        if self.recognised or self.ignored:
            return
        found = self._client_and_server(opens, server_ports, forced)
        if found is None:
            return
        client, server = found
        to_server, to_client = (client, server), (server, client)
        if server[1] in server_ports:
            ours = True
        elif self.carried_data.get(to_server) and self._known(to_server, opens, forced):
            ours = opens(self.heads.get(to_server, b""))
        elif forced or self._ended(to_server):
            ours = False
        else:
            return
        if not ours:
            self.ignored = True
            self.directions, self.readers, self.heads = {}, {}, {}
            return
        self.recognised = True
        made = dict(zip((to_server, to_client), readers(Connection(client, server))))
        for key, reader in made.items():
            held = self.readers.get(key)
            if held is not None:
                reader.take_over(held)
            reader.ended = reader.ended or self.ended  # a direction that carried nothing ends too
        self.readers = made

    def _client_and_server(self, opens, server_ports, forced) -> Optional[Tuple[Endpoint, Endpoint]]:
        """(client, server), or None while that is not known yet."""
        streams = sorted((key for key in self.directions if self.carried_data.get(key)),
                         key=lambda key: self.first_frame.get(key, 0))
        if not streams:
            return None  # no data: nothing to read
        a, b = streams[0]
        reverse = (b, a) if (b, a) in streams else None
        if self.directions[(a, b)].initiated or (reverse and self.directions[reverse].initiated):
            client_first = self.directions[(a, b)].initiated
        elif not self._known((a, b), opens, forced):
            return None
        elif opens(self.heads.get((a, b), b"")):
            client_first = True
        elif reverse is None and not (forced or self._ended((b, a))):
            return None  # the other side may yet open the connection
        elif reverse is not None and not self._known(reverse, opens, forced):
            return None
        elif reverse is not None and opens(self.heads.get(reverse, b"")):
            client_first = False
        else:
            client_first = b[1] in server_ports
        return ((a, b) if client_first else (b, a))

    def _known(self, key, opens, forced: bool) -> bool:
        """Whether what ``opens`` says of the direction's first bytes is final: it saw
        OPENING_BYTES of them, or all there will be, or already said yes (a protocol's opening
        is a fixed prefix: more bytes do not undo it)."""
        head = self.heads.get(key, b"")
        return forced or len(head) >= OPENING_BYTES or self._ended(key) or opens(head)

    def _ended(self, key) -> bool:
        reader = self.readers.get(key)
        return reader is not None and reader.ended

    def read(self) -> Iterator[Tuple[int, Any, int]]:
        """What the readers make of the bytes they hold (client's first: the server's may wait for it)."""
        if self.recognised:
            for reader in list(self.readers.values()):
                if reader.buffer or reader.ended:
                    yield from reader.read()

    def held_bytes(self) -> int:
        return sum(d.early_bytes for d in self.directions.values()) + sum(len(r.buffer) for r in self.readers.values())

    def waiting_frame(self) -> Optional[int]:
        """The first frame whose bytes the connection still holds unread: what it may yet give
        is placed no earlier."""
        found = [f for f in itertools.chain((d.waiting_frame for d in self.directions.values() if d.early_bytes),
                                            (r.waiting_frame for r in self.readers.values() if r.buffer))
                 if f is not None]
        return min(found) if found else None

    def force(self, opens, server_ports, readers: Readers) -> Iterator[Tuple[int, Any, int]]:
        """It holds the most of all connections, and all together hold too much: what waits
        behind a hole is lost, a stream whose SYN was not seen starts, the connection is
        recognised with what is known, its readers stop waiting; failing all those, its fullest
        reader overflows."""
        before = self.held_bytes()
        for key, direction in list(self.directions.items()):
            if direction.early_bytes:
                self._hand_on(key, direction.end())
        self.recognise(opens, server_ports, readers, forced=True)
        yield from self.read()
        if self.held_bytes() >= before and self.recognised:
            for reader in self.readers.values():
                reader.stop_waiting()
            yield from self.read()
        if self.held_bytes() >= before and self.readers:
            fullest = max(self.readers.values(), key=lambda r: len(r.buffer))
            yield from fullest.overflow()


def _address(ip: bytes) -> str:
    return socket.inet_ntop(socket.AF_INET6 if len(ip) == 16 else socket.AF_INET, ip)


def read_connections(path: str, opens: Callable[[bytes], bool], server_ports: Collection[int],
                     readers: Readers) -> Iterator[Any]:
    """What ``readers`` make of the protocol's connections in the capture, in capture order: by
    the frame that carried an item's first byte, the items of one direction in stream order. A
    connection is the protocol's when its client stream starts as ``opens`` recognises, or its
    server listens on one of ``server_ports``. A frame that cannot be read ends the capture: what
    the streams hold is read, then its ``PcapFormatError`` is raised."""
    import dpkt
    limit = max_record_bytes()
    links: Dict[Tuple[Endpoint, Endpoint], _Link] = {}
    ready: List[Tuple[int, int, Any]] = []  # items read, not yet in order: (frame number, count, item)
    order = itertools.count()
    waiting: List[Tuple[int, int]] = []  # (frame number, link number) as links last said; lazily updated
    said: Dict[int, Optional[int]] = {}  # link number -> its waiting frame as last said
    totals = {"held": 0, "ready": 0}

    def collect(link: _Link, items: Iterator[Tuple[int, Any, int]]) -> None:
        for number, item, size in items:
            heapq.heappush(ready, (number, next(order), item, size))
            totals["ready"] += size

    def update(link: _Link, held_before: int) -> None:
        held = link.held_bytes()
        totals["held"] += held - held_before
        frame = link.waiting_frame() if held else None
        if frame != said.get(link.number):
            said[link.number] = frame
            if frame is not None:
                heapq.heappush(waiting, (frame, link.number))

    def lowest_waiting() -> Optional[int]:
        while waiting and said.get(waiting[0][1]) != waiting[0][0]:
            heapq.heappop(waiting)
        return waiting[0][0] if waiting else None

    def release(below: Optional[int]) -> Iterator[Any]:
        while ready and (below is None or ready[0][0] < below or totals["ready"] > limit):
            _, _, item, size = heapq.heappop(ready)
            totals["ready"] -= size
            yield item

    failure: Optional[CmiFormatError] = None
    try:
        for frame, ip in _tcp_packets(path):
            tcp = ip.data
            source, destination = (_address(ip.src), tcp.sport), (_address(ip.dst), tcp.dport)
            pair = (source, destination) if source <= destination else (destination, source)
            link = links.get(pair)
            if link is None:
                link = links[pair] = _Link(len(links), limit)
            if link.ignored:
                continue
            held_before = link.held_bytes()
            syn, ack = bool(tcp.flags & dpkt.tcp.TH_SYN), bool(tcp.flags & dpkt.tcp.TH_ACK)
            link.add(source, destination, tcp.seq, syn, bytes(tcp.data), frame, initiates=syn and not ack)
            link.recognise(opens, server_ports, readers)
            collect(link, link.read())
            update(link, held_before)
            while totals["held"] > limit:
                fullest = max((lk for lk in links.values() if not lk.ignored), key=_Link.held_bytes)
                held_before = fullest.held_bytes()
                if not held_before:
                    break
                collect(fullest, fullest.force(opens, server_ports, readers))
                update(fullest, held_before)
            below = lowest_waiting()
            yield from release(frame.number + 1 if below is None else min(below, frame.number + 1))
    except CmiFormatError as e:  # the frames before it are read: what their streams hold is reported
        failure = e
    for link in links.values():
        if not link.ignored:
            link.end()
            link.recognise(opens, server_ports, readers, forced=True)
            collect(link, link.read())
    yield from release(None)
    if failure is not None:
        raise failure


class _PieceReader:
    """The capture file as dpkt reads it, except that ``read(n)`` asks the file for at most
    ``READ_PIECE`` bytes at a time: dpkt reads a record by the length its header declares (a
    pcap caplen, a pcapng block length), and a file object allocates what it is asked for before
    it finds the file shorter. Memory then follows the file, not what its headers claim, and a
    record may declare at most ``max_record_bytes()``. Counts what was read (``tell``): a
    decompressed stream cannot say where it is."""

    def __init__(self, f, path: str):
        self._f, self._path = f, path
        self.name = path
        self.position = 0

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            n = max_record_bytes() + 1
        if n > max_record_bytes():
            raise RecordTooLargeError(f"a pcap record declares {n} bytes, more than read option maxRecordBytes",
                                      Location(self._path, None, self.position))
        pieces = []
        while n > 0:
            piece = self._f.read(min(n, READ_PIECE))
            if not piece:
                break
            pieces.append(piece)
            n -= len(piece)
        data = b"".join(pieces)
        self.position += len(data)
        return data

    def tell(self) -> int:
        return self.position


def _link_decoders():
    import dpkt

    def raw_ip(frame: bytes):
        return (dpkt.ip6.IP6 if frame[:1] and frame[0] >> 4 == 6 else dpkt.ip.IP)(frame)

    # pcap link type -> how a frame of it gives its network-layer packet
    return {1: lambda f: dpkt.ethernet.Ethernet(f).data,  # Ethernet
            113: lambda f: dpkt.sll.SLL(f).data,  # Linux cooked capture v1
            276: lambda f: dpkt.sll2.SLL2(f).data,  # Linux cooked capture v2
            0: lambda f: dpkt.loopback.Loopback(f).data, 108: lambda f: dpkt.loopback.Loopback(f).data,  # BSD loopback
            12: raw_ip, 14: raw_ip, 101: raw_ip}


def _tcp_packets(path: str) -> Iterator[Tuple[Frame, object]]:
    """(frame, IP packet) of each frame of the capture that carries TCP, one frame at a time."""
    import dpkt
    decoders = _link_decoders()
    with open_capture(path) as opened:
        magic = opened.peek(4)[:4]
        f = _PieceReader(opened, path)
        try:
            reader = dpkt.pcapng.Reader(f) if magic == PCAPNG_MAGIC else dpkt.pcap.Reader(f)
        except (ValueError, dpkt.dpkt.Error) as e:
            raise PcapFormatError(f"not a readable pcap or pcapng file: {e}", Location(path, None, 0)) from None
        decode = decoders.get(reader.datalink())
        number, offset = 0, f.tell()
        iterator = iter(reader)
        while True:
            try:
                _, buf = next(iterator)
            except StopIteration:
                return
            except (ValueError, dpkt.dpkt.Error, struct.error) as e:
                raise PcapFormatError(f"frame {number + 1} cannot be read: {e}", Location(path, None, offset)) from None
            number += 1
            end = f.tell()
            frame = Frame(number, offset, end)
            offset = end
            if decode is None:
                continue  # a link we do not read carries no TCP we could place
            try:
                ip = decode(buf)
            except (dpkt.dpkt.Error, ValueError, IndexError):
                continue  # not IP over a link we read
            if isinstance(ip, (dpkt.ip.IP, dpkt.ip6.IP6)) and isinstance(ip.data, dpkt.tcp.TCP):
                yield frame, ip
