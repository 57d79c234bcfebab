"""Independent minimal parser for SAS CMI traffic in IBM MQ ``dmpmqmsg`` text dumps.

Written only from the specifications as docs/spec/cmi.md, docs/spec/sas-records.md and docs/spec/mq.md
(dmpmqmsg dumps, the MQMD) state them.  It shares no code with ``cmi_datasource``: the write-path
tests use it to check the project's writer byte by byte.  It is strict where docs/spec/cmi.md says
what a writer emits (NUL terminators present, the header consumed exactly).

    msgs = parse_dump(open(path, "rb").read())
    header = parse_header(msgs[0])
    ds = parse_dataset(header.long_size, header.order, msgs[0].ccsid, sequenced_payloads)
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field

HEADER_TYPE, SUBORDINATE_TYPE = 100000, 100001
CODECS = {1208: "utf-8", 819: "latin-1", 367: "ascii", 1252: "cp1252", 37: "cp037",
          500: "cp500", 273: "cp273", 1140: "cp1140", 437: "cp437", 850: "cp850"}


def codec(ccsid: int) -> str:
    return CODECS[ccsid]


# ---------------------------------------------------------------- dmpmqmsg text (docs/spec/mq.md#dmpmqmsg-text-dumps)
@dataclass
class Message:
    attrs: dict = field(default_factory=dict)
    data: bytearray = field(default_factory=bytearray)

    def _int(self, code, default):
        v = self.attrs.get(code, "").strip()
        return int(v) if v else default

    msg_type = property(lambda self: self._int("MST", 8))
    encoding = property(lambda self: self._int("ENC", 546))
    ccsid = property(lambda self: self._int("CCS", 0))
    correl_id = property(lambda self: bytes.fromhex(self.attrs.get("COI", "").strip() or "00" * 24))
    msg_id = property(lambda self: bytes.fromhex(self.attrs.get("MSI", "").strip() or "00" * 24))
    format = property(lambda self: self.attrs.get("FMT", " " * 8))
    payload = property(lambda self: bytes(self.data))

    @property
    def order(self) -> str:
        """struct byte order of the integers: Encoding & 0x0F, 1 big-endian, 2 little-endian."""
        return {1: ">", 2: "<"}[self.encoding & 0x0F]


def parse_dump(raw: bytes) -> list[Message]:
    msgs: list[Message] = []
    cur: Message | None = None
    in_data = False
    for line in raw.decode("latin-1").split("\n"):
        line = line.removesuffix("\r")
        if line.startswith("*"):
            continue
        if line.strip() == "":
            cur, in_data = None, False          # a blank line ends a message
            continue
        kind = line[0]
        if kind in "AN" and (cur is None or in_data):
            cur, in_data = Message(), False
            msgs.append(cur)
        if cur is None:
            raise ValueError(f"data before attributes: {line!r}")
        if kind == "A":
            cur.attrs[line[2:5]] = line[6:] if len(line) >= 7 else ""
        elif kind == "N":
            pass
        elif kind == "X":
            in_data = True
            hexpart = line[2:].split("<", 1)[0].strip()
            cur.data += bytes.fromhex(hexpart)
        elif kind == "S":
            in_data = True
            body = line[2:].strip()
            if body:
                assert body[0] == '"' and body[-1] == '"', line
                cur.data += body[1:-1].replace('~"', '"').replace("~~", "~").encode("latin-1")
        else:
            raise ValueError(f"unknown dump line: {line!r}")
    return msgs


# ---------------------------------------------------------------- wire primitives (docs/spec/cmi.md#primitive-types)
class Reader:
    def __init__(self, buf: bytes, order: str, long_size: int, charset: str):
        self.buf, self.pos, self.order, self.long_size, self.charset = buf, 0, order, long_size, charset

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise ValueError(f"truncated: need {n} at {self.pos} of {len(self.buf)}")
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def int(self) -> int:
        return struct.unpack(self.order + "i", self.take(4))[0]

    def short(self) -> int:
        return struct.unpack(self.order + "h", self.take(2))[0]

    def long(self) -> int:
        return struct.unpack(self.order + ("i" if self.long_size == 4 else "q"), self.take(self.long_size))[0]

    def string(self, length_reader) -> str:
        n = length_reader()
        s = self.take(n)
        if self.take(1) != b"\x00":
            raise ValueError(f"missing NUL terminator at {self.pos - 1}")
        return s.decode(self.charset)

    def istr(self) -> str:
        return self.string(self.int)

    def lstr(self) -> str:
        return self.string(self.long)

    @property
    def done(self) -> bool:
        return self.pos == len(self.buf)


# -------------------------------------------------------- attachment header (docs/spec/cmi.md#the-attachment-header)
@dataclass
class Attachment:
    type: int
    correl_id: bytes
    qualifier1: str
    qualifier2: str
    description: str
    minor: int
    major: int

    @property
    def key(self) -> bytes:
        return self.correl_id[:16]


@dataclass
class Header:
    header_correl_id: bytes
    original_msg_type: int
    original_correl_id: bytes
    message_correl_id: bytes
    attachments: list
    long_size: int
    order: str


def parse_header(msg: Message, long_size: int | None = None) -> Header:
    """Trial parse with long = 4 and 8 bytes: the one that consumes the payload exactly wins."""
    found = []
    for ls in ([long_size] if long_size else [4, 8]):
        r = Reader(msg.payload, msg.order, ls, codec(msg.ccsid))
        try:
            hc, omt, oc, mc = r.take(24), r.long(), r.take(24), r.take(24)
            atts = [Attachment(r.int(), r.take(24), r.istr(), r.istr(), r.istr(), r.int(), r.int())
                    for _ in range(r.int())]
        except (ValueError, UnicodeDecodeError):
            continue
        if r.done:
            found.append(Header(hc, omt, oc, mc, atts, ls, msg.order))
    if len(found) != 1:
        raise ValueError(f"header does not parse exactly with one long size ({len(found)} fits)")
    return found[0]


# ---------------------------------------------------------------- SAS dataset (docs/spec/sas-records.md)
@dataclass
class Variable:
    name: str
    format: str
    informat: str
    label: str
    type_byte: int
    length: int
    format_width: int
    format_decimals: int
    informat_width: int
    informat_decimals: int
    nsort: int

    @property
    def numeric(self) -> bool:
        return self.type_byte in (1, ord("1"), 0xF1)


@dataclass
class Dataset:
    dat: dict
    variables: list
    obs_stream: bytes
    record_types: list          # record type int of each sequenced message, in order
    message_bodies: list        # payload of each sequenced message without its type int


def parse_dataset(payloads: list[bytes], order: str, long_size: int, ccsid: int) -> Dataset:
    types = [struct.unpack(order + "i", p[:4])[0] for p in payloads]
    bodies = [p[4:] for p in payloads]
    streams: dict[int, bytes] = {}
    for t, b in zip(types, bodies):
        streams[t] = streams.get(t, b"") + b
    cs = codec(ccsid)
    r = Reader(streams[1], order, long_size, cs)
    dat = {"version": r.int(), "type": r.lstr(), "label": r.lstr(), "nobs": r.long(),
           "nvars": r.long(), "obslen": r.long(), "compress": r.lstr(), "reuse": r.take(1),
           "encrypt": r.lstr(), "sortkeys": r.long(), "collate": r.lstr(), "sortflags": r.short(),
           "passwords": [(r.int(), r.take(4)) for _ in range(3)]}
    if not r.done:
        raise ValueError(f"dataset definition has {len(r.buf) - r.pos} trailing bytes")
    r = Reader(streams.get(2, b""), order, long_size, cs)
    variables = []
    for _ in range(dat["nvars"]):
        name, fmt, infmt, label = r.lstr(), r.lstr(), r.lstr(), r.lstr()
        variables.append(Variable(name, fmt, infmt, label, r.take(1)[0], r.long(), r.long(), r.long(),
                                  r.long(), r.long(), r.take(1)[0]))
    if not r.done:
        raise ValueError(f"variable definitions have {len(r.buf) - r.pos} trailing bytes")
    return Dataset(dat, variables, streams.get(3, b""), types, bodies)


# ---------------------------------------------------------------- SAS values (docs/spec/sas-records.md#numeric-values)
MISSING = object()


def big_endian_view(raw: bytes, encoding: int) -> bytes:
    """The 8 bytes of the double, most significant first, low-order bytes zero-filled."""
    if encoding & 0xF00 == 0x200:                    # IEEE little-endian: stored bytes are the last
        return raw[::-1] + bytes(8 - len(raw))
    return raw + bytes(8 - len(raw))


def decode_number(raw: bytes, encoding: int):
    """A float, or ``MISSING`` (IEEE NaN, or S/390 zero fraction under a non-zero first byte)."""
    b = big_endian_view(raw, encoding)
    if encoding & 0xF00 == 0x300:                    # S/390 hexadecimal floating point
        frac = int.from_bytes(b[1:], "big")
        if frac == 0:
            return MISSING if b[0] else 0.0
        sign = -1.0 if b[0] & 0x80 else 1.0
        return sign * frac / float(1 << 56) * 16.0 ** ((b[0] & 0x7F) - 64)
    v = struct.unpack(">d", b)[0]
    return MISSING if math.isnan(v) else v


def decode_rows(ds: Dataset, encoding: int, ccsid: int) -> list[list]:
    """Rows of python values: floats, MISSING, and strings with trailing blanks/NULs removed."""
    obslen, stream, cs = ds.dat["obslen"], ds.obs_stream, codec(ccsid)
    if obslen <= 0 or len(stream) % obslen:
        raise ValueError(f"observation stream of {len(stream)} bytes is not a multiple of {obslen}")
    rows = []
    for i in range(len(stream) // obslen):
        rec, off, row = stream[i * obslen:(i + 1) * obslen], 0, []
        for v in ds.variables:
            raw = rec[off:off + v.length]
            off += v.length
            row.append(decode_number(raw, encoding) if v.numeric
                       else raw.decode(cs).rstrip(" \x00"))
        rows.append(row)
    return rows
