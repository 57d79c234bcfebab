"""TIB/Rendezvous messages for the tests, built field by field from the tables of docs/spec/tibrv.md and raimd's
wire rules (docs/spec/tibrv.md#the-wire-format), with none of the package's code.

On the one-byte size: raimd's doc/msg_format.md draws it counting itself, but its reader
(``RvFieldIter::unpack``) and writer (``pack_rv_size``) take it as the data's length, as the
reference (docs/spec/tibrv.md#the-wire-format) does; the bytes here follow the code.
"""
from __future__ import annotations

import struct

MAGIC = b"\x99\x55\xee\xaa"
SAS_MISSING = struct.pack(">Q", 0xFFFFFE0000000000)  # "." as a big-endian double


def field(name: str, fid, code: int, data: bytes, scalar: bool = False) -> bytes:
    named = name.encode() + b"\0" + (fid.to_bytes(2, "big") if fid is not None else b"")
    if code == 1:  # a nested message: 0x7A, then the message itself, whose own u32 size comes first
        size = b"\x7a"
    elif scalar or len(data) < 120:
        size = bytes([len(data)])
    elif len(data) + 2 < 30000:
        size = b"\x79" + (len(data) + 2).to_bytes(2, "big")
    else:
        size = b"\x7a" + (len(data) + 4).to_bytes(4, "big")
    return bytes([len(named)]) + named + bytes([code]) + size + data


def message(fields) -> bytes:
    body = b"".join(fields)
    return (8 + len(body)).to_bytes(4, "big") + MAGIC + body


def i32(name, fid, value):
    return field(name, fid, 11, struct.pack(">i", value), scalar=True)


def i16(name, fid, value):
    return field(name, fid, 11, struct.pack(">h", value), scalar=True)


def u32(name, fid, value):
    return field(name, fid, 12, struct.pack(">I", value), scalar=True)


def f64(name, fid, value):
    return field(name, fid, 13, value if isinstance(value, bytes) else struct.pack(">d", value), scalar=True)


def string(name, fid, text):
    return field(name, fid, 8, (text if isinstance(text, bytes) else text.encode("utf-8")) + b"\0")


def opaque(name, fid, data):
    return field(name, fid, 7, data)


BLANKS = " " * 24


def hdr(attachments, message_correl=BLANKS):
    """attachments: (type, correlid, qualifier 1, qualifier 2, description) each (docs/spec/tibrv.md#hdr)."""
    fields = [string("HDR", 1, BLANKS), u32("HDR", 2, 0), string("HDR", 3, BLANKS), string("HDR", 4, message_correl),
              i32("HDR", 5, len(attachments))]
    fid = 6
    for kind, correl, q1, q2, description in attachments:
        fields += [i32("HDR", fid, kind), string("HDR", fid + 1, correl), i32("HDR", fid + 2, len(q1)),
                   string("HDR", fid + 3, q1), i32("HDR", fid + 4, len(q2)), string("HDR", fid + 5, q2),
                   i32("HDR", fid + 6, len(description)), string("HDR", fid + 7, description),
                   i32("HDR", fid + 8, 0), i32("HDR", fid + 9, 1)]
        fid += 10
    return message(fields)


def msg(values):
    """docs/spec/tibrv.md#msg-and-data: the count, then (data type, value) per parameter."""
    fields = [i32("MSG", 1, len(values))]
    for n, (kind, value) in enumerate(values):
        fields.append(i32("MSG", 2 + 2 * n, kind))
        fields.append({1: i16, 2: i32, 3: f64, 4: string}[kind]("MSG", 3 + 2 * n, value))
    return message(fields)


def dat(nobs, nvars, obs_length, label="RV rows"):
    s = lambda fid, text: [i32("DAT", fid, len(text)), string("DAT", fid + 1, text)]  # noqa: E731
    return message([i32("DAT", 1, 1), i32("DAT", 2, 0), *s(3, "DATA"), *s(5, label), i32("DAT", 7, nobs),
                    i32("DAT", 8, nvars), i32("DAT", 9, obs_length), *s(10, ""), string("DAT", 12, "R"),
                    *s(13, ""), i32("DAT", 15, 0), i32("DAT", 16, 1), string("DAT", 17, ""), i16("DAT", 18, 0),
                    i32("DAT", 19, 0), opaque("DAT", 20, bytes(4)), i32("DAT", 21, 0), opaque("DAT", 22, bytes(4)),
                    i32("DAT", 23, 0), opaque("DAT", 24, bytes(4)), i32("DAT", 25, 0)])


def var(variables):
    """variables: (name, format, width, decimals, label, numeric, length) each (docs/spec/tibrv.md#var)."""
    fields = [i32("VAR", 1, len(variables)), i32("VAR", 2, 2)]
    fid = 3
    for name, fmt, width, decimals, label, numeric, length in variables:
        for text in (name, fmt, "", label):
            fields += [i32("VAR", fid, len(text)), string("VAR", fid + 1, text)]
            fid += 2
        fields += [string("VAR", fid, "1" if numeric else "2"), i32("VAR", fid + 1, length),
                   i32("VAR", fid + 2, width), i32("VAR", fid + 3, decimals), i32("VAR", fid + 4, 0),
                   i32("VAR", fid + 5, 0), string("VAR", fid + 6, "")]
        fid += 7
    return message(fields)


def ato(rows, numeric):
    """docs/spec/tibrv.md#ato: the count, record type 3, then (vtype, value) per variable per observation."""
    fields = [i32("ATO", 1, len(rows)), i32("ATO", 2, 3)]
    fid = 3
    for row in rows:
        for value, is_numeric in zip(row, numeric):
            fields.append(i32("ATO", fid, 1 if is_numeric else 2))
            fields.append(f64("ATO", fid + 1, value) if is_numeric else string("ATO", fid + 1, value))
            fid += 2
    return message(fields)


def lst(count):
    return message([i32("LST", 1, count)])


def fdc(lrecl, size):
    return message([i32("FDC", 1, lrecl), i32("FDC", 2, size)])


def atx(lines):
    fields = [i32("ATX", 1, len(lines))]
    for n, line in enumerate(lines):
        fields += [i32("ATX", 2 + 2 * n, len(line)), string("ATX", 3 + 2 * n, line)]
    return message(fields)
