"""Exact duplicates (same CorrelId, same payload) are dropped, never silently: the attachments
view counts each attachment's dropped copies (``duplicate_messages``), the messages view names
the message each copy repeats (``duplicate_of``, numbered from 1 as dmpmqmsg's ``* Index``).

Every capture here is a dump file on disk: written by the package's writer, or by the
independent encoder (spark_tests/independent_encoder.py), with messages repeated in it.
"""
from __future__ import annotations

import dataclasses
import re
import struct

import pyarrow as pa
import pytest

from cmi_datasource import Capture, read
from cmi_datasource.cmi.assembly import ROLE_APPLICATION, ROLE_COUNT, ROLE_HEADER, ROLE_OTHER, ROLE_SEQUENCED
from cmi_datasource.engine.write import DatasetToWrite, FileToWrite, WriteOptions
from cmi_datasource.errors import IncompleteAttachmentError
from cmi_datasource.transports.mq.mqmd import MQMD, MQMF_LAST_SEGMENT, MQMF_SEGMENT

from conftest import dump_messages
from independent_encoder import Encoder, Var, shuffled, with_duplicates, write_dump
from support import build_mq_messages

TABLE = pa.table({"X": pa.array([float(i) for i in range(40)]), "NAME": [f"name {i}" for i in range(40)]})
TEXT = "".join(f"line {i}\n" for i in range(30))
OPTIONS = WriteOptions(max_message_bytes=120, application_message="from SAS", deterministic_seed="duplicates")


def transmission():
    """One header carrying a dataset (WORK.PEOPLE) and a text file (notes.txt), as (MQMD, payload)."""
    return build_mq_messages([DatasetToWrite(TABLE, "work", "people")], [FileToWrite("notes.txt", text=TEXT)],
                             OPTIONS)


def messages(capture):
    return read(capture, view="messages").to_pylist()


def attachments(capture):
    return {r["name"]: r for r in read(capture, view="attachments").to_pylist()}


def position(rows, role, attachment=None, sequence=None):
    """The 0-based place in the dump of the one message with this role (in this attachment, with
    this sequence number), read off a clean capture's messages view."""
    [row] = [r for r in rows if r["role"] == role and r["duplicate_of"] is None
             and (attachment is None or r["attachment"] == attachment)
             and (sequence is None or r["sequence"] == sequence)]
    return row["index"] - 1


@pytest.fixture
def clean(tmp_path):
    """The transmission's dump without duplicates, read: (pairs, capture, message rows, attachments)."""
    pairs = transmission()
    capture = Capture.open(dump_messages(tmp_path, pairs, "clean.dmp"))
    return pairs, capture, messages(capture), attachments(capture)


def test_a_capture_without_duplicates_holds_no_duplicate_map(clean):
    _, capture, rows, atts = clean
    assert capture.assembly.duplicates == {}
    assert [a["duplicate_messages"] for a in atts.values()] == [0, 0]
    assert all(r["duplicate_of"] is None for r in rows)
    assert [r["index"] for r in rows] == list(range(1, len(rows) + 1))


def test_a_repeated_sequenced_message_is_counted_and_named(tmp_path, clean):
    pairs, capture, rows, atts = clean
    k = position(rows, ROLE_SEQUENCED, atts["WORK.PEOPLE"]["attachment"], 2)
    path = dump_messages(tmp_path, pairs + [pairs[k]])
    noisy = Capture.open(path)
    found = attachments(noisy)
    assert found["WORK.PEOPLE"]["duplicate_messages"] == 1 and found["notes.txt"]["duplicate_messages"] == 0
    for name, row in found.items():  # only the new column differs
        assert {**row, "duplicate_messages": 0, "source": None} == {**atts[name], "source": None}
    noisy_rows = messages(noisy)
    copy = noisy_rows[-1]
    assert copy["index"] == len(pairs) + 1
    assert copy["duplicate_of"] == {"source": path, "index": k + 1}
    assert noisy_rows[k]["index"] == k + 1 and noisy_rows[k]["payload"] == copy["payload"]
    people = atts["WORK.PEOPLE"]["attachment"]
    assert (copy["role"], copy["attachment"], copy["sequence"]) == (ROLE_SEQUENCED, people, 2)
    assert all(r["duplicate_of"] is None for r in noisy_rows[:-1])
    assert read(noisy).equals(read(capture))
    assert read(noisy, view="files").equals(read(capture, view="files"))


def test_repeated_header_application_and_count_messages_count_for_their_attachments(tmp_path, clean):
    pairs, capture, rows, atts = clean
    header, application = position(rows, ROLE_HEADER), position(rows, ROLE_APPLICATION)
    count = position(rows, ROLE_COUNT, atts["WORK.PEOPLE"]["attachment"], 0)
    path = dump_messages(tmp_path, pairs + [pairs[count], pairs[header], pairs[application], pairs[count]])
    noisy = Capture.open(path)
    found = attachments(noisy)
    # The header and the application message belong to both attachments; the count to the dataset.
    assert found["WORK.PEOPLE"]["duplicate_messages"] == 4 and found["notes.txt"]["duplicate_messages"] == 2
    assert all(row["complete"] for row in found.values())
    copies = messages(noisy)[len(pairs):]
    assert [c["duplicate_of"] for c in copies] == [{"source": path, "index": i + 1}
                                                   for i in (count, header, application, count)]
    assert [c["role"] for c in copies] == [ROLE_COUNT, ROLE_HEADER, ROLE_APPLICATION, ROLE_COUNT]
    assert read(noisy).equals(read(capture))
    assert len(noisy.assembly.duplicates) == 4


def test_copies_in_a_second_file_of_the_load_name_the_message_in_the_first(tmp_path, clean):
    pairs, capture, rows, atts = clean
    header = position(rows, ROLE_HEADER)
    line = position(rows, ROLE_SEQUENCED, atts["notes.txt"]["attachment"], 2)
    count = position(rows, ROLE_COUNT, atts["notes.txt"]["attachment"], 0)
    stray = (MQMD(msg_type=8, correl_id=b"\x11" * 24), b"not CMI")  # repeated too: no CMI message, never dropped
    first = dump_messages(tmp_path, pairs + [stray], "a.dmp")
    second = dump_messages(tmp_path, [stray, pairs[line], pairs[count], pairs[header]], "b.dmp")
    noisy = Capture.open([first, second])
    found = attachments(noisy)
    assert found["notes.txt"]["duplicate_messages"] == 3 and found["WORK.PEOPLE"]["duplicate_messages"] == 1
    assert {row["source"] for row in found.values()} == {first}
    in_second = [r for r in messages(noisy) if r["source"] == second]
    assert [r["index"] for r in in_second] == [1, 2, 3, 4]  # numbered within their own file
    assert [r["duplicate_of"] for r in in_second] == [None] + [{"source": first, "index": i + 1}
                                                              for i in (line, count, header)]
    assert in_second[0]["role"] == ROLE_OTHER
    assert read(noisy).equals(read(capture))
    assert read(noisy, view="files").equals(read(capture, view="files"))
    # Loaded the other way round, the first file of the load holds the messages that are kept.
    swapped = Capture.open([second, first])
    assert {row["source"] for row in attachments(swapped).values()} == {second}
    assert [r["duplicate_of"] for r in messages(swapped) if r["duplicate_of"] is not None] == [
        {"source": second, "index": n} for _, n in sorted([(line, 2), (count, 3), (header, 4)])]


def test_conflicting_duplicates_still_make_the_attachment_incomplete(tmp_path, clean):
    pairs, capture, rows, atts = clean
    k = position(rows, ROLE_SEQUENCED, atts["WORK.PEOPLE"]["attachment"], 3)
    descriptor, payload = pairs[k]
    changed = payload[:-1] + bytes([payload[-1] ^ 0xFF])
    path = dump_messages(tmp_path, pairs + [(descriptor, changed), (descriptor, changed), pairs[k]])
    noisy = Capture.open(path)
    people = attachments(noisy)["WORK.PEOPLE"]
    assert people["complete"] is False and "sequenced message 3 has conflicting duplicates" in people["problem"]
    # The conflicting payload is no copy; the identical copies of either payload are.
    assert people["duplicate_messages"] == 2
    conflicting, its_copy, original_copy = messages(noisy)[len(pairs):]
    assert conflicting["duplicate_of"] is None and conflicting["role"] == ROLE_SEQUENCED
    assert its_copy["duplicate_of"] == {"source": path, "index": conflicting["index"]}
    assert original_copy["duplicate_of"] == {"source": path, "index": k + 1}
    with pytest.raises(IncompleteAttachmentError, match="conflicting"):
        read(noisy)
    assert attachments(noisy)["notes.txt"]["complete"] is True


def test_a_repeated_unreadable_header_is_counted_on_its_row(tmp_path, clean):
    pairs, _, rows, _ = clean
    header = position(rows, ROLE_HEADER)
    descriptor, payload = pairs[header]
    broken = payload[:76] + struct.pack("<i", 2 ** 31 - 1) + payload[80:]  # an attachment count past the end
    patched = pairs[:header] + [(descriptor, broken)] + pairs[header + 1:]
    path = dump_messages(tmp_path, patched + [(descriptor, broken)])
    capture = Capture.open(path)
    [row] = read(capture, view="attachments").to_pylist()
    assert row["kind"] == "header" and row["complete"] is False and row["duplicate_messages"] == 1
    copy = messages(capture)[-1]
    assert copy["duplicate_of"] == {"source": path, "index": header + 1} and copy["role"] == ROLE_HEADER


def test_copies_of_messages_no_header_lists_are_named_too(tmp_path, clean):
    pairs, _, rows, _ = clean
    orphan = (MQMD(msg_type=100001, correl_id=b"\x42" * 16 + bytes(8)), struct.pack("<i", 3))
    path = dump_messages(tmp_path, [orphan] + pairs + [orphan])
    noisy = Capture.open(path)
    copy = messages(noisy)[-1]
    assert copy["duplicate_of"] == {"source": path, "index": 1} and copy["role"] == ROLE_OTHER
    assert [a["duplicate_messages"] for a in attachments(noisy).values()] == [0, 0]


def test_a_segmented_message_sent_again_names_its_pieces_piece_by_piece(tmp_path, clean):
    pairs, capture, rows, atts = clean
    k = position(rows, ROLE_SEQUENCED, atts["WORK.PEOPLE"]["attachment"], 1)  # the definitions: > 50 bytes
    descriptor, payload = pairs[k]
    size = 50

    def segments(group_id: bytes):
        return [(dataclasses.replace(descriptor, version=2, group_id=group_id, msg_seq_number=1, offset=offset,
                                     msg_flags=MQMF_SEGMENT | (MQMF_LAST_SEGMENT if offset + size >= len(payload)
                                                               else 0)), payload[offset:offset + size])
                for offset in range(0, len(payload), size)]

    first, again = segments(b"\x01" * 24), segments(b"\x02" * 24)  # sent again: a new group
    assert len(first) >= 2
    path = dump_messages(tmp_path, pairs[:k] + first + pairs[k + 1:] + again)
    noisy = Capture.open(path)
    assert attachments(noisy)["WORK.PEOPLE"]["duplicate_messages"] == 1  # one message, in pieces
    noisy_rows = messages(noisy)
    copies = noisy_rows[-len(again):]
    assert [c["duplicate_of"] for c in copies] == [{"source": path, "index": k + 1 + i} for i in range(len(first))]
    assert all(c["role"] == ROLE_SEQUENCED and c["sequence"] == 1 for c in copies)
    assert read(noisy).equals(read(capture))


# -- an independently encoded capture ------------------------------------------------------------

DS_KEY, TXT_KEY = bytes(range(16)), b"\xc3" * 16


def test_independently_encoded_duplicates_shuffled(tmp_path):
    enc = Encoder(encoding=273, seq_big_endian=False)
    dataset = enc.dataset_attachment(DS_KEY, "work", "plain", [Var("X")], [[i * 0.5] for i in range(10)],
                                     max_payload=60)
    text = enc.file_attachment(TXT_KEY, "a.txt", [b"line %d" % i for i in range(20)], max_payload=40)
    msgs = enc.transmission(b"\xa1" * 24, b"\xb2" * 24, b"app", [dataset, text])
    # The header, the application message, text line message 2 and the text's count (the last).
    repeated = [0, 1, 2 + len(dataset["payloads"]) + 2, len(msgs) - 1]
    assert msgs[repeated[2]].correlid == enc.seq_correlid(TXT_KEY, 2)
    noisy = shuffled(with_duplicates(msgs, repeated), seed=5)
    path = write_dump(tmp_path / "encoded.dmp", noisy)
    capture = Capture.open(path)
    rows = messages(capture)
    # The view numbers messages as the dump's own "* Index n" comments do.
    indexes = [int(n) for n in re.findall(r"^\* Index (\d+)$", open(path, encoding="latin-1").read(), re.M)]
    assert [r["index"] for r in rows] == indexes == list(range(1, len(noisy) + 1))
    assert [r["payload"] for r in rows] == [m.payload for m in noisy]
    copies = [r for r in rows if r["duplicate_of"] is not None]
    assert len(copies) == len(repeated)
    for copy in copies:
        ref = copy["duplicate_of"]
        assert ref["source"] == path and ref["index"] < copy["index"]  # the first of the two is kept
        kept = rows[ref["index"] - 1]
        assert (kept["correl_id"], kept["payload"], kept["duplicate_of"]) == (copy["correl_id"], copy["payload"], None)
        assert (kept["role"], kept["attachment"], kept["sequence"]) == (copy["role"], copy["attachment"],
                                                                         copy["sequence"])
    found = {r["attachment"]: r for r in read(capture, view="attachments").to_pylist()}
    assert found[DS_KEY.hex().upper()]["duplicate_messages"] == 2  # header, application message
    assert found[TXT_KEY.hex().upper()]["duplicate_messages"] == 4
    assert all(r["complete"] for r in found.values())
    [text_file] = [r for r in read(capture, view="files").to_pylist() if r["attachment"] == TXT_KEY.hex().upper()]
    assert text_file["text"] == "".join(f"line {i}\n" for i in range(20))
    assert read(capture).column("X").to_pylist() == [i * 0.5 for i in range(10)]


def test_a_segment_repeated_inside_its_group_is_named_and_counted(tmp_path, clean):
    """One MQ segment captured twice within its own group: the joined message is the same, the
    copy is counted on its attachment and named by the messages view (it used to go unmarked)."""
    pairs, capture, rows, atts = clean
    k = position(rows, ROLE_SEQUENCED, atts["WORK.PEOPLE"]["attachment"], 1)
    descriptor, payload = pairs[k]
    size = 50
    pieces = [(dataclasses.replace(descriptor, version=2, group_id=b"\x05" * 24, msg_seq_number=1, offset=offset,
                                   msg_flags=MQMF_SEGMENT | (MQMF_LAST_SEGMENT if offset + size >= len(payload)
                                                             else 0)), payload[offset:offset + size])
              for offset in range(0, len(payload), size)]
    assert len(pieces) >= 2
    path = dump_messages(tmp_path, pairs[:k] + pieces[:1] + pieces + pairs[k + 1:])
    noisy = Capture.open(path)
    assert attachments(noisy)["WORK.PEOPLE"]["duplicate_messages"] == 1
    noisy_rows = messages(noisy)
    first, copy = noisy_rows[k], noisy_rows[k + 1]
    assert first["duplicate_of"] is None and copy["duplicate_of"] == {"source": path, "index": k + 1}
    assert (copy["role"], copy["sequence"]) == (ROLE_SEQUENCED, 1)
    assert read(noisy).equals(read(capture))
