"""The arithmetic, two-pass hex kernels of dmpmqmsg dumps (issue 30) against the table kernels they replaced,
kept in spark_tests/reference_hex_kernels.py: on random and adversarial text they give the same
bytes and refuse the same runs and spans, so that the line parser behind them raises the same
typed errors, naming the same file, message and byte offset.

Adversarial here means what a width guess or a block boundary could get wrong: characters that are
not hex digits (``g``, ``@`` and `````, the neighbours of the digit and letter ranges; line ends,
spaces, NUL, 0xFF) at random offsets, lower case, odd digit counts, CR line ends, lines longer than
the kernels' digit block, runs crossing it, and a short line whose guessed width ends on a later
line end.
"""
from __future__ import annotations

import random
import re
from typing import List, Tuple

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

import reference_hex_kernels as reference
from cmi_datasource.errors import CmiError
from cmi_datasource.transports.mq import dmpmqmsg
from cmi_datasource.transports.mq.dump_spans import _decode_spans, read_spans_in_bulk
from cmi_datasource.transports.mq.hex_lines import _NOT_HEX, DIGIT_BLOCK, decode_gathered, digit_value, x_run
from test_mq_dmpmqmsg import HEADER, _random_dump

HEX = b"0123456789ABCDEFabcdef"
NOT_DIGITS = b"gG@`/:\n\r \x00\xff<X"  # next to the digit and letter ranges, and the line's own characters


def test_every_character_has_the_tables_digit_value():
    table_digit = reference.PAIR_VALUES[np.arange(256) | (ord("0") << 8)]  # the pair "c0" is c's value << 4
    for c in range(256):
        value = int(digit_value(np.uint8(c)))
        if table_digit[c] == 0x100:
            assert value & _NOT_HEX, c
        else:
            assert value == table_digit[c] >> 4, c


def test_every_pair_of_characters_decodes_as_the_table_did():
    pairs = np.arange(65536, dtype=np.uint16).view(np.uint8)  # pair i is i's two bytes, low first
    digits, out, old = np.zeros(10, np.uint8), np.zeros(1, np.uint8), np.zeros(1, np.uint8)
    for i in range(65536):
        digits[:2] = pairs[2 * i:2 * i + 2]
        refused = decode_gathered(digits, 2, out, 0, 0, out, 0) != 0
        assert refused == (reference.decode_hex(pairs, 2 * i, 2 * i + 2, old, 0, reference.PAIR_VALUES) != 0), i
        assert refused or out[0] == old[0], i


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=1, max_size=3000), st.integers(0, 2999), st.sampled_from(NOT_DIGITS + HEX[:3]),
       st.integers(0, 7))
def test_the_block_decoder_flags_a_bad_character_anywhere(payload, at, char, head):
    digits = bytearray(payload.hex().encode())
    if at % 3 == 0:
        digits = digits.upper()
    at %= len(digits)
    digits[at] = char
    scratch = np.zeros(len(digits) + 8, dtype=np.uint8)
    scratch[:len(digits)] = np.frombuffer(bytes(digits), dtype=np.uint8)
    head = min(head, len(payload))
    head_out, out = np.empty(head, np.uint8), np.empty(len(payload) - head, np.uint8)
    flagged = decode_gathered(scratch, len(digits), head_out, 0, head, out, 0) != 0
    assert flagged == (char not in HEX)
    if not flagged:
        assert head_out.tobytes() + out.tobytes() == bytes.fromhex(digits.decode())


def _new_x_run(data: bytes):
    view = np.frombuffer(data, dtype=np.uint8)
    out = np.empty(len(data) // 2 + 1, dtype=np.uint8)
    end, written = x_run(view, 0, len(data), out)
    return None if end < 0 else (end, out[:written].tobytes())


def _old_x_run(data: bytes):
    view = np.frombuffer(data, dtype=np.uint8)
    out = np.empty(len(data) // 2 + 1, dtype=np.uint8)
    end, written = reference.x_run(view, 0, len(data), out, reference.PAIR_VALUES)
    return None if end < 0 else (end, out[:written].tobytes())


def _old_decode_spans(*args):
    return reference._decode_spans(*args, reference.PAIR_VALUES)


@st.composite
def x_line(draw):
    """An X line as dmpmqmsg writes it, in either case, perhaps with a character that is no hex
    digit at a random offset, a digit too few, or a CR end; or a line of another kind."""
    kind = draw(st.sampled_from(["plain"] * 5 + ["bad", "odd", "cr", "other"]))
    if kind == "other":
        return draw(st.sampled_from([b"X", b"X ", b"X 0A 0B", b"A MSI 0", b"", b"* comment", b"N", b"XX 00"]))
    digits = bytearray(draw(st.binary(max_size=40)).hex().encode())
    if draw(st.booleans()):
        digits = digits.upper()
    if kind == "bad" and digits:
        digits[draw(st.integers(0, len(digits) - 1))] = draw(st.sampled_from(NOT_DIGITS))
    elif kind == "odd":
        digits += b"A"
    elif kind == "cr":
        digits += b"\r"
    return b"X " + bytes(digits)


@settings(max_examples=600, deadline=None)
@given(st.lists(x_line(), min_size=1, max_size=12), st.booleans())
@example([b"X " + b"AB" * 25, b"X CD", b"X ", b"X " + b"EF" * 21, b"X 01"], True)  # test_a_guessed_width_...
@example([b"X " + b"AB" * 25, b"X CD", b"A MSI " + b"0" * 41], True)
def test_x_runs_decode_as_the_table_kernel(lines, final_newline):
    data = b"\n".join([lines[0] if lines[0][:2] == b"X " else b"X 00"] + lines[1:])
    data += b"\n" if final_newline else b""
    assert _new_x_run(data) == _old_x_run(data)


def test_a_guessed_width_that_ends_on_a_later_line_end_is_not_taken():
    # Line 2 is shorter than line 1, and the 50 digits guessed from line 1 end on line 4's end,
    # before an X line: the trusting pass takes it and sees line ends among the digits; then the
    # run is decoded again, each line's end looked for.
    from cmi_datasource.transports.mq.dump_spans import _decode_span
    from cmi_datasource.transports.mq.hex_lines import _x_run
    lines = [b"AB" * 25, b"CD", b"", b"EF" * 21, b"01" * 25]
    run = b"".join(b"X " + line + b"\n" for line in lines)
    payload = bytes.fromhex("".join(line.decode() for line in lines))
    second = run.index(b"X CD") + 2
    assert run[second + 50:second + 52] == b"\nX"
    digits = np.empty(DIGIT_BLOCK + 8, np.uint8)
    view, out = np.frombuffer(run, dtype=np.uint8), np.empty(len(run), dtype=np.uint8)
    assert _x_run(view, 0, len(run), out, digits, True)[0] == -1
    assert _new_x_run(run) == _old_x_run(run) == (len(run) - 1, payload)
    span = b"* Index 1\nA MST 8\n" + run + b"\n"
    view = np.frombuffer(span, dtype=np.uint8)
    assert _decode_span(view, 0, len(span), 0, out, 0, out, 0, digits, 50, True)[0] == -1
    assert _decode_span(view, 0, len(span), 0, out, 0, out, 0, digits, 50, False)[0] == len(payload)
    lengths = np.zeros(1, np.int64)
    assert _decode_spans(view, np.array([0]), np.array([len(span)]), np.array([0]), 0, out, 0, out, 0, lengths) \
        == (1, len(payload), 0)
    assert out[:len(payload)].tobytes() == payload


def _big_run(rng: random.Random) -> bytes:
    """X lines of a few widths, several digit blocks long, some lines longer than a block."""
    lines = []
    for _ in range(rng.randint(1, 6)):
        width = rng.choice([1, 25, 25, 40, 1000, DIGIT_BLOCK // 2 - 1, DIGIT_BLOCK // 2, DIGIT_BLOCK + 7])
        for _ in range(rng.randint(1, 2 + 2 * DIGIT_BLOCK // (2 * width))):
            piece = rng.randbytes(rng.choice([width, width, rng.randint(0, width)]))
            lines.append(b"X " + (piece.hex() if rng.random() < 0.2 else piece.hex().upper()).encode())
    return b"\n".join(lines) + rng.choice([b"\n", b"", b"\nA MST 8\n", b"\n\n* Index 2\n"])


def _damaged(rng: random.Random, data: bytes, how_many: int) -> bytes:
    out = bytearray(data)
    for _ in range(how_many):
        at = rng.randrange(len(out))
        kind = rng.random()
        if kind < 0.7:
            out[at] = rng.choice(NOT_DIGITS) if rng.random() < 0.8 else rng.randrange(256)
        elif kind < 0.85:
            del out[at]  # a digit too few, or two lines run together
        else:
            out.insert(at, rng.choice(HEX))
    return bytes(out)


def test_long_runs_across_digit_blocks_decode_as_the_table_kernel():
    rng = random.Random(30)
    for case in range(60):
        data = _big_run(rng)
        assert _new_x_run(data) == _old_x_run(data), case
        if case % 3 == 0:
            assert _new_x_run(data) is not None and len(_new_x_run(data)[1]) > 0
        damaged = _damaged(rng, data, rng.randint(1, 3))
        assert _new_x_run(damaged) == _old_x_run(damaged), case


def _x_heavy_dump(rng: random.Random) -> bytes:
    """Messages of long X runs, the shape of the dumps the writer makes, with the odd S line."""
    out = bytearray(HEADER)
    for i in range(rng.randint(1, 5)):
        out += b"* Index %d\nA MST 8\nA CCS 1208\n" % (i + 1)
        payload = rng.randbytes(rng.choice([0, 3, 24, 25, 1000, 20000, 40000]))
        out += dmpmqmsg.x_lines(payload, rng.choice([25, 25, 16, 32, 500, DIGIT_BLOCK // 2 + 3]))
        if rng.random() < 0.1:
            out += b'S "text"\n'
        out += b"\n"
    return bytes(out)


def _some_dump(rng: random.Random) -> bytes:
    if rng.random() < 0.5:
        return _random_dump(rng)[0]
    return _x_heavy_dump(rng)


def test_spans_decode_as_the_table_kernel():
    # Each span as planned on the undamaged text, decoded from damaged text: the same spans
    # taken (same lengths, payload and head bytes) and the same refused, span after span.
    rng = random.Random(3030)
    for case in range(250):
        good = _some_dump(rng)
        spans = [(m.file_offset, m.file_end) for m in dmpmqmsg.parse_dump(good, "q.dmp")]
        text = _damaged(rng, good, rng.choice([0, 1, 1, 2, 4]))
        if rng.random() < 0.3:  # lower-case digits
            text = re.sub(rb"(?m)^X ([0-9A-F]+)", lambda m: b"X " + m.group(1).lower(), text)
        spans = [(start, min(end, len(text))) for start, end in spans if start < len(text)]
        if not spans:
            continue
        view = np.frombuffer(text, dtype=np.uint8)
        starts = np.array([s for s, _ in spans], dtype=np.int64)
        ends = np.array([e for _, e in spans], dtype=np.int64)
        heads = np.array([rng.choice([0, 0, 1, 4, 30, 500]) for _ in spans], dtype=np.int64)
        room = rng.choice([0, 3])
        size = room + int((ends - starts).sum()) // 2 + 1
        runs = []
        for decode in (_decode_spans, _old_decode_spans):
            out, head = np.zeros(size, np.uint8), np.zeros(int(heads.sum()) + 1, np.uint8)
            lengths = np.full(len(spans), -1, dtype=np.int64)
            s, w, hw, steps = 0, room, 0, []
            while s < len(spans):
                w_before, hw_before = w, hw
                done, w, hw = decode(view, starts, ends, heads, s, out, w, head, hw, lengths)
                head_starts = hw_before + np.concatenate([[0], np.cumsum(heads[s:done])])
                heads_held = [head[at:at + min(h, n)].tobytes()  # the bytes a head holds (``head_of``)
                              for at, h, n in zip(head_starts, heads[s:done], lengths[s:done])]
                steps.append((done, w, hw, lengths[s:done].tolist(), out[w_before:w].tobytes(), heads_held))
                s = done + 1  # where the caller goes on, after the line parser read span ``done``
                hw += heads[done] if done < len(spans) else 0
            runs.append(steps)
        assert runs[0] == runs[1], case


def _outcome(run, *args):
    """What ``run(*args)`` gives: its result, or the typed error (kind, text and location)."""
    try:
        return "result", run(*args)
    except CmiError as error:
        return "error", type(error).__name__, str(error), getattr(error, "location", None)


def _messages(text: bytes):
    return list(dmpmqmsg.parse_dump(text, "q.dmp", base_offset=1000, first_index=5))


def test_the_line_parser_gives_the_same_messages_and_errors_with_either_kernel(monkeypatch):
    monkeypatch.setattr(dmpmqmsg, "SMALL_TEXT_BYTES", 0)  # every X run through the kernel
    rng = random.Random(303)
    for case in range(250):
        text = _damaged(rng, _some_dump(rng), rng.choice([0, 1, 1, 2]))
        new = _outcome(_messages, text)
        with monkeypatch.context() as old_kernel:
            old_kernel.setattr(dmpmqmsg, "x_run", lambda view, pos, size, out:
                               reference.x_run(view, pos, size, out, reference.PAIR_VALUES))
            old = _outcome(_messages, text)
        assert new == old, case


def _payloads(planned, heads, piece_bytes, decode) -> List[Tuple[int, bytes]]:
    return [(int(piece.lengths[i]), bytes(piece.head_of(i)) + bytes(piece.data_of(i)))
            for piece in read_spans_in_bulk(planned, heads, 3, piece_bytes, decode, dmpmqmsg.parse_dump)
            for i in range(len(piece.spans))]


def test_partitions_give_the_same_payloads_and_errors_with_either_kernel(tmp_path):
    rng = random.Random(3003)
    for case in range(120):
        good = _some_dump(rng)
        spans = [(m.file_offset, m.file_end) for m in dmpmqmsg.parse_dump(good, "q.dmp")]
        path = tmp_path / f"case{case}.dmp"
        path.write_bytes(_damaged(rng, good, rng.choice([0, 1, 1, 2])))
        planned = [(str(path), i, start, end) for i, (start, end) in enumerate(spans)]
        heads = [rng.choice([0, 4, 30]) for _ in planned]
        piece_bytes = rng.choice([1, 300, None])
        assert _outcome(_payloads, planned, heads, piece_bytes, _decode_spans) == \
            _outcome(_payloads, planned, heads, piece_bytes, _old_decode_spans), case
