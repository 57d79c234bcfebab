"""Independent minimal encoder for SAS CMI traffic in IBM MQ ``dmpmqmsg`` text dumps.

Written only from the specifications as docs/spec/cmi.md, docs/spec/sas-records.md and docs/spec/mq.md
(dmpmqmsg dumps, the MQMD) state them.  It deliberately shares no code with ``cmi_datasource``: the
tests use it to check that the project's reader decodes an independently produced capture.

    enc = Encoder(encoding=546, long_size=4, nul=True, seq_big_endian=True, ccsid=1208)
    msgs = enc.transmission(b"\\x11" * 24, b"\\x22" * 24, b"app message", [
        enc.dataset_attachment(KEY, "WORK", "CLASS", variables, rows, max_payload=100),
        enc.file_attachment(KEY2, "d:\\\\a.txt", [b"line 1", b"line 2"], binary=False)])
    write_dump(path, msgs)
"""
from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field

HEADER_TYPE, SUBORDINATE_TYPE = 100000, 100001
DATASET, TEXT_FILE, BINARY_FILE = 1, 2, 3
CODECS = {1208: "utf-8", 819: "latin-1"}


@dataclass(frozen=True)
class Missing:
    """A SAS missing numeric value: tag '.' (ordinary), '_' or 'A'..'Z'."""
    tag: str = "."


def missing_high_bytes(tag: str) -> bytes:
    """Big-endian view of a missing value: FF FF <~tag> 00 ... (docs/spec/sas-records.md#missing-values)."""
    code = {".": 1, "_": 0}.get(tag)
    if code is None:
        code = ord(tag.upper()) - ord("A") + 2
    return bytes([0xFF, 0xFF, ~code & 0xFF, 0, 0, 0, 0, 0])


def truncated(value: float, length: int) -> float:
    """The value a reader must see after keeping only the `length` high-order bytes."""
    return struct.unpack(">d", struct.pack(">d", value)[:length] + bytes(8 - length))[0]


@dataclass
class Var:
    name: str
    type: str = "num"            # 'num' or 'char'
    length: int = 8
    format: str = ""             # format name without width, e.g. "DATE"
    format_width: int = 0
    format_decimals: int = 0
    informat: str = ""
    informat_width: int = 0
    informat_decimals: int = 0
    label: str = ""


@dataclass
class Message:
    msgtype: int
    correlid: bytes               # 24 bytes
    payload: bytes
    encoding: int = 546
    ccsid: int = 1208
    msgid: bytes = field(default_factory=lambda: bytes(24))


class Encoder:
    def __init__(self, encoding=546, long_size=4, nul=True, seq_big_endian=True, ccsid=1208,
                 ascii_type_flag=False):
        assert encoding & 0x0F in (1, 2) and long_size in (4, 8)
        self.encoding, self.long_size, self.nul = encoding, long_size, nul
        self.seq_big_endian, self.ccsid = seq_big_endian, ccsid
        self.ascii_type_flag = ascii_type_flag
        self.bo = "<" if encoding & 0x0F == 2 else ">"
        self._msgno = 0

    # -- primitives ---------------------------------------------------------------------------
    def i32(self, v): return struct.pack(self.bo + "i", v)
    def i16(self, v): return struct.pack(self.bo + "h", v)
    def long(self, v): return struct.pack(self.bo + ("i" if self.long_size == 4 else "q"), v)
    def text(self, s): return s.encode(CODECS[self.ccsid])

    def string(self, s, length_field):
        """Length-prefixed string: length counts the characters; NUL follows when enabled."""
        raw = self.text(s)
        return length_field(len(raw)) + raw + (b"\x00" if self.nul else b"")

    def numeric(self, value, length):
        """SAS truncated double in this encoding's IEEE byte order (high-order bytes kept)."""
        big = missing_high_bytes(value.tag) if isinstance(value, Missing) else \
            struct.pack(">d", float(value))
        kept = big[:length]
        return kept if self.bo == ">" else kept[::-1]

    def char(self, value, length):
        raw = self.text(value if value is not None else "")
        assert len(raw) <= length, (value, length)
        return raw + b" " * (length - len(raw))

    # -- messages -----------------------------------------------------------------------------
    def message(self, msgtype, correlid, payload):
        self._msgno += 1
        msgid = b"AMQ IENC" + self._msgno.to_bytes(16, "big")
        return Message(msgtype, correlid, payload, self.encoding, self.ccsid, msgid)

    def seq_correlid(self, key, k):
        return key + k.to_bytes(4, "big" if self.seq_big_endian else "little") + bytes(4)

    def header_payload(self, header_cid, msg_cid, attachments, orig_type=1, orig_cid=bytes(24)):
        out = header_cid + self.long(orig_type) + orig_cid + msg_cid + self.i32(len(attachments))
        for a in attachments:
            out += self.i32(a["type"]) + a["key"] + bytes(8)
            for s in (a["q1"], a["q2"], a["description"]):
                out += self.string(s, self.i32)
            out += self.i32(a.get("minor", 0)) + self.i32(a.get("major", 0))
        return out

    def transmission(self, header_cid, msg_cid, app_message, attachments):
        """Writer order: header, application message, then per attachment sequenced 1..N, count."""
        msgs = [self.message(HEADER_TYPE, header_cid, self.header_payload(header_cid, msg_cid, attachments)),
                self.message(SUBORDINATE_TYPE, msg_cid, app_message)]
        for a in attachments:
            for k, payload in enumerate(a["payloads"], 1):
                msgs.append(self.message(SUBORDINATE_TYPE, self.seq_correlid(a["key"], k), payload))
            msgs.append(self.message(SUBORDINATE_TYPE, a["key"] + bytes(8), self.i32(len(a["payloads"]))))
        return msgs

    # -- SAS dataset attachment -----------------------------------------------------------------
    def dataset_definition(self, nobs, nvars, obslen, label="", dstype="DATA"):
        out = self.i32(0)                                          # version
        out += self.string(dstype, self.long) + self.string(label, self.long)
        out += self.long(nobs) + self.long(nvars) + self.long(obslen)
        out += self.string("NO", self.long) + b"N" + self.string("NO", self.long)
        out += self.long(0) + self.string("", self.long) + self.i16(0)
        for _ in range(3):                                         # read, write, alter passwords
            out += self.i32(0) + bytes(4)
        return out

    def variable_definitions(self, variables):
        out = b""
        for v in variables:
            for s in (v.name, v.format, v.informat, v.label):
                out += self.string(s, self.long)
            numeric = v.type == "num"
            out += (b"1" if numeric else b"2") if self.ascii_type_flag else (b"\x01" if numeric else b"\x02")
            for n in (v.length, v.format_width, v.format_decimals, v.informat_width, v.informat_decimals):
                out += self.long(n)
            out += b"\x00"                                          # nsort
        return out

    def observations(self, variables, rows, obslen):
        out = b""
        for row in rows:
            rec = b"".join(self.numeric(x, v.length) if v.type == "num" else self.char(x, v.length)
                           for v, x in zip(variables, row))
            out += rec + bytes(obslen - len(rec))
        return out

    def split(self, rtype, stream, max_payload):
        """Chunk a record stream over messages, each starting with the int record type."""
        step = max_payload - 4
        return [self.i32(rtype) + stream[i:i + step] for i in range(0, len(stream), step)]

    def dataset_attachment(self, key, library, member, variables, rows, label="", description="",
                           max_payload=32768, obs_padding=0):
        obslen = sum(v.length for v in variables) + obs_padding
        payloads = self.split(1, self.dataset_definition(len(rows), len(variables), obslen, label), max_payload)
        payloads += self.split(2, self.variable_definitions(variables), max_payload)
        if rows:
            payloads += self.split(3, self.observations(variables, rows, obslen), max_payload)
        return dict(type=DATASET, key=key, q1=library, q2=member, description=description, payloads=payloads)

    # -- external file attachment ---------------------------------------------------------------
    def file_attachment(self, key, filename, records, binary=False, description="", lrecl=None,
                        max_payload=32768, qualifier="FILENAME"):
        size = sum(len(r) for r in records) + (0 if binary else len(records))
        payloads = [self.i32(lrecl if lrecl is not None else max([len(r) for r in records] + [1]))
                    + self.i32(size)]
        current = b""
        for r in records:
            item = self.long(len(r)) + r
            assert len(item) <= max_payload, "a record must fit in one message"
            if current and len(current) + len(item) > max_payload:
                payloads.append(current)
                current = b""
            current += item
        if current:
            payloads.append(current)
        return dict(type=BINARY_FILE if binary else TEXT_FILE, key=key, q1=qualifier, q2=filename,
                    description=description, payloads=payloads)


# -- message list manipulation ----------------------------------------------------------------------
def shuffled(msgs, seed=0):
    out = list(msgs)
    random.Random(seed).shuffle(out)
    return out


def with_duplicates(msgs, indexes):
    return list(msgs) + [msgs[i] for i in indexes]


# -- dmpmqmsg text serialisation ----------------------------------------------------------------------
# (code, kind, length): d = decimal, x = uppercase hex of `length` bytes, c = characters blank padded
MQMD_FIELDS = [("VER", "d", 0), ("RPT", "d", 0), ("MST", "d", 0), ("EXP", "d", 0), ("FDB", "d", 0),
               ("ENC", "d", 0), ("CCS", "d", 0), ("FMT", "c", 8), ("PRI", "d", 0), ("PER", "d", 0),
               ("MSI", "x", 24), ("COI", "x", 24), ("BOC", "d", 0), ("RTQ", "c", 48), ("RTM", "c", 48),
               ("USR", "c", 12), ("ACC", "x", 32), ("AIX", "x", 32), ("PAT", "d", 0), ("PAN", "c", 28),
               ("PTD", "c", 8), ("PTT", "c", 8), ("AOX", "x", 4), ("GRP", "x", 24), ("MSQ", "d", 0),
               ("OFF", "d", 0), ("MSF", "d", 0), ("ORL", "d", 0)]


def mqmd_values(m: Message, index: int):
    return {"VER": 2, "RPT": 0, "MST": m.msgtype, "EXP": -1, "FDB": 0, "ENC": m.encoding,
            "CCS": m.ccsid, "FMT": "", "PRI": 0, "PER": 0, "MSI": m.msgid, "COI": m.correlid,
            "BOC": 0, "RTQ": "", "RTM": "QM1", "USR": "sasuser", "ACC": bytes(32), "AIX": b" " * 32,
            "PAT": 6, "PAN": "sas", "PTD": "20240131", "PTT": "%08d" % (12000000 + index),
            "AOX": b" " * 4, "GRP": bytes(24), "MSQ": 1, "OFF": 0, "MSF": 0, "ORL": -1}


def dump_text(msgs, width=25):
    lines = ["* QLOAD Version:8.0 Created:2024/01/31 12:00:00", "* Qmgr  = QM1", "* Queue = SAS.CMI", ""]
    for i, m in enumerate(msgs):
        lines.append("* Index %d" % (i + 1))
        values = mqmd_values(m, i)
        for code, kind, length in MQMD_FIELDS:
            v = values[code]
            if kind == "d":
                text = str(v)
            elif kind == "x":
                assert len(v) == length, code
                text = v.hex().upper()
            else:
                text = v.ljust(length)[:length]
            lines.append("A %s %s" % (code, text))
        for off in range(0, len(m.payload), width):
            lines.append("X " + m.payload[off:off + width].hex().upper())
        lines.append("")
    return "\n".join(lines) + "\n"


def write_dump(path, msgs, width=25):
    with open(path, "w", encoding="latin-1", newline="\n") as f:
        f.write(dump_text(msgs, width))
    return str(path)
