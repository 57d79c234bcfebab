"""CMI attachment assembly (docs/spec/cmi.md#assembly-rules) and the Capture catalog, without Spark."""
from __future__ import annotations

import dataclasses
import datetime as dt
import random
import struct

import pyarrow as pa
import pytest

from cmi_datasource import read
from cmi_datasource.transports.mq.dmpmqmsg import write_dump
from cmi_datasource.engine.capture import Capture
from cmi_datasource.engine.selection import select_datasets
from cmi_datasource.engine.tables import messages_table
from cmi_datasource.charsets import CharsetPolicy
from cmi_datasource.cmi.assembly import (ROLE_APPLICATION, ROLE_COUNT, ROLE_HEADER, ROLE_OTHER,
                                         ROLE_SEQUENCED, assemble)
from cmi_datasource.cmi.wire import WireFormat
from cmi_datasource.engine.write import DatasetToWrite, FileToWrite, WriteOptions, write_attachments_dump
from cmi_datasource.errors import (AttachmentError, CmiOptionError, DatasetLayoutError,
                                   IncompleteAttachmentError, ValueConversionError)
from cmi_datasource.messages import PhysicalMessage
from cmi_datasource.transports.mq.mqmd import MQMD

from support import build_mq_messages, capture_of, physical

# ---------------------------------------------------------------------------------------------
# Helpers


def people(n: int = 4, offset: int = 0) -> pa.Table:
    return pa.table({
        "id": pa.array([float(offset + i) for i in range(n)], pa.float64()),
        "name": pa.array([f"name {offset + i:04d}" if i % 3 else None for i in range(n)], pa.string()),
        "born": pa.array([dt.date(1950 + i, 1 + i % 12, 1 + i % 28) for i in range(n)], pa.date32()),
    })


def cars(n: int = 3) -> pa.Table:
    return pa.table({"make": pa.array([f"make{i}" for i in range(n)]),
                     "price": pa.array([1000.5 * i for i in range(n)])})


def dump_file(tmp_path, datasets=(), files=(), options=WriteOptions(), name="q.dmp") -> str:
    path = tmp_path / name
    with open(path, "wb") as f:
        write_attachments_dump(f, datasets, files, options)
    return str(path)


def by_name(capture: Capture):
    return {a.entry.name: a for a in capture.attachments}


def assembled_view(assembly):
    """Order-free summary of an assembly."""
    return sorted(
        (a.key, a.entry.name, a.complete, a.expected,
         tuple(sorted((k, m.payload) for k, m in a.sequenced.items())),
         a.application.payload if a.application else None)
        for a in assembly.attachments)


def with_payload(m: PhysicalMessage, payload: bytes) -> PhysicalMessage:
    return dataclasses.replace(m, payload=payload)


def moved(m: PhysicalMessage, **origin) -> PhysicalMessage:
    """``m`` found elsewhere in the capture (``origin``: the Origin fields that differ)."""
    return dataclasses.replace(m, origin=m.origin._replace(**origin))


def with_correl(m: PhysicalMessage, correl: bytes) -> PhysicalMessage:
    return dataclasses.replace(m, descriptor=dataclasses.replace(m.descriptor, correl_id=correl))


def key_of(capture: Capture, name: str) -> bytes:
    return by_name(capture)[name].key


def messages_of(msgs, key: bytes):
    return [m for m in msgs if m.descriptor is not None and m.descriptor.correl_id[:16] == key]


def sequenced(msgs, key: bytes, k: int) -> PhysicalMessage:
    [m] = [m for m in msgs if m.descriptor is not None
           and m.descriptor.correl_id == key + k.to_bytes(4, "big") + bytes(4)]
    return m


def count_message(msgs, key: bytes) -> PhysicalMessage:
    [m] = [m for m in msgs if m.descriptor is not None and m.descriptor.correl_id == key + bytes(8)]
    return m


# ---------------------------------------------------------------------------------------------
# Grouping


def test_grouping_is_independent_of_message_order():
    raw = build_mq_messages([DatasetToWrite(people(30), "work", "people"), DatasetToWrite(cars(), "sashelp", "cars")],
                         [FileToWrite("notes.txt", text="one\ntwo\n")],
                         WriteOptions(max_message_bytes=64, application_message="app"))
    msgs = physical(raw)
    reference = assemble(msgs)
    assert len(reference.attachments) == 3
    assert all(a.complete for a in reference.attachments)
    assert max(len(m.payload) for m in msgs if m.descriptor.msg_type == 100001) <= 64
    rng = random.Random(7)
    orders = [msgs[::-1]] + [rng.sample(msgs, len(msgs)) for _ in range(5)]
    for order in orders:
        shuffled = assemble(order)
        assert assembled_view(shuffled) == assembled_view(reference)
        cap = capture_of(order)
        assert read(cap, dataset="WORK.PEOPLE").equals(read(capture_of(msgs), dataset="WORK.PEOPLE"))
    assert read(capture_of(msgs[::-1]), dataset="work.people").to_pylist() == people(30).to_pylist()


def test_shuffled_dump_file_reads_the_same(tmp_path):
    raw = build_mq_messages([DatasetToWrite(people(50), "work", "people")], options=WriteOptions(max_message_bytes=100))
    assert len(raw) > 6
    shuffled = raw[::-1]
    path = tmp_path / "shuffled.dmp"
    with open(path, "wb") as f:
        write_dump(f, shuffled)
    cap = Capture.open(str(path))
    assert read(cap).to_pylist() == people(50).to_pylist()


def test_sequence_number_little_endian_is_accepted():
    msgs = physical(build_mq_messages([DatasetToWrite(people(20), "w", "p")],
                                   options=WriteOptions(max_message_bytes=80)))
    key = assemble(msgs).attachments[0].key
    rewritten = []
    for m in msgs:
        c = m.descriptor.correl_id
        if c[:16] == key and c[16:20] != bytes(4):
            k = int.from_bytes(c[16:20], "big")
            m = with_correl(m, key + k.to_bytes(4, "little") + bytes(4))
        rewritten.append(m)
    [att] = assemble(rewritten).attachments
    assert att.complete
    assert att.expected == len(att.sequenced) >= 4
    assert read(capture_of(rewritten)).to_pylist() == people(20).to_pylist()


def test_exact_duplicates_are_dropped():
    msgs = physical(build_mq_messages([DatasetToWrite(people(10), "w", "p")],
                                   options=WriteOptions(max_message_bytes=60, application_message="x")))
    n = len(msgs)
    dupes = [moved(m, message_index=n + i, file_offset=10_000 + i, file_end=10_050 + i)
             for i, m in enumerate(msgs)]
    doubled = msgs + dupes[::-1]
    assembly = assemble(doubled)
    [att] = assembly.attachments
    assert att.complete and not att.problems
    assert att.expected == len(att.sequenced) == n - 3  # minus header, application, count
    cap = capture_of(doubled)
    assert read(cap).to_pylist() == people(10).to_pylist()
    # Each dropped duplicate takes the role of the message it repeats.
    for original, dupe in zip(msgs, dupes):
        assert assembly.role_of(dupe) == assembly.role_of(original), original.descriptor.msg_type


def test_conflicting_duplicate_sequenced_message():
    msgs = physical(build_mq_messages([DatasetToWrite(people(10), "w", "p")],
                                   options=WriteOptions(max_message_bytes=60)))
    key = assemble(msgs).attachments[0].key
    victim = sequenced(msgs, key, 3)
    changed = bytearray(victim.payload)
    changed[-1] ^= 0xFF
    conflicting = moved(with_payload(victim, bytes(changed)), message_index=len(msgs))
    cap = capture_of(msgs + [conflicting])
    [att] = cap.attachments
    assert not att.complete
    assert att.problems and "3" in att.why_incomplete() and "conflicting" in att.why_incomplete()
    with pytest.raises(IncompleteAttachmentError):
        read(cap)
    [row] = read(cap, view="attachments").to_pylist()
    assert row["complete"] is False and "conflicting" in row["problem"]


def test_conflicting_duplicate_count_message():
    msgs = physical(build_mq_messages([DatasetToWrite(people(3), "w", "p")]))
    key = assemble(msgs).attachments[0].key
    cm = count_message(msgs, key)
    other = moved(with_payload(cm, struct.pack("<i", 99)), message_index=len(msgs))
    cap = capture_of(msgs + [other])
    assert not cap.attachments[0].complete
    with pytest.raises(IncompleteAttachmentError):
        read(cap)


def test_conflicting_duplicate_headers_are_both_broken_and_the_rest_still_assembles():
    msgs = physical(build_mq_messages([DatasetToWrite(people(3), "w", "p")]))
    header = msgs[0]
    other = moved(with_payload(header, header.payload[:-4] + struct.pack("<i", 1)), message_index=len(msgs))
    assert other.payload != header.payload
    assembly = assemble(msgs + [other])
    assert assembly.attachments == []
    assert [b.message.index for b in assembly.broken_headers] == [0, len(msgs)]
    assert all("2 different header messages share CorrelId" in b.problem for b in assembly.broken_headers)
    assert all(f"message {n} of memory.dmp" in assembly.broken_headers[0].problem for n in (1, len(msgs) + 1))
    cap = capture_of(msgs + [other])
    with pytest.raises(AttachmentError, match="2 unreadable headers"):
        read(cap)


def test_missing_count_message_is_incomplete():
    msgs = physical(build_mq_messages([DatasetToWrite(people(5), "w", "p")]))
    key = assemble(msgs).attachments[0].key
    without = [m for m in msgs if m is not count_message(msgs, key)]
    cap = capture_of(without)
    [att] = cap.attachments
    assert not att.complete
    assert att.expected is None
    assert len(att.sequenced) == 3
    assert "count" in att.why_incomplete()
    with pytest.raises(IncompleteAttachmentError) as e:
        read(cap)
    assert e.value.message_index == 0  # located at the header message
    with pytest.raises(IncompleteAttachmentError):
        read(cap, dataset="W.P")
    [row] = read(cap, view="attachments").to_pylist()
    assert row["complete"] is False and row["expected_messages"] is None and row["found_messages"] == 3


def test_missing_sequenced_message_is_incomplete():
    msgs = physical(build_mq_messages([DatasetToWrite(people(40), "w", "p")],
                                   options=WriteOptions(max_message_bytes=80)))
    key = assemble(msgs).attachments[0].key
    gone = sequenced(msgs, key, 4)
    cap = capture_of([m for m in msgs if m is not gone])
    [att] = cap.attachments
    assert not att.complete
    assert att.missing_sequence_numbers() == [4]
    assert att.expected == len(att.sequenced) + 1
    assert "[4]" in att.why_incomplete()
    with pytest.raises(IncompleteAttachmentError):
        read(cap)
    with pytest.raises(IncompleteAttachmentError):
        att.ordered_messages()


def test_incomplete_attachment_from_a_dump_file(tmp_path):
    raw = build_mq_messages([DatasetToWrite(people(5), "w", "p")])
    path = tmp_path / "cut.dmp"
    with open(path, "wb") as f:
        write_dump(f, raw[:-2] + raw[-1:])  # the last sequenced message (observations) is lost
    cap = Capture.open(str(path))
    [att] = cap.attachments
    assert not att.complete and att.missing_sequence_numbers() == [3]
    with pytest.raises(IncompleteAttachmentError) as e:
        read(cap)
    assert e.value.source == cap.paths[0]


# ---------------------------------------------------------------------------------------------
# Wire conventions detected from the header


@pytest.mark.parametrize("encoding", [546, 273, 785])
@pytest.mark.parametrize("long_size,terminated", [(4, True), (4, False), (8, True), (8, False)])
def test_long_size_and_terminators_are_detected(tmp_path, encoding, long_size, terminated):
    options = WriteOptions(encoding=encoding, ccsid=37 if encoding == 785 else 1208, long_size=long_size,
                           terminated=terminated, application_message="hello")
    table = people(6)
    path = dump_file(tmp_path, [DatasetToWrite(table, "mylib", "mydata", description="desc")],
                     [FileToWrite("data.txt", text="line 1\nline 2\n")], options)
    cap = Capture.open(path)
    order = ">" if encoding in (273, 785) else "<"
    atts = by_name(cap)
    assert set(atts) == {"MYLIB.MYDATA", "data.txt"}
    for att in atts.values():
        assert att.header.wire == WireFormat(order, long_size, terminated)
        assert att.complete
    header_payload = atts["MYLIB.MYDATA"].header_message.payload
    assert header_payload[24:24 + long_size] == (8).to_bytes(long_size, "big" if order == ">" else "little")
    assert read(cap).to_pylist() == table.to_pylist()
    assert atts["MYLIB.MYDATA"].entry.description == "desc"
    assert atts["MYLIB.MYDATA"].application.payload == ("hello".encode("cp037") if encoding == 785 else b"hello")
    layout = cap.layout(atts["MYLIB.MYDATA"])
    assert layout.wire == WireFormat(order, long_size, terminated)
    assert layout.definition.nobs == 6 and layout.definition.nvars == 3


# ---------------------------------------------------------------------------------------------
# Headers with several attachments


def test_header_listing_several_attachments(tmp_path):
    options = WriteOptions(application_message="the application message")
    path = dump_file(tmp_path,
                     [DatasetToWrite(people(3), "work", "people", description="people data"),
                      DatasetToWrite(cars(), "sashelp", "cars")],
                     [FileToWrite("readme.txt", text="hello\nworld\n"),
                      FileToWrite("blob.bin", content=bytes(range(256)) * 3, lrecl=100)],
                     options)
    cap = Capture.open(path)
    headers = {id(a.header) for a in cap.attachments}
    assert len(headers) == 1
    header = cap.attachments[0].header
    assert [(e.attachment_type, e.qualifier1, e.qualifier2, e.description) for e in header.attachments] == [
        (1, "WORK", "PEOPLE", "people data"), (1, "SASHELP", "CARS", ""),
        (2, "FILENAME", "readme.txt", ""), (3, "FILENAME", "blob.bin", "")]
    assert len({e.key for e in header.attachments}) == 4
    assert header.message_correl_id[16:] == bytes(8)
    assert all(e.correl_id[16:] == bytes(8) for e in header.attachments)
    assert [a.entry.kind for a in cap.attachments] == ["dataset", "dataset", "text", "binary"]
    assert all(a.complete for a in cap.attachments)
    assert all(a.application.payload == b"the application message" for a in cap.attachments)
    rows = read(cap, view="attachments").to_pylist()
    assert [(r["name"], r["kind"], r["complete"], r["observations"], r["variables"]) for r in rows] == [
        ("WORK.PEOPLE", "dataset", True, 3, 3), ("SASHELP.CARS", "dataset", True, 3, 2),
        ("readme.txt", "text", True, None, None), ("blob.bin", "binary", True, None, None)]
    assert read(cap, dataset="sashelp.cars").to_pylist() == cars().to_pylist()
    assert read(cap, dataset="WORK.PEOPLE").to_pylist() == people(3).to_pylist()
    variables = read(cap, view="variables").to_pylist()
    assert [(v["dataset"], v["position"], v["name"], v["type"]) for v in variables] == [
        ("WORK.PEOPLE", 1, "id", "num"), ("WORK.PEOPLE", 2, "name", "char"), ("WORK.PEOPLE", 3, "born", "num"),
        ("SASHELP.CARS", 1, "make", "char"), ("SASHELP.CARS", 2, "price", "num")]
    assert variables[2]["format"] == "DATE9."


# ---------------------------------------------------------------------------------------------
# Selecting datasets


def two_dataset_capture(tmp_path, second: pa.Table) -> Capture:
    path = dump_file(tmp_path, [DatasetToWrite(people(3), "work", "people"), DatasetToWrite(second, "lib2", "other")],
                     [FileToWrite("f.txt", text="x\n")])
    return Capture.open(path)


def test_select_by_name_is_case_insensitive(tmp_path):
    cap = two_dataset_capture(tmp_path, cars())
    for name in ("work.people", "WORK.PEOPLE", " Work.People ", "people"):
        [a] = select_datasets(cap, dataset=name)
        assert a.entry.name == "WORK.PEOPLE"
    assert read(cap, dataset="lib2.OTHER").to_pylist() == cars().to_pylist()
    with pytest.raises(CmiOptionError) as e:
        select_datasets(cap, dataset="work.nothere")
    assert "WORK.PEOPLE" in str(e.value) and "LIB2.OTHER" in str(e.value)


def test_select_by_attachment_key(tmp_path):
    cap = two_dataset_capture(tmp_path, cars())
    atts = by_name(cap)
    key = atts["LIB2.OTHER"].key_hex
    assert len(key) == 32
    [a] = select_datasets(cap, attachment=key.lower())
    assert a is atts["LIB2.OTHER"]
    assert read(cap, attachment=key).to_pylist() == cars().to_pylist()
    with pytest.raises(CmiOptionError):
        select_datasets(cap, attachment="00" * 16)
    with pytest.raises(CmiOptionError) as e:
        select_datasets(cap, attachment=atts["f.txt"].key_hex)
    assert "files" in str(e.value)


def test_no_selection_with_one_dataset(tmp_path):
    path = dump_file(tmp_path, [DatasetToWrite(cars(5), "a", "b")], [FileToWrite("f.txt", text="x\n")])
    cap = Capture.open(path)
    [a] = select_datasets(cap)
    assert a.entry.name == "A.B"
    assert read(cap).to_pylist() == cars(5).to_pylist()


def test_no_dataset_at_all(tmp_path):
    cap = Capture.open(dump_file(tmp_path, files=[FileToWrite("f.txt", text="x\n")]))
    with pytest.raises(CmiOptionError):
        select_datasets(cap)


def test_two_datasets_with_identical_layout_are_unioned(tmp_path):
    path = dump_file(tmp_path, [DatasetToWrite(people(3), "work", "first"),
                                DatasetToWrite(people(4, offset=100), "work", "second")])
    cap = Capture.open(path)
    chosen = select_datasets(cap)
    assert [a.entry.name for a in chosen] == ["WORK.FIRST", "WORK.SECOND"]
    table = read(cap)
    assert table.to_pylist() == people(3).to_pylist() + people(4, offset=100).to_pylist()
    assert read(cap, dataset="work.second").to_pylist() == people(4, offset=100).to_pylist()


def test_two_datasets_in_two_files_with_identical_layout_are_unioned(tmp_path):
    first = dump_file(tmp_path, [DatasetToWrite(people(2), "work", "p")], name="a.dmp")
    dump_file(tmp_path, [DatasetToWrite(people(3, offset=10), "work", "p")], name="b.dmp")
    cap = Capture.open(str(tmp_path))
    assert cap.paths == sorted(cap.paths) and cap.paths[0] == first
    assert read(cap).num_rows == 5
    assert read(cap, dataset="WORK.P").to_pylist() == people(2).to_pylist() + people(3, offset=10).to_pylist()


def test_different_layouts_need_a_choice(tmp_path):
    cap = two_dataset_capture(tmp_path, cars())
    with pytest.raises(CmiOptionError) as e:
        select_datasets(cap)
    text = str(e.value)
    atts = by_name(cap)
    for name in ("WORK.PEOPLE", "LIB2.OTHER"):
        assert name in text and atts[name].key_hex in text
    assert "f.txt" not in text
    with pytest.raises(CmiOptionError):
        read(cap)


# ---------------------------------------------------------------------------------------------
# Dataset layout errors, crafted by editing payloads


def observation_message(msgs, key):
    """The last sequenced message of a dataset (it holds observations)."""
    atts = [m for m in msgs if m.descriptor.correl_id[:16] == key and m.descriptor.correl_id[16:20] != bytes(4)]
    return max(atts, key=lambda m: int.from_bytes(m.descriptor.correl_id[16:20], "big"))


def edited_capture(msgs, victim, payload) -> Capture:
    return capture_of([with_payload(m, payload) if m is victim else m for m in msgs])


def test_observation_stream_not_a_whole_number_of_observations():
    msgs = physical(build_mq_messages([DatasetToWrite(people(5), "w", "p")]))
    key = assemble(msgs).attachments[0].key
    obs = observation_message(msgs, key)
    assert struct.unpack_from("<i", obs.payload)[0] == 3
    cap = edited_capture(msgs, obs, obs.payload[:-1])
    [att] = cap.attachments
    assert att.complete  # the messages are all there; their content disagrees
    with pytest.raises(DatasetLayoutError) as e:
        read(cap)
    assert "whole number" in str(e.value)
    assert e.value.message_index == obs.index
    [row] = read(cap, view="attachments").to_pylist()
    assert row["problem"] is not None and "whole number" in row["problem"]


def test_observation_count_disagrees_with_the_definition():
    table = people(5)
    msgs = physical(build_mq_messages([DatasetToWrite(table, "w", "p")]))
    key = assemble(msgs).attachments[0].key
    obs = observation_message(msgs, key)
    obs_length = 8 + len("name 0004") + 8
    assert (len(obs.payload) - 4) == 5 * obs_length
    cap = edited_capture(msgs, obs, obs.payload[:-obs_length])  # one observation lost
    with pytest.raises(DatasetLayoutError) as e:
        read(cap)
    assert "5 observations" in str(e.value) and "4" in str(e.value)


def test_definition_nobs_edited():
    msgs = physical(build_mq_messages([DatasetToWrite(people(5), "w", "p")]))
    key = assemble(msgs).attachments[0].key
    definition = sequenced(msgs, key, 1)
    # type int, version int, long+"DATA"+NUL, long+""+NUL, then long nobs.
    nobs_at = 4 + 4 + (4 + 4 + 1) + (4 + 0 + 1)
    assert struct.unpack_from("<i", definition.payload, nobs_at)[0] == 5
    patched = bytearray(definition.payload)
    struct.pack_into("<i", patched, nobs_at, 7)
    cap = edited_capture(msgs, definition, bytes(patched))
    with pytest.raises(DatasetLayoutError) as e:
        read(cap)
    assert "7 observations" in str(e.value)


def test_variable_lengths_exceed_observation_length():
    msgs = physical(build_mq_messages([DatasetToWrite(cars(2), "w", "p")]))
    key = assemble(msgs).attachments[0].key
    definition = sequenced(msgs, key, 1)
    obslen_at = 4 + 4 + (4 + 4 + 1) + (4 + 0 + 1) + 4 + 4
    obs_length = struct.unpack_from("<i", definition.payload, obslen_at)[0]
    assert obs_length == len("make1") + 8
    patched = bytearray(definition.payload)
    struct.pack_into("<i", patched, obslen_at, obs_length - 1)
    with pytest.raises(DatasetLayoutError):
        read(edited_capture(msgs, definition, bytes(patched)))


# ---------------------------------------------------------------------------------------------
# The messages view


def test_messages_table_roles(tmp_path):
    raw = build_mq_messages([DatasetToWrite(people(3), "work", "people")], [FileToWrite("f.txt", text="a\n")],
                         WriteOptions(application_message="app"))
    stray = (MQMD(msg_type=8, correl_id=b"\x11" * 24), b"not CMI")
    path = tmp_path / "roles.dmp"
    with open(path, "wb") as f:
        write_dump(f, [stray] + raw + [(None, b"no descriptor"), raw[2]])  # raw[2] again: a duplicate
    cap = Capture.open(str(path))
    atts = by_name(cap)
    ds_key = atts["WORK.PEOPLE"].key
    file_key = atts["f.txt"].key
    table = messages_table(cap)
    rows = table.to_pylist()
    assert table.schema.names[:3] == ["source", "index", "offset"]
    assert len(rows) == len(raw) + 3
    assert [r["index"] for r in rows] == list(range(1, len(rows) + 1))  # numbered as dmpmqmsg's * Index
    assert [r["offset"] for r in rows] == [m.file_offset for m in cap.messages]
    summary = [(r["role"], r["attachment"], r["sequence"], r["record_type"]) for r in rows]
    ds, fk = ds_key.hex().upper(), file_key.hex().upper()
    assert summary == [
        (ROLE_OTHER, None, None, None),  # the stray message
        (ROLE_HEADER, None, None, None),
        (ROLE_APPLICATION, None, None, None),
        (ROLE_SEQUENCED, ds, 1, 1),
        (ROLE_SEQUENCED, ds, 2, 2),
        (ROLE_SEQUENCED, ds, 3, 3),
        (ROLE_COUNT, ds, 0, None),
        (ROLE_SEQUENCED, fk, 1, None),  # not a dataset: no record type
        (ROLE_SEQUENCED, fk, 2, None),
        (ROLE_COUNT, fk, 0, None),
        (ROLE_OTHER, None, None, None),  # N message
        (ROLE_SEQUENCED, ds, 1, 1),  # the duplicate has the role of the message it repeats
    ]
    assert rows[0]["msg_type"] == 8 and rows[0]["correl_id"] == "11" * 24
    assert rows[1]["msg_type"] == 100000 and rows[2]["msg_type"] == 100001
    assert rows[-2]["msg_type"] is None and rows[-2]["length"] == len(b"no descriptor")
    assert rows[3]["correl_id"] == ds + "00000001" + "00000000"
    assert all(r["source"] == str(path) for r in rows)
    assert [r["length"] for r in rows[1:-2]] == [len(p) for _, p in raw]
    # The copy names the message it repeats (raw[2], the file's 4th message after the stray one).
    assert rows[-1]["duplicate_of"] == {"source": str(path), "index": 4}
    assert [r["duplicate_of"] for r in rows[:-1]] == [None] * (len(rows) - 1)


def test_duplicate_header_takes_the_header_role():
    msgs = physical(build_mq_messages([DatasetToWrite(people(2), "w", "p")]))
    dupe = moved(msgs[0], message_index=len(msgs))
    assembly = assemble(msgs + [dupe])
    assert assembly.role_of(msgs[0])[0] == ROLE_HEADER
    assert assembly.role_of(dupe)[0] == ROLE_HEADER


def test_ccsid_zero_falls_back_to_the_default_ccsid():
    table = pa.table({"s": pa.array(["café", "naïve", None])})
    raw = build_mq_messages([DatasetToWrite(table, "w", "p")], options=WriteOptions(ccsid=819))
    zeroed = [(dataclasses.replace(d, ccsid=0), p) for d, p in raw]
    msgs = physical(zeroed)
    policy = CharsetPolicy(default_ccsid=819)
    cap = Capture(["memory.dmp"], msgs, assemble(msgs, policy), policy, formats={"memory.dmp": "dmpmqmsg"})
    assert read(cap).column("s").to_pylist() == ["café", "naïve", None]
    assert cap.attachments[0].entry.name == "W.P"
    # Read as UTF-8 instead, the Latin-1 "é" (0xE9) is not valid UTF-8.
    utf8 = CharsetPolicy(default_ccsid=1208)
    with pytest.raises(ValueConversionError):
        read(Capture(["memory.dmp"], msgs, assemble(msgs, utf8), utf8, formats={"memory.dmp": "dmpmqmsg"}))


def test_random_ids_are_drawn_in_blocks_and_never_repeat_a_byte_of_one():
    """IdSource hands out the system's random bytes a slice at a time: each slice is new bytes
    (none taken twice, across the refill of its block) and as long as asked."""
    import hashlib

    from cmi_datasource.cmi import emit

    ids = emit.IdSource()
    taken = [ids.take(24) for _ in range(2 * emit.RANDOM_BLOCK_BYTES // 24 + 3)] + [ids.take(16)]
    assert [len(t) for t in taken[-2:]] == [24, 16]
    assert len(set(taken)) == len(taken)
    big = ids.take(3 * emit.RANDOM_BLOCK_BYTES)  # more than a block: a draw of its own
    assert len(big) == 3 * emit.RANDOM_BLOCK_BYTES and big not in b"".join(taken)
    seeded = emit.IdSource("s")
    assert seeded.take(24) == hashlib.sha256(b"s/1").digest()[:24]
