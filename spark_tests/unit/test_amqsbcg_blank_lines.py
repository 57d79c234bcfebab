"""Blank lines in amqsbcg output are skipped in runs (``amqsbcg._past_blank_lines``), not one Python
step per line: a decompression bomb of newlines (64 MiB of them in a record, within
``maxRecordBytes``) took minutes. Skipping them must leave the messages exactly as they were.

The text is the bundled ``sample_queues/amqsbcg_browse.txt`` (IBM's browse sample's layout), with
blank lines (LF, CRLF, spaces, tabs, vertical tab, form feed) put in at line starts."""
from __future__ import annotations

import os

import pytest

from cmi_datasource.transports.mq.amqsbcg import _past_blank_lines, parse_browse
from cmi_datasource.transports.mq.message import mqmd_of

pytestmark = pytest.mark.unit

SAMPLE = open(os.path.join(os.path.dirname(__file__), "..", "..", "sample_queues", "amqsbcg_browse.txt"), "rb").read()
BLANKS = b"\n  \t\r\n\x0b\x0c\n\r\n"


def described(messages, inserted_at=None, inserted=0):
    """What parsing found, offsets moved back past an insertion so that they compare with the original's."""
    def back(offset):
        return offset - inserted if inserted_at is not None and offset >= inserted_at else offset

    return [(m.payload, m.problem, mqmd_of(m), m.origin.message_index, back(m.file_offset), back(m.file_end),
             None if m.damage is None else (type(m.damage.error()).__name__, back(m.damage.error().offset)))
            for m in messages]


def line_starts(text):
    return [0] + [i + 1 for i, byte in enumerate(text) if byte == 0x0A and i + 1 < len(text)]


def test_the_sample_has_messages_and_lines_to_insert_at():
    assert len(list(parse_browse(SAMPLE, "s.txt"))) >= 2 and len(line_starts(SAMPLE)) > 50


@pytest.mark.parametrize("every", [1, 7])
def test_blank_lines_at_any_line_start_leave_every_message_as_it_was(every):
    original = described(parse_browse(SAMPLE, "s.txt"))
    for at in line_starts(SAMPLE)[::every]:
        text = SAMPLE[:at] + BLANKS + SAMPLE[at:]
        assert described(parse_browse(text, "s.txt"), at, len(BLANKS)) == original, at


def test_a_megabyte_of_newlines_between_messages_changes_nothing_but_offsets():
    second = SAMPLE.index(b"MQGET of message number 2")
    at = SAMPLE.rindex(b"\n", 0, second) + 1
    padding = b"\n" * (1 << 20)
    text = SAMPLE[:at] + padding + SAMPLE[at:]
    assert described(parse_browse(text, "s.txt"), at, len(padding)) == described(parse_browse(SAMPLE, "s.txt"))


def test_blank_text_at_the_end_without_a_line_end():
    assert described(parse_browse(SAMPLE + b"\n\n   \t", "s.txt")) == described(parse_browse(SAMPLE, "s.txt"))


@pytest.mark.parametrize("text, pos, expected", [
    (b"abc\n", 0, 0),            # a line that is not blank: where it starts
    (b"  abc\n", 0, 0),          # leading blanks belong to the line
    (b"\n\n  abc\n", 0, 2),      # past two blank lines, at the start of the third
    (b"\n \t\r\n\x0b\x0cx", 0, 5),
    (b"\n\n\n", 0, 3),           # nothing but blank lines: the end
    (b"x\n\n y", 2, 3),          # from inside the text
    (b"\x85\n", 0, 0),           # only what bytes.strip strips is blank
])
def test_past_blank_lines(text, pos, expected):
    assert _past_blank_lines(text, pos, len(text)) == expected
    # the same answer as stepping line by line with bytes.strip, as the parser did
    step = pos
    while step < len(text):
        end = text.find(b"\n", step)
        end = len(text) if end < 0 else end
        if text[step:end].strip():
            break
        step = end + 1
    assert min(step, len(text)) == expected
