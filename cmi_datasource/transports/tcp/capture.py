"""pcap and pcapng captures (tcpdump, Wireshark) -> TCP connections, each direction one stream.

Frames are read by dpkt (Ethernet, Linux cooked v1/v2 as ``tcpdump -i any`` writes, BSD loopback
and raw IP; IPv4 and IPv6); segments are placed into streams by ``reassembly.py``. A connection's
client is the side that sent the SYN; in a capture that began after it, the side whose stream
starts the way the protocol's clients start (``opens``), else the side not on a server port.
"""
from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from typing import Callable, Collection, Dict, Iterator, List, Optional, Tuple

from ...containers import decompressing, open_capture
from ...errors import CmiFormatError, CmiOptionError, Location
from .reassembly import Endpoint, Frame, Reassembler, Stream

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
    to_server: Optional[Stream]  # what the client sent, None when nothing was captured
    to_client: Optional[Stream]

    @property
    def name(self) -> str:
        return f"{self.client[0]}:{self.client[1]} -> {self.server[0]}:{self.server[1]}"


class _PieceReader:
    """The capture file as dpkt reads it, except that ``read(n)`` asks the file for at most
    ``READ_PIECE`` bytes at a time: dpkt reads a record by the length its header declares (a
    pcap caplen, a pcapng block length), and a file object allocates what it is asked for before
    it finds the file shorter. Memory then follows the file, not what its headers claim."""

    def __init__(self, f):
        self._f = f
        self.name = getattr(f, "name", "<capture>")

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            return self._f.read()
        pieces = []
        while n > 0:
            piece = self._f.read(min(n, READ_PIECE))
            if not piece:
                break
            pieces.append(piece)
            n -= len(piece)
        return b"".join(pieces)

    def tell(self) -> int:
        return self._f.tell()

    def seek(self, *args) -> int:
        return self._f.seek(*args)


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


def _address(ip: bytes) -> str:
    return socket.inet_ntop(socket.AF_INET6 if len(ip) == 16 else socket.AF_INET, ip)


def _tcp_packets(path: str) -> Iterator[Tuple[Frame, object]]:
    """(frame, IP packet) of each frame of the capture that carries TCP."""
    import dpkt
    decoders = _link_decoders()
    with open_capture(path) as opened, decompressing(path):
        f = _PieceReader(opened)
        magic = f.read(4)
        f.seek(0)
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


def read_streams(path: str) -> Dict[Tuple[Endpoint, Endpoint], Stream]:
    """Every direction of every TCP connection in the capture that carried data."""
    import dpkt
    reassembler = Reassembler()
    for frame, ip in _tcp_packets(path):
        tcp = ip.data
        source, destination = (_address(ip.src), tcp.sport), (_address(ip.dst), tcp.dport)
        syn, ack = bool(tcp.flags & dpkt.tcp.TH_SYN), bool(tcp.flags & dpkt.tcp.TH_ACK)
        reassembler.add(source, destination, tcp.seq, syn, bytes(tcp.data), frame, initiates=syn and not ack)
    return {(s.source, s.destination): s for s in reassembler.streams()}


def read_connections(path: str, opens: Callable[[bytes], bool], server_ports: Collection[int]) -> List[Connection]:
    """The connections of one protocol in the capture: those whose client stream starts as
    ``opens`` recognises, or whose server listens on one of ``server_ports``; in the order their
    first data was captured."""
    streams = read_streams(path)
    found: List[Connection] = []
    seen = set()
    # A stream whose first bytes were lost holds no frame: it sorts first, and says so in its gap.
    for (a, b), stream in sorted(streams.items(), key=lambda item: item[1].frames[0].number if item[1].frames else 0):
        if (a, b) in seen:
            continue
        seen.update({(a, b), (b, a)})
        reverse = streams.get((b, a))
        client_first = _client_first(stream, reverse, opens, b, server_ports)
        client, server = (a, b) if client_first else (b, a)
        to_server, to_client = (stream, reverse) if client_first else (reverse, stream)
        if (to_server is not None and opens(to_server.data[:OPENING_BYTES])) or server[1] in server_ports:
            found.append(Connection(client, server, to_server, to_client))
    return found


def _client_first(stream: Stream, reverse: Optional[Stream], opens: Callable[[bytes], bool], destination: Endpoint,
                  server_ports: Collection[int]) -> bool:
    """Whether ``stream`` is the client's direction."""
    if stream.initiated or (reverse is not None and reverse.initiated):
        return stream.initiated
    if opens(stream.data[:OPENING_BYTES]):
        return True
    if reverse is not None and opens(reverse.data[:OPENING_BYTES]):
        return False
    return destination[1] in server_ports
