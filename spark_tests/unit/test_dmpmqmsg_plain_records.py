"""The C walker over plain dmpmqmsg records (``_native.plain_records``, issue 30) against the line
parser alone: the same messages, indexes, offsets and errors, message by message, on dumps written
by dmpmqmsg's layout (sample_queues, write_dump) and on every shape it must leave to the line parser."""
from __future__ import annotations

import os
import random
import re

import pytest

from cmi_datasource.engine import index
from cmi_datasource.errors import CmiFormatError
from cmi_datasource.transports import capture_format
from cmi_datasource.transports.mq import dmpmqmsg
from cmi_datasource.transports.mq.dmpmqmsg import parse_dump, write_dump
from cmi_datasource.transports.mq.transport import DmpmqmsgFormat

import mq_traffic

SAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "sample_queues")
WALKER = dmpmqmsg._plain_records_kernel()


@pytest.fixture(autouse=True)
def _walker_built():
    assert WALKER is not None, "the C kernels are not built (make, or setup.py build_ext --inplace)"


def _without_walker(monkeypatch):
    monkeypatch.setattr(dmpmqmsg, "_plain_records_kernel", lambda: None)


def _counting_walker(monkeypatch):
    """The walker, counting the records it takes."""
    taken = [0]

    def walker(*args):
        count, stop = WALKER(*args)
        taken[0] += count
        return count, stop
    monkeypatch.setattr(dmpmqmsg, "_plain_records_kernel", lambda: walker)
    return taken


def _outcome(data: bytes, base: int = 0, first: int = 0, stop=None, walk: bool = True):
    """The messages parse_dump gives, and its error (type, text, location) or None."""
    dmpmqmsg._ATTRIBUTE_CACHE.clear()
    found = []
    try:
        for message in parse_dump(data, "d.dmp", base, first, stop, walk=walk):
            found.append(message)
    except CmiFormatError as e:
        return found, (type(e), str(e), e.location)
    return found, None


def _both(data: bytes, monkeypatch, **where):
    """(records the walker took, outcome with the walker, outcome of the line parser alone)."""
    with monkeypatch.context() as patch:
        taken = _counting_walker(patch)
        fast = _outcome(data, **where)
    return taken[0], fast, _outcome(data, **where, walk=False)


def _dump(messages, width: int = 25, with_index: bool = True) -> bytes:
    import io
    out = io.BytesIO()
    write_dump(out, messages, queue_manager="QM1", queue="Q", created="Sat Jan  1 00:00:00 2000",
               data_width=width, with_index=with_index)
    return out.getvalue()


def _plain_messages():
    return mq_traffic.plain()


def _with_ascii_column(data: bytes) -> bytes:
    """Each X line with the <ascii> column dmpmqmsg -a writes after the hex."""
    def shown(line):
        digits = line.group(1)
        text = bytes(c if 32 <= c < 127 else 46 for c in bytes.fromhex(digits.decode()))
        return b"X " + digits + b"  <" + text + b">"
    return re.sub(rb"^X ([0-9A-F]+)$", shown, data, flags=re.M)


def _variants():
    """(name, dump bytes, whether the walker should take records)."""
    plain = _dump(_plain_messages())
    rng = random.Random(30)
    yield "plain", plain, True
    yield "no index comments", _dump(_plain_messages(), with_index=False), True
    for width in (1, 7, 33, 1000):
        yield f"width {width}", _dump(_plain_messages(), width=width), True
    yield "crlf", plain.replace(b"\n", b"\r\n"), False
    yield "ascii column", _with_ascii_column(plain), None  # an empty message has no column: walked
    yield "segmented", _dump(mq_traffic.segmented(_plain_messages(), size=100, rng=rng)), True
    yield "segmented with mqmde", _dump(mq_traffic.segmented(_plain_messages(), size=150, with_mqmde=True)), True
    for wrap in (mq_traffic.xmitq, mq_traffic.dead_letter, mq_traffic.v1_with_mqmde, mq_traffic.rfh2):
        yield wrap.__name__, _dump([wrap(d, p) for d, p in _plain_messages()]), True
    yield "no descriptors (N lines)", _dump([(None, p) for _, p in _plain_messages()]), False
    mixed = [(None if i % 3 == 0 else d, p) for i, (d, p) in enumerate(_plain_messages())]
    yield "some N lines", _dump(mixed), True
    x_lines = [m.start() for m in re.finditer(rb"^X [0-9A-F]", plain, re.M)]
    for name, edit in (("a digit that is no hex", lambda at: plain[:at + 2] + b"G" + plain[at + 3:]),
                       ("a digit dropped", lambda at: plain[:at + 2] + plain[at + 3:]),
                       ("a space in the hex", lambda at: plain[:at + 4] + b" " + plain[at + 4:]),
                       ("an S line after the X run", lambda at: plain[:at] + b'S "x"\n' + plain[at:]),
                       ("a T line inside the run", lambda at: plain[:at] + b"T text\n" + plain[at:]),
                       ("a comment inside the run", lambda at: plain[:at] + b"* here\n" + plain[at:]),
                       ("a blank line of spaces", lambda at: plain[:at] + b"  \t\n" + plain[at:]),
                       ("a banner line", lambda at: plain[:at] + b"5724-H72 (C) Copyright IBM Corp. 1994, 2026.\n"
                        + plain[at:]),
                       ("junk line", lambda at: plain[:at] + b"junk\n" + plain[at:])):
        for at in rng.sample(x_lines, 3):
            yield f"{name} at {at}", edit(at), None  # walked or not: as the damage lies
    a_lines = [m.start() for m in re.finditer(rb"^A MSI ", plain, re.M)]
    for name, edit in (("a bad attribute value", lambda at: plain[:at + 6] + b"ZZ" + plain[at + 8:]),
                       ("an unknown attribute code", lambda at: plain[:at + 2] + b"QQQ" + plain[at + 5:]),
                       ("a comment among the attribute lines", lambda at: plain[:at] + b"* c\n" + plain[at:]),
                       ("a CR in an attribute line", lambda at: plain[:at + 7] + b"\r" + plain[at + 7:]),
                       ("a value-less attribute line", lambda at: plain[:at] + b"A PRI\n" + plain[at:]),
                       ("a short attribute line", lambda at: plain[:at] + b"A\n" + plain[at:])):
        for at in rng.sample(a_lines, 3):
            yield f"{name} at {at}", edit(at), None  # walked or not: as the damage lies
    yield "cut in a record", plain[:len(plain) * 2 // 3], True
    yield "cut in an attribute block", plain[:plain.rindex(b"A MSI")], True
    yield "no last line end", plain.rstrip(b"\n"), True
    for name in sorted(os.listdir(SAMPLES)):
        if name.endswith(".dmp"):
            with open(os.path.join(SAMPLES, name), "rb") as f:
                yield name, f.read(), None


def test_the_walker_gives_what_the_line_parser_gives(monkeypatch):
    seen = set()
    for name, data, walked in _variants():
        taken, fast, slow = _both(data, monkeypatch)
        assert fast == slow, name
        assert len(fast[0]) > 2 or fast[1] is not None, name  # the dump holds messages or is damaged
        if walked is not None:
            assert (taken > 0) == walked, name
        seen.add(fast[1] is None)
    assert seen == {True, False}  # both whole and damaged dumps were compared


def test_slices_of_a_file_are_placed_the_same(monkeypatch):
    data = _dump(_plain_messages())
    starts = [m.start() for m in re.finditer(rb"^\* Index", data, re.M)]
    rng = random.Random(7)
    for _ in range(20):
        a, b = sorted(rng.sample(starts, 2))
        taken, fast, slow = _both(data[a:], monkeypatch, base=a, first=starts.index(a), stop=b - a)
        assert fast == slow and fast[1] is None and taken > 0
        assert len(fast[0]) == sum(1 for s in starts if a <= s < b)
        assert [m.index for m in fast[0]] == list(range(starts.index(a), starts.index(b)))
        assert all(a < m.file_offset < m.file_end < b for m in fast[0])


def _index_of(path: str, monkeypatch, walker: bool):
    with monkeypatch.context() as patch:
        if not walker:
            _without_walker(patch)
        patch.setattr(DmpmqmsgFormat, "_chunk_bytes", 4 << 10)  # many chunks, parsed on threads
        dmpmqmsg._ATTRIBUTE_CACHE.clear()
        return index.scan(path, capture_format("dmpmqmsg"))


def test_the_index_of_a_dump_is_the_same_message_by_message(tmp_path, monkeypatch):
    """What planning keeps (partial payloads, CRCs, numbering across chunks, damaged stretches as
    messages) is equal with and without the walker, on whole and damaged dumps read in chunks."""
    compared = 0
    for number, (name, data, _) in enumerate(_variants()):
        path = tmp_path / f"{number}.dmp"
        path.write_bytes(data)
        fast = _index_of(str(path), monkeypatch, walker=True)
        slow = _index_of(str(path), monkeypatch, walker=False)
        assert len(fast) == len(slow) and fast == slow, name
        compared += len(fast)
    assert compared > 1000


@pytest.mark.parametrize("args, problem", [
    ((5, 1), "outside"),  # pos past size
    ((0, 10 ** 9), "outside"),  # size past the text
])
def test_the_walker_checks_its_bounds(args, problem):
    import numpy as np
    text = np.frombuffer(b"A MST 1\nX 41\n", dtype=np.uint8)
    with pytest.raises(ValueError, match=problem):
        WALKER(text, *args, np.empty(8, np.uint8), 1 << 10, np.empty((4, 4), np.int64))
    with pytest.raises(ValueError, match="4 columns"):
        WALKER(text, 0, len(text), np.empty(8, np.uint8), 1 << 10, np.empty((4, 3), np.int64))


def test_a_payload_larger_than_the_output_is_left_to_the_line_parser():
    import numpy as np
    text = np.frombuffer(b"A MST 1\nX 41424344\nA MST 2\nX 45\n", dtype=np.uint8)
    records = np.empty((4, 4), np.int64)
    assert WALKER(text, 0, len(text), np.empty(2, np.uint8), 1 << 10, records) == (0, 0)
    count, stop = WALKER(text, 0, len(text), np.empty(8, np.uint8), 1 << 10, records)
    assert (count, stop) == (2, len(text))
    assert records[:2].tolist() == [[0, 7, 18, 4], [19, 26, 31, 5]]
    assert WALKER(text, 0, len(text), np.empty(8, np.uint8), 1, records) == (1, 19)  # the budget is spent


# Values of each kind of attribute line on both sides of what the C reader of attribute blocks
# (``_native.attribute_fields``) takes itself: it must read each the same or leave it to the line parser.
_INT_VALUES = (b"0", b"-1", b"007", b"2147483647", b"-2147483648", b"2147483648", b"-2147483649", b"99999999999",
               b"+5", b" 5", b"5 ", b"5\t", b"1_000", b"-", b"--1", b"x", b"\xe9", b" ")
_HEX_VALUES = (b"", b"00", b"0A", b"ff" * 4, b"AB" * 24, b"AB" * 25, b"ABC", b"AG", b"AB CD", b" AB", b"AB ",
               b"20" * 32, b"20" * 33, b"\xe9\xe9", b"  ")
_CHARACTER_VALUES = (b"x", b"MQSTR", b"MQSTR   ", b"MQSTR    ", b"MQSTR   \t \x0b\x0c", b"MQSTR   junk", b"\xe9\xff",
                     b" " * 8, b" " * 60, b"a" * 60, b"a" * 48 + b"   ", b"a" * 48 + b" x", b"\x1c" * 9, b"\x00")


def _attribute_variants():
    """(name, attribute line) for each code: every value above of its kind, value-less lines and lines
    too short or with an unknown code."""
    for code, attribute in dmpmqmsg._ATTRIBUTE_CODES.items():
        values = {"int": _INT_VALUES, "hex": _HEX_VALUES}.get(attribute.how, _CHARACTER_VALUES)
        for value in values:
            yield f"{code!r} {value!r}", b"A " + code + b" " + value
        yield f"{code!r} value-less", b"A " + code
        yield f"{code!r} blank", b"A " + code + b" "
        yield f"{code!r} other separator", b"A " + code + b"_" + values[1]
    yield "short", b"A MS"
    yield "unknown code", b"A QQQ 1"


def test_the_c_reader_of_attribute_lines_reads_them_as_the_line_parser(monkeypatch):
    """Each line above in place of one of a record's attribute lines (and added after them, where a
    later line of a field overrides an earlier one): the same fields, or the same error, with the
    walker as by the line parser alone, and the C reader takes every well-formed line itself."""
    import numpy as np
    plain = _dump(_plain_messages()[:3])
    msi = plain.index(b"A MSI ")
    msi_end = plain.index(b"\n", msi)
    block_end = plain.index(b"\nX ", msi)
    read_in_c = 0
    for name, line in _attribute_variants():
        for data in (plain[:msi] + line + plain[msi_end:], plain[:block_end + 1] + line + plain[block_end:]):
            taken, fast, slow = _both(data, monkeypatch)
            assert fast == slow and taken > 0, name
            start = data.rindex(b"\n\n", 0, msi) + 2
            start = data.index(b"A ", start)
            end = data.index(b"\nX ", start)
            records = np.array([[start, end, 0, 0]], dtype=np.int64)
            in_c = dmpmqmsg._plain_attribute_fields(data, records)[0]
            entry_values = dmpmqmsg._plain_attribute_fields(data, records, dmpmqmsg._ENTRY_ROWS)[0]
            assert (entry_values is None) == (in_c is None), name
            if in_c is not None:
                assert in_c == dmpmqmsg._attribute_block(data[start:end], "d.dmp", 0, start), name
                defaults = dmpmqmsg._MQMD_DEFAULTS
                expected = tuple(in_c.get(field, defaults[field]) for field in dmpmqmsg._ENTRY_FIELDS)
                assert entry_values == expected, name
                assert [type(v) for v in entry_values] == [type(v) for v in expected], name
                read_in_c += 1
            elif fast[1] is None:  # well-formed, yet left to the line parser: blanks around a value, + or _
                value = line[6:]
                assert value != value.strip() or b"+" in value or b"_" in value, name
    assert read_in_c > 200


@pytest.mark.parametrize("table, problem", [
    ((("MST", "msg_type", 0, 4, 8),), "table"),  # code not bytes
    (((b"MS", "msg_type", 0, 4, 8),), "table"),  # not 3 bytes
    (((b"MST", "msg_type", 9, 4, 8),), "table"),  # no such kind
    (((b"MSI", "msg_id", 1, 24, bytes(23)),), "table"),  # default shorter than the field
    (((b"FMT", "format", 2, 300, " " * 300),), "table"),  # larger than any field
    (((b"FMT", "format", 2, 8, b" " * 8),), "table"),  # text default not text
])
def test_the_c_reader_of_attribute_lines_checks_its_table(table, problem):
    import numpy as np
    text = b"A MST 1\nX 41\n"
    with pytest.raises(TypeError, match=problem):
        dmpmqmsg.native_module().attribute_fields(text, np.array([[0, 7, 0, 0]], np.int64), 1, table)
    with pytest.raises(ValueError, match="outside"):
        dmpmqmsg.native_module().attribute_fields(text, np.array([[0, 70, 0, 0]], np.int64), 1,
                                                  dmpmqmsg._ATTRIBUTE_TABLE)
    with pytest.raises(ValueError, match="records"):
        dmpmqmsg.native_module().attribute_fields(text, np.array([[0, 7, 0, 0]], np.int64), 2,
                                                  dmpmqmsg._ATTRIBUTE_TABLE)


@pytest.mark.parametrize("wanted, error", [((0, 0), ValueError), ((-1,), ValueError), ((30,), ValueError),
                                           ([0], TypeError), (("0",), TypeError), (tuple(range(31)), TypeError)])
def test_the_c_reader_of_attribute_lines_checks_the_fields_wanted(wanted, error):
    import numpy as np
    with pytest.raises(error, match="wanted|integer"):
        dmpmqmsg.native_module().attribute_fields(b"A MST 1\nX 41\n", np.array([[0, 7, 0, 0]], np.int64), 1,
                                                  dmpmqmsg._ATTRIBUTE_TABLE, wanted)


def test_the_c_reader_gives_the_fields_wanted_their_last_value_or_default():
    """A later line of a field overrides an earlier one, a value-less line keeps it; a field without a
    line has its default, the same object the table holds."""
    import numpy as np
    text = b"A MST 1\nA COI 0A\nA MST 2\nA MST\nA MSF 4\nX 41\n"
    rows = tuple(i for i, row in enumerate(dmpmqmsg._ATTRIBUTE_TABLE) if row[1] in ("msg_type", "correl_id",
                                                                                     "format", "msg_flags"))
    records = np.array([[0, text.index(b"\nX "), 0, 0]], np.int64)
    (found,) = dmpmqmsg.native_module().attribute_fields(text, records, 1, dmpmqmsg._ATTRIBUTE_TABLE, rows)
    by_name = dict(zip((dmpmqmsg._ATTRIBUTE_TABLE[i][1] for i in rows), found))
    assert by_name == {"msg_type": 2, "correl_id": b"\x0a" + bytes(23), "format": " " * 8, "msg_flags": 4}
    assert by_name["format"] is next(row[4] for row in dmpmqmsg._ATTRIBUTE_TABLE if row[1] == "format")
