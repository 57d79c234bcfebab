"""pcap files for the tests: TCP connections written frame by frame with dpkt (Ethernet, IPv4)."""
from __future__ import annotations

import socket

import dpkt

ACK, SYN, PSH = dpkt.tcp.TH_ACK, dpkt.tcp.TH_SYN, dpkt.tcp.TH_PUSH


def tcp_frame(src, dst, seq, flags, data=b""):
    tcp = dpkt.tcp.TCP(sport=src[1], dport=dst[1], seq=seq, ack=1, flags=flags, data=data)
    ip = dpkt.ip.IP(src=socket.inet_aton(src[0]), dst=socket.inet_aton(dst[0]), p=dpkt.ip.IP_PROTO_TCP, data=tcp)
    return bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip))


class Conversation:
    """Frames of one TCP connection: the handshake, then each side's bytes cut into segments."""

    def __init__(self, client, server, isn=(1000, 5000), handshake=True):
        self.client, self.server = client, server
        self.seq = {client: isn[0] + 1, server: isn[1] + 1}
        self.frames = []
        if handshake:
            self.frames += [tcp_frame(client, server, isn[0], SYN), tcp_frame(server, client, isn[1], SYN | ACK)]

    def send(self, sender, data: bytes, size: int = 300):
        receiver = self.server if sender == self.client else self.client
        for at in range(0, len(data), size):
            self.frames.append(tcp_frame(sender, receiver, self.seq[sender], ACK | PSH, data[at:at + size]))
            self.seq[sender] += len(data[at:at + size])


def write_pcap(path, frames, ng=False):
    with open(path, "wb") as f:
        writer = (dpkt.pcapng.Writer if ng else dpkt.pcap.Writer)(f)
        for n, frame in enumerate(frames):
            writer.writepkt(frame, ts=1700000000 + n / 1000)
    return str(path)
