"""SAP DB / MaxDB packets for the tests, written from docs/spec/sapdb.md with struct
alone (not with the package's layout tables), so that the reader is checked against the spec."""
from __future__ import annotations

import struct

NORMAL, FULL, PART = 1, 2, 3


def i2(value: int, swap: int) -> bytes:
    return struct.pack("<h" if swap == FULL else ">h", value)


def i4(value: int, swap: int) -> bytes:
    if swap == FULL:
        return struct.pack("<i", value)
    big = struct.pack(">i", value)
    return big if swap == NORMAL else big[2:] + big[:2]  # part swapped: the 16-bit halves exchanged


def part(kind: int, buf: bytes, swap: int = FULL, arg_count: int = 1, size: int = 28136, attributes: int = 0,
         buf_len=None) -> bytes:
    header = bytes([kind, attributes]) + i2(arg_count, swap) + i4(0, swap) + i4(
        len(buf) if buf_len is None else buf_len, swap) + i4(size, swap)
    body = header + buf
    return body + b"\0" * (-len(body) % 8)


def command_segment(parts, mess_type: int = 2, swap: int = FULL, kind: int = 1, with_info: bool = True,
                    mass_cmd: bool = False, sqlmode: int = 1, producer: int = 1, segm_len=None,
                    no_of_parts=None) -> bytes:
    body = b"".join(parts)
    flags = bytes([0, 0, 0, int(with_info), int(mass_cmd), 0])
    header = (i4(40 + len(body) if segm_len is None else segm_len, swap) + i4(0, swap)
              + i2(len(parts) if no_of_parts is None else no_of_parts, swap) + i2(1, swap)
              + bytes([kind, mess_type, sqlmode, producer]) + flags + b"\0\0" + b"\0" * 16)
    assert len(header) == 40
    return header + body


def return_segment(parts, returncode: int = 0, sqlstate: bytes = b"00000", errorpos: int = 0,
                   function_code: int = 0, swap: int = FULL, kind: int = 2) -> bytes:
    body = b"".join(parts)
    header = (i4(40 + len(body), swap) + i4(0, swap) + i2(len(parts), swap) + i2(1, swap) + bytes([kind])
              + sqlstate + i2(returncode, swap) + i4(errorpos, swap) + b"\0\0" + b"\0\0" + i2(function_code, swap)
              + b"\0\0" + b"\0" * 8)
    assert len(header) == 40
    return header + body


def packet(segments, swap: int = FULL, mess_code: int = 0, varpart_len=None, no_of_segm=None) -> bytes:
    varpart = b"".join(segments)
    return (bytes([mess_code, swap]) + b"\0\0" + b"70205" + b"XCI" + i4(len(varpart) + 1000, swap)
            + i4(len(varpart) if varpart_len is None else varpart_len, swap) + b"\0\0"
            + i2(len(segments) if no_of_segm is None else no_of_segm, swap) + b"\0" * 8 + varpart)


def rte(mess_class: int, body: bytes, big_endian: bool = False, residual: int = 0, total=None,
        act_send_len=None) -> bytes:
    """A 24-byte RTE header (in the sender's byte order) and ``body``."""
    o = ">" if big_endian else "<"
    size = 24 + len(body)
    return (struct.pack(o + "iBBBBiih", size if act_send_len is None else act_send_len, 3, mess_class, 0, residual,
                        7, 9, 0)
            + bytes([3 if big_endian else 4, 0]) + struct.pack(o + "i", total or size) + body)


def param_info(io_type: int, data_type: int, length: int, in_out_len: int, bufpos: int, frac: int = 0,
               swap: int = FULL, mode: int = 2) -> bytes:
    return bytes([mode, io_type, data_type, frac]) + i2(length, swap) + i2(in_out_len, swap) + i4(bufpos, swap)


def column_names(*names: bytes) -> bytes:
    """A columnnames part's bytes (docs/spec/sapdb.md#column-names): each name's length in bytes, then the name."""
    return b"".join(bytes([len(name)]) + name for name in names)


# docs/spec/sapdb.md#examples, example 1: a dbs command with a typing error, and the kernel's -3014.
EXAMPLE_1_SQL = b"SELECT EMPNAME, EMPNO FROM EMP WHRE FIRST_NAME = 'Martin'"
EXAMPLE_1_REQUEST = packet([command_segment([part(3, EXAMPLE_1_SQL, size=28136)], mess_type=2)])
EXAMPLE_1_REPLY = packet([return_segment([part(6, b"Invalid end of SQL statement", size=32080)], returncode=-3014,
                                         sqlstate=b"42000", errorpos=37, function_code=4)])

# docs/spec/sapdb.md#examples, example 2 (SAP's Example 2.2): the execute of
# "SELECT ... INTO :NUMB, :TIME FROM T WHERE KEYCOL = :KEYC", after
# its parse (not in SAP's excerpt: the parse id and the shortinfo the kernel would send).
PARSE_ID = bytes.fromhex("00000019 00000601 3C000000")
EXAMPLE_2_SQL = b"SELECT NUMB, TIME INTO :NUMB, :TIME FROM T WHERE KEYCOL = :KEYC"
EXAMPLE_2_SHORTINFO = (param_info(0, 2, 8, 9, 1)  # KEYC: input CHAR(8)
                       + param_info(1, 0, 12, 8, 1)  # NUMB: output FIXED(12)
                       + param_info(1, 11, 8, 9, 9))  # TIME: output TIME, internal form "00HHMMSS"
EXAMPLE_2_PARSE = packet([command_segment([part(3, EXAMPLE_2_SQL)], mess_type=3)])
EXAMPLE_2_PARSE_REPLY = packet([return_segment([part(10, PARSE_ID), part(14, EXAMPLE_2_SHORTINFO, arg_count=3)],
                                               function_code=244)])
# The same parse reply as the kernel sends it for a query: the names of the output columns too.
EXAMPLE_2_PARSE_REPLY_NAMED = packet([return_segment([part(10, PARSE_ID), part(14, EXAMPLE_2_SHORTINFO, arg_count=3),
                                                      part(2, column_names(b"NUMB", b"TIME"), arg_count=2)],
                                                     function_code=244)])
EXAMPLE_2_EXECUTE = packet([command_segment([part(10, PARSE_ID, size=28136), part(5, b" keyval1 ", size=28104)],
                                            mess_type=13)])
EXAMPLE_2_REPLY = packet([return_segment([part(12, bytes.fromhex("00C11000000000"), size=32096),
                                          part(5, bytes.fromhex("00C44711 00000000 20303031 34333934 34"),
                                               size=32072)], function_code=244)])
