"""The trust rule (engine/recovery.py), proven over every single fault of every observation message.

Attachments of one, two, three and many observation messages, whose observations lie whole in
each message or straddle them, in little- and big-endian encodings, carried in an MQ dump and in
a raw MQTT stream, all built here and by the independent encoder (no code of the package writes
them). Each observation message in turn is lost, garbled, duplicated with another payload,
duplicated identically or swapped with its neighbour in the capture. Then:

* FAILFAST raises a typed error exactly when the fault loses data, and otherwise returns every row;
* PERMISSIVE returns exactly the observations whose bytes lie outside the damaged message (the
  one before it are placed from the start of the stream, the ones after it from its end), each
  once, in order, and one report that counts the rest, so that returned + reported = sent;
* DROPMALFORMED returns the same rows as PERMISSIVE without the report.

Observation i holds X = i, so a row decoded from misplaced bytes cannot pass for a good one.
"""
from __future__ import annotations

import struct
import tracemalloc
from typing import List, Tuple

import pytest

from cmi_datasource.errors import CmiError, IncompleteAttachmentError

from independent_encoder import Encoder, Message, Var, dump_text
from test_fault_catalogue import data_rows, lost_count, read, reports, write

ROWS = 12
OBS_LENGTH = 16
VARIABLES = [Var("X"), Var("NAME", "char", 8)]
KEY = bytes(range(0x41, 0x51))
SENT = [(float(i), f"name{i}") for i in range(ROWS)]

# Observations per message when they lie whole in each; a straddling layout adds 7 bytes to each
# message, so that observations cross message ends.
SHAPES = {"one": ROWS, "two": 6, "three": 4, "many": 1}
FAULTS = ["lost", "garbled", "conflicting", "identical", "swapped"]
LOSES_DATA = {"lost", "garbled", "conflicting"}


def attachment(shape: str, straddle: bool, encoding: int) -> Tuple[List[Message], List[int]]:
    """The transmission, and the positions in it of the observation messages in sequence order."""
    enc = Encoder(encoding=encoding)
    payload = 4 + OBS_LENGTH * SHAPES[shape] + (7 if straddle else 0)
    att = enc.dataset_attachment(KEY, "WORK", "TRUST", VARIABLES, SENT, max_payload=payload)
    msgs = enc.transmission(b"\x11" * 24, b"\x22" * 24, b"app", [att])
    order = "<" if encoding & 0x0F == 2 else ">"
    observations = [i for i, m in enumerate(msgs) if m.correlid[:16] == KEY and m.correlid[16:] != bytes(8)
                    and struct.unpack(order + "i", m.payload[:4])[0] == 3]
    return msgs, observations


def byte_range(msgs: List[Message], observations: List[int], j: int) -> Tuple[int, int]:
    """Where observation message j's data lies in the observation stream."""
    start = sum(len(msgs[i].payload) - 4 for i in observations[:j])
    return start, start + len(msgs[observations[j]].payload) - 4


def rows_outside(start: int, end: int) -> List[tuple]:
    return [row for i, row in enumerate(SENT) if (i + 1) * OBS_LENGTH <= start or i * OBS_LENGTH >= end]


# -- carriers: the same messages in an MQ dump and in a raw MQTT stream ---------------------------


def mqmd_v1(m: Message) -> bytes:
    """A version-1 MQMD (docs/spec/mq.md#the-mqmd), little-endian, built field by field."""
    return (b"MD  " + struct.pack("<6i", 1, 0, m.msgtype, -1, 0, 546) + struct.pack("<i", 1208) + b" " * 8
            + struct.pack("<2i", 0, 0) + m.msgid + m.correlid + struct.pack("<i", 0) + b" " * 96 + b" " * 12
            + bytes(32) + b" " * 32 + struct.pack("<i", 6) + b"sas".ljust(28) + b"20240131" + b"12000000" + b"    ")


def mqtt_packet(first: int, body: bytes) -> bytes:
    length, out = len(body), bytearray([first])
    while True:
        length, byte = length >> 7, length & 0x7F
        out.append(byte | (0x80 if length else 0))
        if not length:
            return bytes(out) + body


def mqtt_stream(msgs: List[Message], garbled: set) -> bytes:
    """MQTT 3.1.1 (OASIS): CONNECT, a QoS 0 PUBLISH per message whose payload is its MQMD and
    data, DISCONNECT. A garbled message's MQMD loses its StrucId: it is then no CMI message."""
    def utf8(text: str) -> bytes:
        return struct.pack(">H", len(text)) + text.encode()
    out = mqtt_packet(0x10, utf8("MQTT") + bytes([4, 0x02]) + struct.pack(">H", 60) + utf8("sas"))
    for i, m in enumerate(msgs):
        descriptor = mqmd_v1(m)
        if i in garbled:
            descriptor = b"XX  " + descriptor[4:]
        descriptor = descriptor[:24] + struct.pack("<2i", m.encoding, m.ccsid) + descriptor[32:]
        out += mqtt_packet(0x30, utf8("sas/cmi") + descriptor + m.payload)
    return out + mqtt_packet(0xE0, b"")


def damaged_capture(tmp_path, carrier: str, msgs: List[Message], observations: List[int], j: int, fault: str) -> str:
    msgs = list(msgs)
    target = observations[j]
    garbled = set()
    if fault == "lost":
        del msgs[target]
    elif fault == "garbled":
        garbled.add(target)
    elif fault == "conflicting":
        original = msgs[target]
        flipped = original.payload[:-1] + bytes([original.payload[-1] ^ 1])
        msgs.append(Message(original.msgtype, original.correlid, flipped,
                            original.encoding, original.ccsid, b"AMQ COPY" + bytes(16)))
    elif fault == "identical":
        msgs.append(msgs[target])
    elif fault == "swapped":
        other = target + 1  # the next message in the capture (the next observation or the count)
        msgs[target], msgs[other] = msgs[other], msgs[target]
    if carrier == "mqtt":
        return write(tmp_path, mqtt_stream(msgs, garbled), "capture.mqtt")
    text = dump_text(msgs)
    if garbled:  # a G in the message's first data line: no longer hex
        at = text.index("A MSI " + msgs[target].msgid.hex().upper())
        line = text.index("\nX ", at) + 1
        text = text[:line] + "X 0G" + text[line + 4:]
    return write(tmp_path, text)


CASES = [(shape, straddle, encoding) for shape in SHAPES for straddle in (False, True) for encoding in (546, 273)
         if not (shape == "one" and straddle)]


@pytest.mark.parametrize("carrier", ["mq", "mqtt"])
@pytest.mark.parametrize("shape, straddle, encoding", CASES)
def test_every_single_fault_of_every_observation_message(tmp_path_factory, carrier, shape, straddle, encoding):
    msgs, observations = attachment(shape, straddle, encoding)
    assert len(observations) == {"one": 1, "two": 2, "three": 3}.get(shape, len(observations))
    for j in range(len(observations)):
        for fault in FAULTS:
            tmp_path = tmp_path_factory.mktemp(f"{fault}{j}")
            path = damaged_capture(tmp_path, carrier, msgs, observations, j, fault)
            case = (carrier, shape, straddle, encoding, j, fault)
            if fault in LOSES_DATA:
                with pytest.raises(CmiError):
                    read(path, "FAILFAST")
                expected = rows_outside(*byte_range(msgs, observations, j))
            else:
                assert data_rows(read(path, "FAILFAST")) == SENT, case
                expected = SENT
            permissive = read(path, "PERMISSIVE")
            assert data_rows(permissive) == expected, case
            texts = reports(permissive)
            assert len(texts) == (1 if len(expected) < ROWS else 0), (case, texts)
            assert len(expected) + sum(lost_count(t) for t in texts) == ROWS, (case, texts)
            if texts:
                assert f"attachment {KEY.hex().upper()}" in texts[0], texts
            assert data_rows(read(path, "DROPMALFORMED")) == expected, case


def test_the_second_of_two_observation_messages_alone_is_placed_from_the_end(tmp_path):
    """The reproducer of issue 26: the first of two observation messages lost. The second holds
    the stream's last bytes; nothing of it may be read as observation 1."""
    msgs, observations = attachment("two", True, 546)
    path = damaged_capture(tmp_path, "mq", msgs, observations, 0, "lost")
    start, end = byte_range(msgs, observations, 0)
    table = read(path, "PERMISSIVE")
    kept = rows_outside(start, end)
    assert data_rows(table) == kept and kept[0][0] == float(-(-end // OBS_LENGTH))
    [text] = reports(table)
    assert f"observations 1 to {ROWS - len(kept)} lost ({ROWS - len(kept)})" in text


def _with_count(msgs: List[Message], count: int, order: str = "<") -> List[Message]:
    last = msgs[-1]
    assert last.correlid == KEY + bytes(8)
    return msgs[:-1] + [Message(last.msgtype, last.correlid, struct.pack(order + "i", count), last.encoding,
                                last.ccsid, last.msgid)]


def _renumbered(msgs: List[Message], position: int, number: int) -> List[Message]:
    m = msgs[position]
    return msgs[:position] + [Message(m.msgtype, KEY + number.to_bytes(4, "big") + bytes(4), m.payload, m.encoding,
                                      m.ccsid, m.msgid)] + msgs[position + 1:]


@pytest.mark.parametrize("damage", ["count 2**31-1", "count 10**6", "sequence 2**31-1", "sequence 10**6"])
def test_declared_counts_and_sequence_numbers_cost_nothing(tmp_path, damage):
    """A count message or a sequence number of 10^6 or 2^31-1: the read in every mode allocates
    as little as for the clean capture (one range for the missing numbers, not an object each)."""
    msgs, observations = attachment("three", True, 546)
    what, value = damage.split()
    huge = eval(value)  # noqa: S307 - the parametrize ids are the values
    if what == "count":
        damaged = _with_count(msgs, huge)
        expected = SENT  # every message is there: the observations are proven from the start
    else:
        # The message now lies past the count, so the end of the stream is not known: what follows
        # the hole it left cannot be placed.
        damaged = _renumbered(msgs, observations[1], huge)
        expected = rows_outside(byte_range(msgs, observations, 1)[0], 1 << 40)
    path = write(tmp_path, dump_text(damaged))
    tracemalloc.start()
    try:
        with pytest.raises(IncompleteAttachmentError):
            read(path, "FAILFAST")
        permissive = read(path, "PERMISSIVE")
        dropped = read(path, "DROPMALFORMED")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, peak
    assert data_rows(permissive) == expected and data_rows(dropped) == expected
    texts = reports(permissive)
    assert len(expected) + sum(lost_count(t) for t in texts) == ROWS, texts
    if what == "sequence":
        [text] = texts
        assert "is missing from the capture" in text and "cannot be placed" in text, text


@pytest.mark.parametrize("field, value", [("nobs", ROWS + 1), ("nobs", ROWS - 1), ("obs_length", OBS_LENGTH + 1)])
def test_a_whole_stream_that_does_not_fit_its_definition_gives_no_row(tmp_path, field, value):
    """Every message is there but the dataset definition disagrees with the stream (one byte of
    its declared count or observation length changed): which one is wrong cannot be told, and
    observations cut at another length would be made up. No row is returned; the report says why."""
    from cmi_datasource.errors import DatasetLayoutError

    enc = Encoder()
    msgs, _ = attachment("three", False, 546)
    definition = next(i for i, m in enumerate(msgs) if m.correlid == KEY + (1).to_bytes(4, "big") + bytes(4))
    m = msgs[definition]
    declared = enc.long(ROWS) + enc.long(len(VARIABLES)) + enc.long(OBS_LENGTH)
    at = m.payload.index(declared)
    changed = (enc.long(value) + declared[4:] if field == "nobs" else declared[:8] + enc.long(value))
    msgs[definition] = Message(m.msgtype, m.correlid, m.payload[:at] + changed + m.payload[at + 12:], m.encoding,
                               m.ccsid, m.msgid)
    path = write(tmp_path, dump_text(msgs))
    with pytest.raises(DatasetLayoutError):
        read(path, "FAILFAST")
    permissive = read(path, "PERMISSIVE")
    assert data_rows(permissive) == []
    [text] = reports(permissive)
    assert "the definitions do not describe them" in text, text
    assert data_rows(read(path, "DROPMALFORMED")) == []
