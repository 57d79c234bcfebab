"""MQ envelopes: transmission and dead-letter queues, MQMDE, MQRFH2, segments, binary captures.

Every case is built from the structure tables (mq_traffic.py) around the messages of one
plain attachment, and must read back as exactly the plain dump's rows.
"""
from __future__ import annotations

import dataclasses
import random

import pytest

from cmi_datasource import Capture, read
from cmi_datasource.transports.mq.mqget import write_capture
from cmi_datasource.engine.tables import messages_table
from cmi_datasource.errors import AttachmentError, IncompleteAttachmentError
from cmi_datasource.layout import BIG, LITTLE
from cmi_datasource.transports.mq.envelope import unwrap
from cmi_datasource.transports.mq.message import mq_message
from cmi_datasource.transports.mq.mqmd import MQMF_LAST_SEGMENT, MQMF_SEGMENT

from conftest import dump_messages as write
from mq_traffic import EXPECTED, dead_letter, mqmde, plain, rfh2, segmented, v1_with_mqmde, xmitq
from support import slices_of

def rows_of(path):
    return read(path).to_pylist()




@pytest.mark.parametrize("wrap", [xmitq, dead_letter, v1_with_mqmde, rfh2], ids=lambda f: f.__name__)
@pytest.mark.parametrize("encoding, ccsid", [(546, 1208), (273, 819), (785, 37)])
def test_wrapped_messages_read_like_the_plain_dump(tmp_path, wrap, encoding, ccsid):
    messages = [wrap(d, p) for d, p in plain(encoding, ccsid)]
    assert rows_of(write(tmp_path, messages)) == rows_of(write(tmp_path, plain(encoding, ccsid), "plain.dmp"))
    assert len(rows_of(write(tmp_path, messages))) == 400


def test_transmission_queue_then_mqmde_then_dead_letter(tmp_path):
    """The order on a transmission queue (docs/spec/mq.md#the-header-chain): MQXQH, MQMDE, MQDLH, data."""
    messages = []
    for d, p in plain():
        d2, p2 = dead_letter(d, p)
        d3, p3 = v1_with_mqmde(d2, p2)
        messages.append(xmitq(d3, p3))
    path = write(tmp_path, messages)
    assert rows_of(path) == EXPECTED
    cap = Capture.open(path)
    row = messages_table(cap).to_pylist()[3]
    assert row["headers"] == ["MQXQH", "MQMDE", "MQDLH"]
    assert row["remote_queue"] == "SAS.IN" and row["remote_qmgr"] == "QM.TARGET"
    assert row["dead_letter_reason"] == 2053 and row["dead_letter_queue"] == "SAS.FULL"
    assert row["format"] == "MQXMIT  " and row["in_attachment"] and row["role"] == "sequenced"


def test_rfh2_properties_are_kept(tmp_path):
    cap = Capture.open(write(tmp_path, [rfh2(d, p) for d, p in plain()]))
    row = messages_table(cap).to_pylist()[0]
    assert row["headers"] == ["MQRFH2"] and row["properties"] == ["<usr><origin>SAS</origin></usr>"]


def physical(d, p):
    return mq_message(d, p, "memory", 0, 0, 1)


def test_version_2_mqmd_with_default_group_fields_adopts_the_mqmde():
    d, p = plain()[3]
    group = b"G" * 24
    message = physical(dataclasses.replace(d, version=2, format="MQHMDE  "),
                       mqmde(d, p, group_id=group, msg_seq_number=5) + p)
    out = unwrap(message)
    assert out.payload == p and out.details.mqmd.group_id == group and out.details.mqmd.msg_seq_number == 5
    assert out.details.envelope.headers == ("MQMDE",) and out.origin.header_length == len(message.payload) - len(p)


def test_version_2_mqmd_with_its_own_group_fields_keeps_the_mqmde_as_data():
    d, p = plain()[3]
    own = dataclasses.replace(d, version=2, format="MQHMDE  ", group_id=b"O" * 24, msg_seq_number=2)
    message = physical(own, mqmde(d, p, group_id=b"G" * 24) + p)
    out = unwrap(message)
    assert out.payload == message.payload and out.details.mqmd.group_id == b"O" * 24


@pytest.mark.parametrize("bad", [
    {"struc_id": b"MDX "},  # wrong structure id
    {"struc_id": "MDE ".encode("cp037")},  # EBCDIC id where the data is ASCII: wrong character set
    {"version": 3},
    {"struc_length": 80},
    {"encoding": 0x7FFF},
])
def test_invalid_mqmde_is_data_not_an_error(bad):
    d, p = plain()[3]
    message = physical(dataclasses.replace(d, version=1, format="MQHMDE  "), mqmde(d, p, **bad) + p)
    out = unwrap(message)
    assert out.payload == message.payload and out.details.envelope is None


def test_mqmde_in_the_other_byte_order_is_data():
    d, p = plain()[3]
    swapped = dataclasses.replace(d, encoding=273)  # the MQMDE is written big-endian, the MQMD says 546
    message = physical(dataclasses.replace(d, version=1, format="MQHMDE  "), mqmde(swapped, p) + p)
    assert unwrap(message).payload == message.payload


def test_truncated_header_is_reported_and_the_data_kept(tmp_path):
    d, p = plain()[3]
    message = physical(dataclasses.replace(d, format="MQXMIT  "), b"XQH " + bytes(20))
    out = unwrap(message)
    assert out.payload == message.payload and "MQXQH needs" in out.details.envelope.problem


@pytest.mark.parametrize("with_mqmde", [False, True])
def test_segments_shuffled_and_duplicated_are_joined(tmp_path, with_mqmde):
    messages = segmented(plain(), rng=random.Random(7), with_mqmde=with_mqmde)
    path = write(tmp_path, messages)
    cap = Capture.open(path)
    assert read(cap).to_pylist() == EXPECTED
    rows = messages_table(cap).to_pylist()
    assert all(r["in_attachment"] for r in rows)
    pieces = [r for r in rows if r["msg_flags"] & MQMF_SEGMENT]
    assert pieces and all(r["role"] == "sequenced" for r in pieces)


def test_a_missing_segment_makes_the_attachment_incomplete(tmp_path):
    messages = segmented(plain())
    victim = next(i for i, (d, _) in enumerate(messages)
                  if d.msg_flags == MQMF_SEGMENT and d.offset == 100)  # a middle segment
    del messages[victim]
    cap = Capture.open(write(tmp_path, messages))
    [att] = read(cap, view="attachments").to_pylist()
    assert att["complete"] is False and "gap: bytes 100 to 200 are missing" in att["problem"]
    with pytest.raises(IncompleteAttachmentError):
        read(cap)


def test_a_missing_last_segment_is_reported(tmp_path):
    messages = segmented(plain())
    victim = max(i for i, (d, _) in enumerate(messages) if d.msg_flags & MQMF_LAST_SEGMENT)
    del messages[victim]
    [att] = read(write(tmp_path, messages), view="attachments").to_pylist()
    assert "last segment is missing" in att["problem"]


@pytest.mark.parametrize("order, codec", [(LITTLE, "latin-1"), (BIG, "latin-1"), (BIG, "cp037")])
def test_binary_mqget_capture(tmp_path, order, codec):
    path = tmp_path / "capture.bin"
    messages = plain(785, 37) if codec == "cp037" else plain()
    with open(path, "wb") as f:
        write_capture(f, messages, order, codec)
    cap = Capture.open(str(path))
    assert read(cap).to_pylist() == EXPECTED
    assert [m.descriptor.correl_id for m in cap.messages] == [d.correl_id for d, _ in messages]


@pytest.mark.parametrize("cut, descriptor_reads", [(2, True), (10, False)])
def test_binary_capture_cut_short_is_a_typed_error(tmp_path, cut, descriptor_reads):
    """The last message is the 4-byte count message: cut by 2 bytes its MQMD still reads (and
    names the attachment that lost it); cut by 10 the MQMD itself is cut."""
    path = tmp_path / "capture.bin"
    with open(path, "wb") as f:
        write_capture(f, plain())
    data = path.read_bytes()
    assert len(plain()[-1][1]) == 4
    path.write_bytes(data[:-cut])
    from cmi_datasource.errors import TruncatedError
    cap = Capture.open(str(path))  # the messages are all listed, the cut one with its problem
    last = cap.messages[-1]
    assert len(cap.messages) == len(plain()) and last.damage is not None and last.payload == b""
    assert (last.descriptor is not None) == descriptor_reads
    if descriptor_reads:
        assert last.descriptor.correl_id == plain()[-1][0].correl_id
    with pytest.raises(TruncatedError) as e:
        read(cap)
    assert e.value.source == str(path) and e.value.message_index == len(plain()) - 1
    assert (e.value.sequence == 0) == descriptor_reads  # the count message of its attachment


def test_dump_without_descriptors_cannot_be_assembled(tmp_path):
    path = write(tmp_path, [(None, p) for _, p in plain()])
    cap = Capture.open(path)
    with pytest.raises(AttachmentError, match="-dN"):
        read(cap)
    assert len(messages_table(cap)) == len(plain())


@pytest.mark.parametrize("wrap", [None, xmitq, rfh2], ids=lambda f: getattr(f, "__name__", "plain"))
@pytest.mark.parametrize("piece_bytes", [1, 10_000, 1 << 20])
def test_partitions_decode_wrapped_messages_across_pieces(tmp_path, monkeypatch, wrap, piece_bytes):
    # The partition path (decode._BulkObservations): MQ header bytes set apart per message, rows
    # straddling messages and the file pieces the kernel decodes at a time, reused buffers.
    from cmi_datasource.engine.decode import slice_batches
    from cmi_datasource.transports.mq import dump_spans, transport
    monkeypatch.setattr(dump_spans, "PIECE_BYTES", piece_bytes)
    pieces = []

    def counted(*args, **kwargs):
        for piece in dump_spans.read_dump_spans(*args, **kwargs):
            pieces.append(len(piece.spans))
            yield piece

    monkeypatch.setattr(transport, "read_dump_spans", counted)
    messages = plain() if wrap is None else [wrap(d, p) for d, p in plain()]
    cap = Capture.open(write(tmp_path, messages))
    [att] = cap.attachments
    slices = slices_of(cap, att, 3000)
    assert len(slices) > 3
    assert all(s.messages and (min(m.header_bytes for m in s.messages) > 0) == (wrap is not None) for s in slices)
    rows = [r for s in slices for b in slice_batches(s, batch_rows=37) for r in b.to_pylist()]
    assert rows == EXPECTED
    assert len(pieces) >= len(slices) and (max(pieces) == 1) == (piece_bytes == 1)


@pytest.mark.parametrize("wrap", [None, xmitq, rfh2], ids=lambda f: getattr(f, "__name__", "plain"))
@pytest.mark.parametrize("order, codec", [(LITTLE, "latin-1"), (BIG, "cp037")])
@pytest.mark.parametrize("piece_bytes", [1, 5_000, 1 << 20])
def test_partitions_copy_binary_capture_payloads_in_bulk(tmp_path, monkeypatch, wrap, order, codec, piece_bytes):
    # A binary MQGET capture's partitions take the format's fast path (no message rebuilt in
    # Python), headers set apart, rows straddling messages and pieces, for either MQMD shape.
    from cmi_datasource.engine.decode import _decodes_in_bulk, slice_batches
    from cmi_datasource.transports.mq import mqget
    monkeypatch.setattr(mqget, "PIECE_BYTES", piece_bytes)
    base = plain(785, 37) if codec == "cp037" else plain()
    messages = base if wrap is None else [wrap(d, p) for d, p in base]
    path = tmp_path / "capture.bin"
    with open(path, "wb") as f:
        write_capture(f, messages, order, codec)
    cap = Capture.open(str(path))
    [att] = cap.attachments
    slices = slices_of(cap, att, 3000)
    assert len(slices) > 3 and all(_decodes_in_bulk(s) for s in slices)
    assert [r for s in slices for b in slice_batches(s, batch_rows=37) for r in b.to_pylist()] == EXPECTED


def test_a_binary_capture_changed_since_planning_is_an_error_naming_the_message(tmp_path):
    from cmi_datasource.engine.decode import slice_batches
    from cmi_datasource.errors import CmiFormatError
    path = tmp_path / "capture.bin"
    with open(path, "wb") as f:
        write_capture(f, plain())
    cap = Capture.open(str(path))
    [att] = cap.attachments
    [part] = slices_of(cap, att, 1 << 30)
    victim = part.messages[len(part.messages) // 2].spans[0]  # (source, index, start, end)
    data = bytearray(path.read_bytes())
    data[victim[3] - 1] ^= 0xFF  # the last data byte of a planned message
    path.write_bytes(bytes(data))
    with pytest.raises(CmiFormatError, match="changed since it was planned") as e:
        [b for b in slice_batches(part)]
    assert e.value.message_index == victim[1]


def test_binary_capture_read_in_chunks_on_threads_is_the_whole_file_parsed(tmp_path):
    from cmi_datasource.transports.mq.mqget import parse_capture, read_capture
    path = tmp_path / "capture.bin"
    with open(path, "wb") as f:
        write_capture(f, [rfh2(d, p) for d, p in plain()])
    whole = list(parse_capture(path.read_bytes(), str(path)))
    for chunk in (100, 3_000, 1 << 20):
        assert list(read_capture(str(path), chunk)) == whole


@pytest.mark.parametrize("mixed", [False, True], ids=["one MQMD version", "versions mixed"])
def test_mqget_fast_path_reads_spans_apart_and_either_mqmd_version_like_the_parse(tmp_path, mixed):
    # Partitions read a piece of the file at once, each record's MQMD and length into a row of
    # their own and its data straight to its place; records of another MQMD version than the
    # first, bytes between planned records and a file cut short read as the parse reads them.
    from cmi_datasource.errors import CmiFormatError
    from cmi_datasource.transports.mq.mqget import parse_capture, read_capture_spans
    messages = [(dataclasses.replace(d, version=1 if mixed and i % 3 == 1 else 2), p) for i, (d, p) in
                enumerate(plain())]
    path = tmp_path / "capture.bin"
    with open(path, "wb") as f:
        write_capture(f, messages)
    parsed = [m for m in parse_capture(path.read_bytes(), str(path))][::2]  # every other record: gaps
    spans = [m.span for m in parsed]
    heads = [4 + i % 3 for i in range(len(spans))]
    got = [bytes(piece.head_of(i)) + bytes(piece.data_of(i))
           for piece in read_capture_spans(spans, heads, room=8, piece_bytes=5_000) for i in range(len(piece.spans))]
    assert got == [m.payload for m in parsed]
    path.write_bytes(path.read_bytes()[:spans[-1][3] - 1])
    with pytest.raises(CmiFormatError, match="changed since it was planned"):
        list(read_capture_spans(spans, heads))
