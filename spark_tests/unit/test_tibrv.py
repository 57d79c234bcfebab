"""CMI over TIB/Rendezvous (docs/spec/tibrv.md#cmi-over-tibrv) on RV bytes built field by field from the
tables of docs/spec/tibrv.md and raimd's wire rules (``spark_tests/rv_messages.py``), with none of our writer."""
from __future__ import annotations

import pytest

from cmi_datasource import Capture, read, transports
from cmi_datasource.engine.decode import _decodes_in_bulk, slice_batches
from cmi_datasource.engine.reread import reread
from cmi_datasource.errors import CmiFormatError, TruncatedError
from cmi_datasource.transports.tibrv.wire import read_message

from support import slices_of
from rv_messages import (BLANKS, MAGIC, SAS_MISSING, ato, atx, dat, fdc, field, hdr, i16, lst, message, msg,
                         string, var)

VARIABLES = [("ID", "", 0, 0, "Row id", True, 8), ("NAME", "$", 10, 0, "Name", False, 10),
             ("RATE", "PERCENT", 8, 2, "Rate", True, 4), ("BORN", "DATE", 9, 0, "Born", True, 8)]
NUMERIC = [v[5] for v in VARIABLES]
ROWS = [(1.0, "Ann", 0.5, 0.0), (2.0, "Bob Smith", 1.5, 365.0), (3.0, "", SAS_MISSING, SAS_MISSING),
        (4.0, "Zoë", 0.25, -1.0)]


def capture_bytes(lst_count=4, rows=ROWS):
    return b"".join([
        hdr([(1, BLANKS, "WORK", "RVDATA", "Rows over RV")]),
        msg([(1, 100), (2, 9999), (3, 9999.1234), (4, "ABCDEFGHIJKLMNOPQRSTUVWXYZ".ljust(50))]),
        dat(len(rows), len(VARIABLES), 30), var(VARIABLES),
        ato([tuple(r) for r in rows[:2]], NUMERIC), ato([tuple(r) for r in rows[2:]], NUMERIC), lst(lst_count),
        hdr([(2, BLANKS, "FILENAME", "notes.txt", "Notes")]), fdc(80, 18), atx(["line one", "line two"]), lst(2),
    ])


def write(tmp_path, data, name="capture.rv") -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


# -- tests --------------------------------------------------------------------------------------


def test_the_wire_format_by_raimds_rules():
    data = message([field("num", 7, 12, b"\x12\x34\x56\x78", scalar=True), string("long", None, "x" * 200),
                    field("odd", None, 99, b"\x01\x02\x03")])
    fields, end = read_message(data, 0)
    assert end == len(data) and [(f.name, f.field_id, f.type) for f in fields] == [
        ("num", 7, 12), ("long", None, 8), ("odd", None, 99)]
    assert fields[0].value == 0x12345678 and fields[1].value == b"x" * 200  # a 0x79 + u16 size
    assert fields[2].value == b"\x01\x02\x03"  # a type the reader does not know, skipped by its size


def test_a_nested_message():
    # raimd's { "data" : { "field" : "value" } }; its drawing's sizes disagree with its code, which
    # this follows: 23 bytes for the inner message, 39 in all.
    inner = message([string("field", None, "value")])
    outer = message([field("data", None, 1, inner)])
    assert inner[:4] == bytes.fromhex("00000017") and outer[:4] == bytes.fromhex("00000027")
    assert outer[8:24] == bytes.fromhex("05 64617461 00 01 7a 00000017 9955eeaa".replace(" ", ""))
    [nested], _ = read_message(outer, 0)
    assert [(f.name, f.value) for f in nested.value] == [("field", b"value")]


def test_an_rv_capture_reads_the_dataset_its_variables_and_files(tmp_path):
    path = write(tmp_path, capture_bytes())
    assert transports.detect_format(path).name == "tibrv"
    capture = Capture.open(path)
    table = read(capture)
    rows = table.to_pylist()
    assert [r["ID"] for r in rows] == [1.0, 2.0, 3.0, 4.0]
    assert [r["NAME"] for r in rows] == ["Ann", "Bob Smith", None, "Zoë"]  # UTF-8 by default (defaultCcsid)
    assert [r["RATE"] for r in rows] == [0.5, 1.5, None, 0.25]  # 4-byte numerics: the high-order bytes
    assert str(rows[1]["BORN"]) == "1960-12-31" and rows[2]["BORN"] is None
    assert table.schema.field("RATE").metadata[b"format"] == b"PERCENT8.2"
    assert table.schema.field("NAME").metadata[b"label"] == b"Name"
    dataset, notes = read(capture, view="attachments").to_pylist()
    assert (dataset["name"], dataset["complete"], dataset["observations"], dataset["label"]) == (
        "WORK.RVDATA", True, 4, "RV rows")
    assert dataset["message"] == b"100;9999;9999.1234;" + b"ABCDEFGHIJKLMNOPQRSTUVWXYZ".ljust(50)
    assert dataset["message_values"] == ["100", "9999", "9999.1234", "ABCDEFGHIJKLMNOPQRSTUVWXYZ".ljust(50)]
    assert (notes["name"], notes["kind"], notes["complete"]) == ("notes.txt", "text", True)
    assert read(capture, view="files").column("text").to_pylist() == ["line one\nline two\n"]
    assert [v["name"] for v in read(capture, view="variables").to_pylist()] == ["ID", "NAME", "RATE", "BORN"]


def test_the_messages_view_shows_each_rv_message(tmp_path):
    rows = read(write(tmp_path, capture_bytes()), view="messages").to_pylist()
    assert [r["rv_type"] for r in rows] == ["HDR", "MSG", "DAT", "VAR", "ATO", "ATO", "LST", "HDR", "FDC", "ATX",
                                            "LST"]
    assert [r["role"] for r in rows[:7]] == ["header", "application", "sequenced", "sequenced", "sequenced",
                                             "sequenced", "count"]
    assert [r["sequence"] for r in rows[2:7]] == [1, 2, 3, 4, 0]
    assert rows[4]["rv_fields"] == 2 + 2 * 2 * 4 and rows[4]["rv_summary"].startswith("ATO(1)=2 ATO(2)=3 ATO(3)=1")
    assert all(r["transport"] == "tibrv" and r["msg_id"] is None for r in rows)


@pytest.mark.parametrize("obs_length", [30, 32], ids=["unpadded", "padded"])
def test_partitions_rebuild_ato_messages_from_their_planned_layout(tmp_path, obs_length):
    rows = [(float(i), f"n{i}", i / 4, float(i)) for i in range(300)]
    data = b"".join([hdr([(1, BLANKS, "WORK", "MANY", "")]), dat(300, 4, obs_length), var(VARIABLES)]
                    + [ato(rows[i:i + 20], NUMERIC) for i in range(0, 300, 20)] + [lst(2 + 15)])
    capture = Capture.open(write(tmp_path, data), use_index_cache=False)
    [att] = capture.attachments
    slices = slices_of(capture, att, 2000)
    assert len(slices) > 3 and all(m.hint is not None for s in slices for m in s.messages)
    assert all(_decodes_in_bulk(s) for s in slices)  # their rows written by the kernel straight from the file
    got = [r for s in slices for b in slice_batches(s, batch_rows=64) for r in b.to_pylist()]
    assert [(r["ID"], r["NAME"]) for r in got] == [(float(i), f"n{i}") for i in range(300)]
    alone = [r for s in slices for b in slice_batches(s, batch_rows=64, messages=list(reread(s.messages, s.formats)))
             for r in b.to_pylist()]
    assert alone == got


def test_ato_heads_of_other_shapes_read_alike_in_a_partition(tmp_path):
    # A partition reads the heads of the writers' shape by numpy at once and any other one by one:
    # a count sent as a 2-byte int and a record type sent as a string are heads the wire allows.
    rows = [(float(i), f"n{i}", i / 4, float(i)) for i in range(100)]

    def other_head(message_bytes):
        pairs = message_bytes[8 + 2 * 13:]  # past the header and the two 13-byte int fields
        return message([i16("ATO", 1, 20), string("ATO", 2, "3"), pairs])

    atos = [ato(rows[i:i + 20], NUMERIC) for i in range(0, 100, 20)]
    atos[1], atos[4] = other_head(atos[1]), other_head(atos[4])
    data = b"".join([hdr([(1, BLANKS, "WORK", "MANY", "")]), dat(100, 4, 30), var(VARIABLES)] + atos + [lst(7)])
    capture = Capture.open(write(tmp_path, data), use_index_cache=False)
    [att] = capture.attachments
    [part] = slices_of(capture, att, 1 << 30)
    assert _decodes_in_bulk(part)
    got = [r for b in slice_batches(part) for r in b.to_pylist()]
    assert [(r["ID"], r["NAME"]) for r in got] == [(float(i), f"n{i}") for i in range(100)]
    assert got == [r for b in slice_batches(part, messages=list(reread(part.messages, part.formats)))
                   for r in b.to_pylist()]


@pytest.mark.parametrize("where", ["value", "size"])
def test_an_rv_capture_changed_since_planning_is_an_error_naming_the_ato_message(tmp_path, where):
    rows = [(float(i), f"n{i}", i / 4, float(i)) for i in range(60)]
    data = b"".join([hdr([(1, BLANKS, "WORK", "MANY", "")]), dat(60, 4, 30), var(VARIABLES)]
                    + [ato(rows[i:i + 20], NUMERIC) for i in range(0, 60, 20)] + [lst(2 + 3)])
    path = write(tmp_path, data)
    capture = Capture.open(path, use_index_cache=False)
    [att] = capture.attachments
    [part] = slices_of(capture, att, 1 << 30)
    source, index, start, end = part.messages[1].spans[0]
    changed = bytearray(data)
    if where == "value":
        changed[end - 1] ^= 0x01  # the last byte of the last row's last value
    else:
        changed[start + 3] += 1  # the message's size: it no longer ends where planned
    with open(path, "wb") as f:
        f.write(bytes(changed))
    with pytest.raises(CmiFormatError, match="changed since it was planned") as e:
        [b for b in slice_batches(part)]
    assert e.value.message_index == index


def test_an_lst_that_miscounts_makes_the_attachment_incomplete(tmp_path):
    capture = Capture.open(write(tmp_path, capture_bytes(lst_count=5)))
    dataset = read(capture, view="attachments").to_pylist()[0]
    assert dataset["complete"] is False
    assert "its LST counts 5 messages, 4 were found between the header and it" in dataset["problem"]


def test_a_vtype_that_contradicts_var_names_observation_variable_and_offset(tmp_path):
    rows = [(1.0, 2.0, 0.5, 0.0)]  # NAME sent as a number
    data = b"".join([hdr([(1, BLANKS, "WORK", "BAD", "")]), dat(1, 4, 30), var(VARIABLES),
                     ato(rows, [True, True, True, True]), lst(3)])
    with pytest.raises(CmiFormatError, match="observation 1, variable 2: the vtype contradicts") as e:
        read(Capture.open(write(tmp_path, data), use_index_cache=False))  # FAILFAST
    bad = data.index(ato(rows, [True] * 4))
    assert e.value.message_index == 3 and e.value.location.file_offset == bad
    assert e.value.offset > 8  # the offset of the vtype field inside the message


def test_truncated_and_oversized_messages_are_typed_errors(tmp_path):
    good = capture_bytes()
    path = write(tmp_path, good[:-3], "cut.rv")
    cut = Capture.open(path, use_index_cache=False)
    assert cut.messages[-1].damage is not None  # listed, with its problem
    assert cut.messages[-1].details.kind == "LST"  # its first field still names it: the notes' LST
    assert read(cut).num_rows == 4  # the damage is the other attachment's
    with pytest.raises(TruncatedError):
        read(path, view="files", mode="FAILFAST")
    inner = message([string("f", None, "v")])
    lying = message([field("data", None, 1, (len(inner) + 50).to_bytes(4, "big") + inner[4:])])
    with pytest.raises(TruncatedError):  # a nested message longer than its parent
        read_message(lying, 0)
    huge = bytes([0xFF, 0xFF, 0xFF, 0xF0]) + MAGIC
    with pytest.raises(TruncatedError):  # a declared size never allocates
        read(Capture.open(write(tmp_path, huge, "huge.rv"), use_index_cache=False))


# -- writing ------------------------------------------------------------------------------------


def test_one_table_written_as_mq_dump_and_as_rv_capture_reads_back_identically(tmp_path):
    import datetime as dt
    import io

    import pyarrow as pa

    from cmi_datasource.engine.write import DatasetToWrite, FileToWrite, WriteOptions, write_attachments_dump
    schema = pa.schema([pa.field("ID", pa.float64(), metadata={"label": "Row id"}),
                        pa.field("NAME", pa.string(), metadata={"label": "Name", "format": "$20."}),
                        pa.field("BORN", pa.date32(), metadata={"format": "DATE9."}), pa.field("SCORE", pa.float64())])
    table = pa.table({
        "ID": [float(i) for i in range(5000)],
        "NAME": [f"person {i} ü" if i % 7 else None for i in range(5000)],
        "BORN": [dt.date(1950, 1, 1) + dt.timedelta(days=i) for i in range(5000)],
        "SCORE": [i / 8 for i in range(5000)],
    }, schema=schema)
    datasets = [DatasetToWrite(table, "WORK", "PEOPLE", label="People", description="Both ways")]
    files = [FileToWrite("notes.txt", text="one\ntwo\n"), FileToWrite("blob.bin", content=bytes(range(256)) * 3)]
    options = WriteOptions(encoding=273, max_message_bytes=2000, deterministic_seed="both",
                           application_message="hello")
    paths = {}
    for fmt in ("dmpmqmsg", "tibrv"):
        out = io.BytesIO()
        write_attachments_dump(out, datasets, files, options, format=fmt)
        paths[fmt] = write(tmp_path, out.getvalue(), f"both.{fmt}")
    mq, rv = Capture.open(paths["dmpmqmsg"]), Capture.open(paths["tibrv"])
    assert rv.formats[paths["tibrv"]] == "tibrv"
    assert read(rv).equals(read(mq), check_metadata=True)
    assert read(rv).schema.field("ID").metadata[b"label"] == b"Row id"
    assert read(rv, view="files").select(["name", "kind", "lrecl", "size", "content", "text"]).equals(
        read(mq, view="files").select(["name", "kind", "lrecl", "size", "content", "text"]))
    kept = ["kind", "name", "description", "complete", "observations", "variables", "label"]
    assert read(rv, view="attachments").select(kept).equals(read(mq, view="attachments").select(kept))
    assert read(rv, view="attachments").column("message").to_pylist()[0] == b"hello"
    counts = [r for r in read(rv, view="messages").to_pylist() if r["rv_type"] == "LST"]
    assert all(r["problem"] is None for r in counts) and len(counts) == 3
    [att] = [a for a in rv.attachments if a.entry.name == "WORK.PEOPLE"]
    slices = slices_of(rv, att, 20_000)
    assert len(slices) > 2
    assert [r for s in slices for b in slice_batches(s) for r in b.to_pylist()] == table.to_pylist()


def test_rv_capture_needs_big_endian_numbers():
    import io

    import pyarrow as pa

    from cmi_datasource.engine.write import DatasetToWrite, WriteOptions, write_attachments_dump
    from cmi_datasource.errors import CmiEncodeError
    with pytest.raises(CmiEncodeError, match="encoding 273"):
        write_attachments_dump(io.BytesIO(), [DatasetToWrite(pa.table({"X": [1.0]}), "W", "X")],
                               options=WriteOptions(encoding=546), format="tibrv")


def test_ato_rows_in_any_field_shape_the_wire_allows_read_alike():
    # The kernel reads rows whose fields all have the usual shape (named alike, one-byte sizes) on a
    # fast path and the others field by field: a mix gives every row, and an error names its own row.
    import struct

    from cmi_datasource.errors import Location
    from cmi_datasource.transports.tibrv.observations import observation_rows
    from cmi_datasource.transports.tibrv.records import ObservationLayout, RvCmiError
    from rv_messages import f64, i32
    layout = ObservationLayout(8 + 130, (True, False), (8, 130))
    texts = ["short", "x" * 125, "after", "unnamed", "last"]  # 125 bytes: its size takes 0x79 and a u16

    def pair(fid, vtype, value, name="ATO"):
        return [i32(name, fid, vtype), f64(name, fid + 1, value) if vtype == 1 else string(name, fid + 1, value)]

    fields = [i32("ATO", 1, len(texts)), i32("ATO", 2, 3)]
    for row, text in enumerate(texts):
        name = "" if text == "unnamed" else "ATO"
        fields += pair(3 + 4 * row, 1, float(row), name) + pair(5 + 4 * row, 2, text, name)
    body = message(fields)
    want = b"".join(struct.pack(">d", float(row)) + text.encode().ljust(130) for row, text in enumerate(texts))
    assert observation_rows(body, 8, len(body), layout, Location("f", 0, 0)) == (3).to_bytes(4, "big") + want
    bad = message(fields[:-1] + [f64("ATO", 99, 1.0)])  # the last row's text sent as a number
    with pytest.raises(RvCmiError, match="observation 5, variable 2: a character value is not a string"):
        observation_rows(bad, 8, len(bad), layout, Location("f", 0, 0))
