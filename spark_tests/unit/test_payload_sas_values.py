"""SAS values on real bytes: numerics (docs/spec/sas-records.md#numeric-values), fixed-width text, temporal formats."""
from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest

from cmi_datasource.arrow.strings import fixed_width_from_strings, strings_from_fixed_width
from cmi_datasource.charsets import code_page
from cmi_datasource.encoding import FloatFormat, float_format, integer_order
from cmi_datasource.payload.sas_formats import temporal_kind
from cmi_datasource.payload.sas_numbers import decode_numbers, encode_numbers

BIG, LITTLE, S390 = FloatFormat.IEEE_BIG, FloatFormat.IEEE_LITTLE, FloatFormat.S390


def rows(*raw: bytes) -> np.ndarray:
    """(rows, width) uint8 matrix from equal-length byte strings."""
    assert len({len(r) for r in raw}) == 1
    return np.frombuffer(b"".join(raw), dtype=np.uint8).reshape(len(raw), -1)


def decode(raw_rows, fmt):
    values, missing = decode_numbers(rows(*raw_rows), fmt)
    return values, missing


def encode(values, fmt, width=8, missing=None):
    values = np.asarray(values, dtype=np.float64)
    missing = np.zeros(len(values), dtype=bool) if missing is None else np.asarray(missing)
    out = encode_numbers(values, missing, width, fmt)
    assert out.dtype == np.uint8 and out.shape == (len(values), width)
    return [bytes(r) for r in out]


# ---------------------------------------------------------------------------------------------
# A reference S/390 hexadecimal float codec in exact rational arithmetic.


def ibm_value(raw: bytes) -> Fraction:
    full = raw + bytes(8 - len(raw))
    sign = -1 if full[0] & 0x80 else 1
    exponent = (full[0] & 0x7F) - 64
    fraction = int.from_bytes(full[1:], "big")
    return sign * Fraction(fraction, 1 << 56) * Fraction(16) ** exponent


def ibm_bytes(x: float) -> bytes:
    if x == 0:
        return bytes(8)
    v = abs(Fraction(x))
    e = 0
    while v >= 1:
        v /= 16
        e += 1
    while v < Fraction(1, 16):
        v *= 16
        e -= 1
    fraction = v * (1 << 56)
    assert fraction.denominator == 1  # every double of moderate range is exact in 56 bits
    first = (0x80 if x < 0 else 0) | (e + 64)
    return bytes([first]) + int(fraction).to_bytes(7, "big")


# ---------------------------------------------------------------------------------------------
# Known bit patterns


KNOWN_IEEE = [
    (1.0, "3FF0000000000000"),
    (-2.5, "C004000000000000"),
    (0.1, "3FB999999999999A"),
    (0.0, "0000000000000000"),
    (1e300, "7E37E43C8800759C"),
    (-118.625, "C05DA80000000000"),
]

KNOWN_S390 = [
    (1.0, "4110000000000000"),
    (-118.625, "C276A00000000000"),
    (0.5, "4080000000000000"),
    (100.0, "4264000000000000"),
    (-1.0, "C110000000000000"),
    (0.0, "0000000000000000"),
    (1.0 / 16, "4010000000000000"),
    (0.1, "401999999999999A"),
    (65536.0, "4510000000000000"),
]


@pytest.mark.parametrize("value,hexbits", KNOWN_IEEE)
def test_ieee_known_bit_patterns(value, hexbits):
    big = bytes.fromhex(hexbits)
    assert big == struct.pack(">d", value)  # the table itself is right
    assert encode([value], BIG) == [big]
    assert encode([value], LITTLE) == [big[::-1]]
    v, m = decode([big], BIG)
    assert v[0] == value and not m[0]
    v, m = decode([big[::-1]], LITTLE)
    assert v[0] == value and not m[0]


@pytest.mark.parametrize("value,hexbits", KNOWN_S390)
def test_s390_known_bit_patterns(value, hexbits):
    raw = bytes.fromhex(hexbits)
    assert encode([value], S390) == [raw]
    v, m = decode([raw], S390)
    assert v[0] == value and not m[0]
    assert ibm_value(raw) == Fraction(value)


def test_s390_reference_agrees_on_many_values():
    rng = np.random.default_rng(390)
    values = np.concatenate([
        rng.normal(0, 1e6, 2000),
        rng.uniform(-1, 1, 2000),
        np.ldexp(rng.uniform(0.5, 1, 2000), rng.integers(-200, 200, 2000)),
        rng.integers(-10 ** 12, 10 ** 12, 2000).astype(np.float64),
        [1e-70, -1e-70, 7e75, -7e75, 2.0 ** -255, 123456789.125],
    ])
    encoded = encode(values, S390)
    for x, raw in zip(values, encoded):
        assert raw == ibm_bytes(float(x)), x
    decoded, missing = decode_numbers(rows(*encoded), S390)
    assert not missing.any()
    # A double always fits a 56-bit hexadecimal fraction: the round trip is exact.
    assert np.array_equal(decoded, values)


def test_s390_negative_zero_and_sign():
    assert encode([-0.0], S390) == [bytes(8)]
    v, m = decode([bytes.fromhex("8000000000000000")], S390)
    assert v[0] == 0 and not m[0]


def test_s390_out_of_range_is_an_error():
    with pytest.raises(ValueError):
        encode([1e77], S390)
    with pytest.raises(ValueError):
        encode([math.inf], S390)


# ---------------------------------------------------------------------------------------------
# Truncated numerics: the high-order bytes are stored


@pytest.mark.parametrize("width", [3, 4, 5, 6, 7, 8])
@pytest.mark.parametrize("value", [math.pi, -1234.5678, 1e-5, 86400.123456, 1 / 3])
def test_truncated_ieee(width, value):
    full = struct.pack(">d", value)
    expected = struct.unpack(">d", full[:width] + bytes(8 - width))[0]
    [big] = encode([value], BIG, width)
    [little] = encode([value], LITTLE, width)
    assert big == full[:width]
    assert little == full[::-1][8 - width:]  # little-endian: the last bytes are the high-order ones
    vb, mb = decode([big], BIG)
    vl, ml = decode([little], LITTLE)
    assert vb[0] == expected and vl[0] == expected
    assert not mb[0] and not ml[0]
    if width == 8:
        assert expected == value
    else:
        assert expected != value


@pytest.mark.parametrize("width", [2, 3, 4, 5, 6, 7, 8])
@pytest.mark.parametrize("value", [math.pi, -1234.5678, 1e-5, 86400.123456, 1 / 3])
def test_truncated_s390(width, value):
    full = ibm_bytes(value)
    [raw] = encode([value], S390, width)
    assert raw == full[:width]
    v, m = decode([raw], S390)
    assert not m[0]
    assert Fraction(v[0]) == ibm_value(full[:width])


def test_truncated_integers_stay_exact():
    # Small integers survive 3-byte storage in every format (SAS LENGTH 3 holds up to 8192).
    ints = np.arange(-8192, 8193, dtype=np.float64)
    for fmt in (BIG, LITTLE, S390):
        v, m = decode_numbers(encode_numbers(ints, np.zeros(len(ints), bool), 3, fmt), fmt)
        assert np.array_equal(v, ints), fmt
        assert not m.any()


def test_several_rows_at_once():
    values = [1.0, -2.5, 0.0, 3.75]
    for fmt in (BIG, LITTLE, S390):
        v, m = decode_numbers(rows(*encode(values, fmt)), fmt)
        assert v.tolist() == values and m.tolist() == [False] * 4


# ---------------------------------------------------------------------------------------------
# Missing values


IEEE_MISSING = {
    ".": "FFFFFE0000000000",
    "._": "FFFFFF0000000000",
    ".A": "FFFFFD0000000000",
    ".Z": "FFFFE40000000000",
}


@pytest.mark.parametrize("tag,hexbits", sorted(IEEE_MISSING.items()))
@pytest.mark.parametrize("width", [3, 8])
def test_ieee_missing_values(tag, hexbits, width):
    big = bytes.fromhex(hexbits)[:width]
    little = bytes.fromhex(hexbits)[::-1][8 - width:]
    v, m = decode([big, struct.pack(">d", 2.0)[:width]], BIG)
    assert m.tolist() == [True, False] and v[1] == 2.0
    v, m = decode([little, struct.pack("<d", 2.0)[8 - width:]], LITTLE)
    assert m.tolist() == [True, False] and v[1] == 2.0


def test_ieee_missing_tag_rule():
    # ReadStat: tag = ~(bits >> 40) & 0xFF; 0 -> "_", 1 -> ".", 2..27 -> A..Z: all are missing.
    raws = [bytes([0xFF, 0xFF, 0xFF - tag]) + bytes(5) for tag in range(28)]
    v, m = decode(raws, BIG)
    assert m.all()


@pytest.mark.parametrize("fmt", [BIG, LITTLE])
def test_ieee_missing_is_written_as_dot(fmt):
    out = encode([1.0, 0.0, float("nan")], fmt, 8, missing=[False, True, False])
    dot = bytes.fromhex("FFFFFE0000000000")
    expected_dot = dot if fmt is BIG else dot[::-1]
    assert out[1] == expected_dot and out[2] == expected_dot
    v, m = decode_numbers(rows(*out), fmt)
    assert m.tolist() == [False, True, True] and v[0] == 1.0
    [short] = encode([0.0], fmt, 3, missing=[True])
    assert short == (b"\xff\xff\xfe" if fmt is BIG else b"\xfe\xff\xff")


def test_s390_missing_values():
    raws = [
        bytes.fromhex("2E00000000000000"),  # .
        bytes.fromhex("4100000000000000"),  # .A (tag character, zero fraction)
        bytes.fromhex("5A00000000000000"),  # .Z
        bytes.fromhex("5F00000000000000"),  # ._
        bytes.fromhex("0000000000000000"),  # zero, not missing
        bytes.fromhex("4110000000000000"),  # 1.0
    ]
    v, m = decode(raws, S390)
    assert m.tolist() == [True, True, True, True, False, False]
    assert v[4] == 0.0 and v[5] == 1.0
    v, m = decode([r[:3] for r in raws], S390)
    assert m.tolist() == [True, True, True, True, False, False]


def test_s390_missing_is_written_as_dot():
    out = encode([5.0, 0.0, float("nan")], S390, 8, missing=[False, True, False])
    assert out[1] == out[2] == bytes.fromhex("2E00000000000000")
    assert out[0] == bytes.fromhex("4150000000000000")
    [short] = encode([0.0], S390, 4, missing=[True])
    assert short == b"\x2e\x00\x00\x00"


def test_encoding_numbers_choose_the_float_format():
    assert float_format(273) is BIG
    assert float_format(546) is LITTLE
    assert float_format(785) is S390
    assert integer_order(273) == ">" and integer_order(546) == "<" and integer_order(785) == ">"
    with pytest.raises(ValueError):
        float_format(0x411)  # TNS floats


# ---------------------------------------------------------------------------------------------
# Fixed-width character values


ALL_CCSIDS = [1208, 819, 1252, 437, 850, 37, 500, 1047, 1140, 273]
EBCDIC = {37, 500, 1047, 1140, 273}

# Known encodings per CCSID (from the code page charts).
KNOWN_TEXT = {
    1208: {"é": b"\xc3\xa9", "ß": b"\xc3\x9f", "€": b"\xe2\x82\xac", "A": b"A"},
    819: {"é": b"\xe9", "ß": b"\xdf", "Ä": b"\xc4", "A": b"A"},
    1252: {"é": b"\xe9", "ß": b"\xdf", "€": b"\x80", "A": b"A"},
    437: {"é": b"\x82", "ß": b"\xe1", "Ä": b"\x8e", "A": b"A"},
    850: {"é": b"\x82", "ß": b"\xe1", "Ä": b"\x8e", "A": b"A"},
    37: {"é": b"\x51", "ß": b"\x59", "[": b"\xba", "A": b"\xc1", "a": b"\x81", "0": b"\xf0"},
    500: {"é": b"\x51", "ß": b"\x59", "[": b"\x4a", "!": b"\x4f", "A": b"\xc1"},
    1047: {"é": b"\x51", "ß": b"\x59", "[": b"\xad", "]": b"\xbd", "A": b"\xc1"},
    1140: {"é": b"\x51", "ß": b"\x59", "€": b"\x9f", "A": b"\xc1"},
    273: {"é": b"\x51", "ß": b"\xa1", "ä": b"\xc0", "Ä": b"\x4a", "A": b"\xc1"},
}
LACKS = {819: "€", 437: "€", 850: "€", 37: "€", 500: "€", 1047: "€", 273: "€"}


def blank_of(ccsid: int) -> bytes:
    return b"\x40" if ccsid in EBCDIC else b" "


def known(ccsid: int, text: str) -> bytes:
    table = KNOWN_TEXT[ccsid]
    return b"".join(table[c] if c in table else c.encode("ascii") if ccsid not in EBCDIC
                    else _EBCDIC_ASCII[c] for c in text)


# Invariant characters in every EBCDIC code page listed.
_EBCDIC_ASCII = {" ": b"\x40", "A": b"\xc1", "B": b"\xc2", "x": b"\xa7", "y": b"\xa8", "1": b"\xf1",
                 "2": b"\xf2", ".": b"\x4b", "-": b"\x60"}


def pad(raw: bytes, width: int, filler: bytes) -> bytes:
    assert len(raw) <= width
    return raw + filler * (width - len(raw))


@pytest.mark.parametrize("ccsid", ALL_CCSIDS)
def test_known_letters_decode(ccsid):
    cp = code_page(ccsid)
    assert cp.space == blank_of(ccsid)[0]
    letters = [c for c in KNOWN_TEXT[ccsid]]
    width = 8
    raws = [pad(KNOWN_TEXT[ccsid][c], width, blank_of(ccsid)) for c in letters]
    arr = strings_from_fixed_width(rows(*raws), cp)
    assert arr.type == pa.string()
    assert arr.to_pylist() == letters


@pytest.mark.parametrize("ccsid", ALL_CCSIDS)
def test_trimming_and_missing(ccsid):
    cp = code_page(ccsid)
    b = blank_of(ccsid)
    width = 10
    raws = [
        pad(b"", width, b),  # all blank: SAS missing -> null
        pad(known(ccsid, "AB"), width, b),  # trailing blanks trimmed
        pad(known(ccsid, " A"), width, b"\x00"),  # trailing NULs trimmed, leading blank kept
        pad(known(ccsid, "A B"), width - 2, b) + b"\x00" + b,  # mixed blanks and NULs trimmed
        bytes(width),  # all NUL -> null
        pad(known(ccsid, "x.y") + known(ccsid, "é"), width, b),
        pad(known(ccsid, "1 2") + known(ccsid, "ß"), width, b),
        known(ccsid, "AAAAAAAAAA"),  # full width, nothing to trim
        pad(b"", width, b),
    ]
    arr = strings_from_fixed_width(rows(*raws), cp)
    assert arr.to_pylist() == [None, "AB", " A", "A B", None, "x.yé", "1 2ß", "A" * 10, None]
    assert arr.null_count == 3


def test_other_page_blank_is_not_trimmed():
    # 0x40 is "@" in ASCII pages and 0x20 is a control character in EBCDIC: neither is a blank there.
    arr = strings_from_fixed_width(rows(b"A@@ ", b"    "), code_page(819))
    assert arr.to_pylist() == ["A@@", None]
    arr = strings_from_fixed_width(rows(b"\xc1\x20\x40", b"\x40\x40\x40", b"\x20\x20\x20"), code_page(37))
    assert arr.to_pylist() == ["A\x80", None, "\x80\x80\x80"]


@pytest.mark.parametrize("ccsid", ALL_CCSIDS)
def test_random_bytes_match_a_per_value_reference(ccsid):
    cp = code_page(ccsid)
    rng = np.random.default_rng(ccsid)
    width = 7
    n = 400
    if ccsid == 1208:
        alphabet = [c.encode("utf-8") for c in "aZ9 é€ß\x00"]
        raws = []
        for _ in range(n):
            raw = b"".join(alphabet[i] for i in rng.integers(0, len(alphabet), rng.integers(0, 3)))
            raws.append(pad(raw, width, b" "))
    else:
        matrix = rng.integers(0, 256, (n, width), dtype=np.uint8)
        # Many trailing blanks/NULs, some empty rows.
        cut = rng.integers(0, width + 1, n)
        for i, c in enumerate(cut):
            matrix[i, c:] = rng.choice([cp.space, 0], width - c)
        raws = [bytes(r) for r in matrix]
    expected = []
    for raw in raws:
        trimmed = raw
        while trimmed and trimmed[-1] in (cp.space, 0):
            trimmed = trimmed[:-1]
        if not trimmed:
            expected.append(None)
        elif ccsid == 1208:
            expected.append(trimmed.decode("utf-8"))
        else:
            chars = []
            for byte in trimmed:
                try:
                    chars.append(bytes([byte]).decode(cp.codec))
                except UnicodeDecodeError:
                    chars.append(chr(byte))
            expected.append("".join(chars))
    assert strings_from_fixed_width(rows(*raws), cp).to_pylist() == expected


@pytest.mark.parametrize("ccsid", ALL_CCSIDS)
def test_fixed_width_from_strings(ccsid):
    cp = code_page(ccsid)
    b = blank_of(ccsid)
    letters = "".join(KNOWN_TEXT[ccsid])
    values = pa.array([None, "", "AB", letters, " A", "A"], type=pa.string())
    width = max(len(known(ccsid, letters)), 4)
    matrix = fixed_width_from_strings(values, cp, width)
    assert matrix.dtype == np.uint8 and matrix.shape == (6, width)
    got = [bytes(r) for r in matrix]
    assert got == [b * width, b * width, pad(known(ccsid, "AB"), width, b),
                   pad(known(ccsid, letters), width, b), pad(known(ccsid, " A"), width, b),
                   pad(known(ccsid, "A"), width, b)]
    # And back: nulls and "" both read as null; the rest as written.
    assert strings_from_fixed_width(matrix, cp).to_pylist() == [None, None, "AB", letters, " A", "A"]


def test_fixed_width_from_sliced_array():
    values = pa.array(["skip", "é", None, "xy"], type=pa.string()).slice(1)
    for ccsid in (1208, 819, 37):
        cp = code_page(ccsid)
        matrix = fixed_width_from_strings(values, cp, 3)
        assert strings_from_fixed_width(matrix, cp).to_pylist() == ["é", None, "xy"]


def _with_bytes_in_null_slots(values: list) -> pa.StringArray:
    """A string array of ``values`` whose nulls' slots hold bytes ("junk"), as Arrow allows and
    some producers leave them (a filtered or masked column)."""
    data, ends = b"", [0]
    for v in values:
        data += b"junk" if v is None else v.encode("utf-8")
        ends.append(len(data))
    validity = np.packbits([v is not None for v in values], bitorder="little")
    return pa.StringArray.from_buffers(len(values), pa.py_buffer(np.array(ends, np.int32)), pa.py_buffer(data),
                                       pa.py_buffer(validity), values.count(None))


@pytest.mark.parametrize("ccsid", (1208, 819, 37))
def test_nulls_encode_as_blanks_whatever_their_slots_hold(ccsid):
    """A null is a blank field whether its slot is empty (what Arrow's builders make: no fill
    needed) or holds bytes (filled as empty first), at every position, in slices too."""
    cp = code_page(ccsid)
    b = blank_of(ccsid)
    values = ["é", None, "xy", None, None, "", "abc", None]
    expected = [pad(cp.encode(v), 3, b) if v else b * 3 for v in values]
    built = pa.array(values, type=pa.string())
    junk = _with_bytes_in_null_slots(values)
    assert np.diff(np.frombuffer(junk.buffers()[1], np.int32))[1] == 4  # the null's slot really holds bytes
    for array in (built, junk):
        assert [bytes(r) for r in fixed_width_from_strings(array, cp, 3)] == expected
        for start in range(len(values)):
            for stop in range(start, len(values) + 1):
                got = fixed_width_from_strings(array.slice(start, stop - start), cp, 3)
                assert [bytes(r) for r in got] == expected[start:stop], (start, stop)
    # Only a null's bytes are junk: a value's never are, so the same offsets with no nulls keep them.
    valid = pa.StringArray.from_buffers(len(values), junk.buffers()[1], junk.buffers()[2])
    assert bytes(fixed_width_from_strings(valid, cp, 4)[1]) == cp.encode("junk")


def test_longest_encoded_value_leaves_out_what_null_slots_hold():
    from cmi_datasource.arrow.strings import max_encoded_length
    junk = _with_bytes_in_null_slots(["ab", None, "é"])
    assert max_encoded_length(junk, code_page(1208)) == 2 and max_encoded_length(junk, code_page(819)) == 2
    assert max_encoded_length(junk.slice(1, 1), code_page(1208)) == 0


@pytest.mark.parametrize("ccsid", sorted(LACKS))
def test_character_missing_from_the_code_page(ccsid):
    with pytest.raises(UnicodeEncodeError):
        fixed_width_from_strings(pa.array(["a", "x" + LACKS[ccsid]]), code_page(ccsid), 8)


def test_value_longer_than_width():
    with pytest.raises(ValueError) as e:
        fixed_width_from_strings(pa.array(["ok", "toolong", "x"]), code_page(819), 4)
    assert e.value.row == 1
    with pytest.raises(ValueError) as e:  # 2 characters, 4 UTF-8 bytes
        fixed_width_from_strings(pa.array(["ab", "éé"]), code_page(1208), 3)
    assert e.value.row == 1


def test_invalid_utf8_raises_unicode_decode_error():
    cp = code_page(1208)
    with pytest.raises(UnicodeDecodeError) as e:
        strings_from_fixed_width(rows(b"ok  ", b"\xc3\xa9  ", b"\xff\xfe  ", b"x   "), cp)
    assert e.value.start == 2  # the row
    with pytest.raises(UnicodeDecodeError) as e:
        strings_from_fixed_width(rows(b"ab", b"\xc3 "), cp)  # truncated two-byte sequence
    assert e.value.start == 1
    # The same bytes are fine in a single-byte code page.
    assert strings_from_fixed_width(rows(b"\xff\xfe  "), code_page(819)).to_pylist() == ["\xff\xfe"]


# ---------------------------------------------------------------------------------------------
# Temporal formats


@pytest.mark.parametrize("name,kind", [
    ("DATE9", "date"), ("DATE9.", "date"), ("date9.", "date"), ("DATE", "date"),
    ("DATETIME22.3", "datetime"), ("DATETIME20.", "datetime"), ("DATETIME", "datetime"),
    ("E8601DA", "date"), ("E8601DA10.", "date"), ("B8601DA", "date"), ("YYMMDDN8", "date"),
    ("MMDDYY10.", "date"), ("YEAR4.", "date"), ("MONYY7.", "date"), ("YYQ6.", "date"),
    ("TIME8", "time"), ("TIME8.", "time"), ("HHMM5.", "time"), ("E8601TM", "time"), ("E8601LZ", "time"),
    ("DTDATE9.", "datetime"), ("E8601DT19.3", "datetime"), ("TOD8.", "datetime"), ("IS8601DT", "datetime"),
    ("BEST12", None), ("BEST12.", None), ("$CHAR10.", None), ("COMMA10.2", None), ("", None),
    ("DOLLAR8.", None), ("12.", None),
])
def test_temporal_kind(name, kind):
    assert temporal_kind(name) == kind


def test_values_placed_in_rows_leave_the_neighbouring_bytes():
    """What a write assembles observations with: numbers and text written into their own columns
    of a matrix of rows, the bytes around them untouched, equal to the matrices of their own."""
    from cmi_datasource.arrow.strings import place_strings
    from cmi_datasource.payload.sas_numbers import place_numbers
    numbers, missing = np.array([1.5, -2.0, 0.0, np.nan]), np.array([False, False, True, False])
    text = pa.array(["ab", None, "é", "wxyz"])
    for fmt, width in ((LITTLE, 8), (LITTLE, 3), (BIG, 5), (S390, 8), (S390, 4)):
        out = np.full((4, 1 + width + 4 + 2), 0xEE, dtype=np.uint8)
        place_numbers(numbers, missing, fmt, out, 1, width)
        place_strings(text, code_page(1208), out, 1 + width, 4)
        assert (out[:, 0] == 0xEE).all() and (out[:, -2:] == 0xEE).all()
        assert (out[:, 1:1 + width] == encode_numbers(numbers, missing, width, fmt)).all()
        assert [bytes(r) for r in out[:, 1 + width:1 + width + 4]] == [b"ab  ", b"    ", "é  ".encode(), b"wxyz"]
    with pytest.raises(ValueError):  # past the row's end
        place_numbers(numbers, missing, LITTLE, np.zeros((4, 8), np.uint8), 1, 8)
    with pytest.raises(ValueError):  # a row count other than the values'
        place_strings(text, code_page(1208), np.zeros((3, 8), np.uint8), 0, 4)
