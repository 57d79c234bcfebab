"""A dump's message index made without a message per plain record (``IndexKeep.plain``, made by
``dmpmqmsg._plain_messages`` from the C walker's rows): the same entries, equal and of the same
types, as each message made whole and kept by ``index.entry`` (the object path, its reference),
on clean, wrapped, segmented, damaged, descriptor-less and CRLF dumps, read whole or in chunks."""
from __future__ import annotations

import os
import random
from unittest import mock

import pytest

from cmi_datasource.engine import index
from cmi_datasource.transports import capture_format
from cmi_datasource.transports.base import scan_recovering
from cmi_datasource.transports.mq import dmpmqmsg
from cmi_datasource.transports.mq.transport import DmpmqmsgFormat

from conftest import dump_messages
from mq_traffic import dead_letter, plain, rfh2, segmented, v1_with_mqmde, xmitq

DMPMQMSG = capture_format("dmpmqmsg")


def reference(path: str):
    """Every message made whole by the line parser (no C walker), then kept by ``index.entry`` (a
    plain function: no ``IndexKeep``)."""
    transport = DMPMQMSG.transport
    with mock.patch.object(dmpmqmsg, "_plain_records_kernel", lambda: None):
        return list(scan_recovering(DMPMQMSG, path, keep=lambda message: index.entry(message, transport)))


@pytest.fixture
def plain_entries(monkeypatch):
    """The number of entries made from their parts, counted."""
    made = []
    original = index.IndexEntries.plain

    def counted(self, descriptor, payload, origin):
        made.append(origin.message_index)
        return original(self, descriptor, payload, origin)
    monkeypatch.setattr(index.IndexEntries, "plain", counted)
    return made


def same_entries(found, expected) -> None:
    """Equal, of the same types, and each object's fields held as ``made`` holds them (in field order)."""
    assert found == expected
    for a, b in zip(found, expected):
        assert type(a.payload) is type(b.payload) and (a.details is b.details or a.details == b.details)
        assert [type(v) for v in a.origin] == [type(v) for v in b.origin]
        assert type(a.descriptor) is type(b.descriptor) and type(a.full_key) is type(b.full_key)
        assert list(vars(a)) == list(vars(b)) and list(vars(a.descriptor or b)) == list(vars(b.descriptor or b))


@pytest.mark.parametrize("name", ["nightly_batch.dmp", "big_endian_273_819.dmp", "files.dmp", "mixed_types.dmp",
                                  "zos_785_37.dmp", "seed000_external_file.dmp"])
def test_sample_dumps(samples_dir, name, plain_entries):
    path = os.path.join(samples_dir, name)
    same_entries(index.scan(path, DMPMQMSG), reference(path))
    assert plain_entries


def test_wrapped_and_segmented_messages_are_made_whole(tmp_path, plain_entries):
    messages = plain()
    wrapped = [wrap(*messages[i]) for i, wrap in zip(range(2, 6), (xmitq, dead_letter, v1_with_mqmde, rfh2))]
    path = dump_messages(tmp_path, messages + wrapped + segmented(plain(), rng=random.Random(5)))
    found = index.scan(path, DMPMQMSG)
    same_entries(found, reference(path))
    assert sum(m.parts != () or DMPMQMSG.transport.is_piece(m) for m in found) > 0
    assert len(plain_entries) < len(found)  # the wrapped and segmented ones were not made from parts


@pytest.mark.parametrize("damage", ["garbled hex", "cut", "no descriptor", "crlf"])
def test_damaged_and_odd_dumps(tmp_path, damage, plain_entries):
    messages = plain()
    if damage == "no descriptor":
        messages = [(None, p) if i % 3 == 0 else (d, p) for i, (d, p) in enumerate(messages)]
    text = open(dump_messages(tmp_path, messages), "rb").read()
    middle = text.index(b"\nX ", len(text) // 2) + 3
    if damage == "garbled hex":
        text = text[:middle] + b"G" + text[middle + 1:]
    elif damage == "cut":
        text = text[:middle + 7]
    elif damage == "crlf":  # the line parser reads such records; the walker none
        lines = text.split(b"\n")
        text = b"\n".join(line + b"\r" if i % 2 else line for i, line in enumerate(lines))
    path = tmp_path / "odd.dmp"
    path.write_bytes(text)
    found = index.scan(str(path), DMPMQMSG)
    same_entries(found, reference(str(path)))
    if damage in ("garbled hex", "cut"):
        assert any(m.damage is not None for m in found)


@pytest.mark.parametrize("code, line, outcome", [
    (b"A ENC", b"A ENC 2x3", "damaged"), (b"A BOC", b"A ZZZ 1", "damaged"), (b"A ENC", b"A ENC +546", "entry"),
    (b"A MSF", b"A MSF 2", "whole"), (b"A FMT", b"A FMT MQXMIT", "whole")])
@pytest.mark.parametrize("chunk", [4096, None])
def test_attribute_lines_the_c_reader_leaves_amid_a_run(tmp_path, code, line, outcome, chunk, monkeypatch,
                                                        plain_entries):
    """A record amid a run of plain ones with an attribute line the C reader declines or that makes
    its message no plain one: read by the line parser (a number with a sign, here a little-endian
    message's ENC) into an entry, its error raised after the entries before it (a damaged
    stretch), or the message made whole (a segment's MSF, an envelope's FMT)."""
    text = open(dump_messages(tmp_path, plain() * 3), "rb").read()
    at = text.index(b"\n" + code, len(text) // 2) + 1
    text = text[:at] + line + text[text.index(b"\n", at):]
    path = tmp_path / "odd.dmp"
    path.write_bytes(text)
    if chunk is not None:
        monkeypatch.setattr(DmpmqmsgFormat, "_chunk_bytes", chunk)
    found = index.scan(str(path), DMPMQMSG)
    same_entries(found, reference(str(path)))
    assert any(m.damage is not None for m in found) == (outcome == "damaged")
    assert plain_entries
    if outcome != "damaged":  # (a damaged chunk parsed on a thread is parsed again, its entries made twice)
        assert (len(plain_entries) == len(found)) == (outcome == "entry")


@pytest.mark.parametrize("chunk", [4096, 20000])
def test_read_in_chunks_on_threads(big_dump, chunk, monkeypatch, plain_entries):
    expected = reference(big_dump)
    monkeypatch.setattr(DmpmqmsgFormat, "_chunk_bytes", chunk)
    found = index.scan(big_dump, DMPMQMSG)
    same_entries(found, expected)
    assert len(plain_entries) == len(found) and len(found) > 10


def test_an_entry_made_from_parts_keeps_what_entry_keeps(tmp_path):
    """Header and definitions whole, an observation message's record type and content key."""
    messages = plain()
    header = next(m for m in messages if m[0].msg_type == 100000)
    descriptor, payload = max((m for m in messages if m[0].msg_type == 100001), key=lambda m: len(m[1]))
    path = dump_messages(tmp_path, [header, (descriptor, payload + bytes(1000))])
    found = index.scan(path, DMPMQMSG)
    assert not found[0].is_partial and found[0].payload == header[1]
    assert found[1].is_partial and len(found[1].payload) == 4 and found[1] == reference(path)[1]
