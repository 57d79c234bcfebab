"""The views as streams without Spark (engine/stream.py): ``attachments`` emits a row per
attachment once, when it completes or is given up; ``messages`` every message of every file once,
with the attachment columns a batch read of the files gives; ``files`` and ``variables`` emit
each attachment once when complete; a transport's own view (sapdb) streams file by file. The
oracle is the batch read of the same files."""
from __future__ import annotations

import json
import os
import shutil

import pyarrow as pa
import pytest

import cmi_datasource
from cmi_datasource.engine.options import ReadOptions
from cmi_datasource.engine.stream import FolderStream, stream_schema
from cmi_datasource.engine.tables import ATTACHMENTS_SCHEMA, messages_schema
from cmi_datasource.engine.write import FileToWrite, WriteOptions, build_messages
from cmi_datasource.errors import CmiOptionError, IncompleteAttachmentError
from landing import land, transfer

T0 = 1_700_000_000  # files are modified from here on (seconds)
NOW = (T0 + 100) * 10**9  # "now" for the timeout (nanoseconds): within the default hour
LATER = (T0 + 7200) * 10**9  # past the default attachmentTimeout (1 h) of every file landed


def view_stream(folder, view: str, **options) -> FolderStream:
    o = ReadOptions.parse({"path": str(folder), "view": view, **options})
    schema = stream_schema(o)
    assert schema is not None
    return FolderStream(o, schema)


def run(stream: FolderStream, start: dict, now=NOW):
    """One micro-batch as Spark runs it: its end offset (through JSON, as checkpointed) and its rows."""
    end = json.loads(json.dumps(stream.latest_offset(start, None, now)))
    batches = [b for part in stream.partitions(start, end) for b in stream.read(part)]
    assert all(b.schema.equals(stream.schema) for b in batches)
    return end, pa.Table.from_batches(batches, schema=stream.schema).to_pylist()


def external_file(name: str, size: int) -> list:
    """The messages of one header carrying one binary file, in messages of 512 bytes."""
    content = bytes(range(256)) * (size // 256)
    return build_messages(files=[FileToWrite(name, content)], options=WriteOptions(max_message_bytes=512))


def test_the_attachments_stream_lists_each_attachment_once_when_it_completes(tmp_path):
    rotated = transfer(40, 100)
    land(tmp_path, "a.dmp", transfer(2, 0), T0)
    land(tmp_path, "rotated-1.dmp", rotated[:len(rotated) // 2], T0 + 1)
    stream = view_stream(tmp_path, "attachments")
    assert stream.schema.equals(ATTACHMENTS_SCHEMA)
    end, first = run(stream, stream.initial_offset())
    assert [(r["name"], r["complete"], r["observations"]) for r in first] == [("FIN.LEDGER", True, 2)]
    land(tmp_path, "rotated-2.dmp", rotated[len(rotated) // 2:], T0 + 2)
    later, second = run(stream, end)
    assert [(r["name"], r["complete"], r["observations"], r["source"]) for r in second] == [
        ("FIN.LEDGER", True, 40, str(tmp_path / "rotated-1.dmp"))]
    assert stream.latest_offset(later, None, NOW) == later  # nothing new, nothing waiting
    # Everything the stream listed, row for row, is what a batch read of the folder lists.
    batch = cmi_datasource.read(str(tmp_path), view="attachments").to_pylist()
    assert sorted(batch, key=str) == sorted(first + second, key=str)


def test_the_attachments_stream_lists_an_attachment_given_up_once_as_incomplete(tmp_path):
    rotated = transfer(40, 100)
    land(tmp_path, "rotated-1.dmp", rotated[:len(rotated) // 2], T0)
    stream = view_stream(tmp_path, "attachments")
    end, found = run(stream, stream.initial_offset())
    assert found == [] and len(end["waiting"]) == 1
    later, found = run(stream, end, now=LATER)
    assert found == cmi_datasource.read(str(tmp_path / "rotated-1.dmp"), view="attachments").to_pylist()
    assert found[0]["complete"] is False and "count message is missing" in found[0]["problem"]
    assert later["waiting"] == [] and later["carried"] == []
    land(tmp_path, "next.dmp", transfer(1, 0), T0 + 7300)
    _, found = run(stream, later, now=LATER + 200 * 10**9)
    assert [r["observations"] for r in found] == [1]  # the one given up is not listed again


def test_the_messages_stream_gives_every_message_once_with_the_attachment_a_batch_read_gives(tmp_path):
    rotated = transfer(40, 100)
    land(tmp_path, "a.dmp", transfer(2, 0), T0)
    land(tmp_path, "rotated-1.dmp", rotated[:len(rotated) // 2], T0 + 1)
    stream = view_stream(tmp_path, "messages")
    assert stream.schema.equals(messages_schema())
    end, first = run(stream, stream.initial_offset())
    land(tmp_path, "rotated-2.dmp", rotated[len(rotated) // 2:], T0 + 2)
    _, second = run(stream, end)
    assert {r["source"] for r in first} == {str(tmp_path / "a.dmp"), str(tmp_path / "rotated-1.dmp")}
    assert {r["source"] for r in second} == {str(tmp_path / "rotated-2.dmp")}  # the carried file's are not again
    batch = cmi_datasource.read(str(tmp_path), view="messages").to_pylist()
    key = [(r["source"], r["index"], r["attachment"], r["sequence"], r["role"], r["payload"])
           for r in batch]
    assert sorted(key) == sorted((r["source"], r["index"], r["attachment"], r["sequence"], r["role"], r["payload"])
                                 for r in first + second)
    assert all(r["attachment"] is not None for r in second)  # its header lies in the carried file


def test_the_files_stream_emits_an_external_file_rotated_over_two_captures_once_whole(tmp_path):
    messages = external_file("REPORT.BIN", 3000)
    assert len(messages) > 4
    land(tmp_path, "part-1.dmp", messages[:3], T0)
    stream = view_stream(tmp_path, "files")
    end, found = run(stream, stream.initial_offset())
    assert found == [] and len(end["waiting"]) == 1
    land(tmp_path, "part-2.dmp", messages[3:], T0 + 1)
    land(tmp_path, "data.dmp", transfer(2, 0), T0 + 2)  # a data set: not the files view's
    _, found = run(stream, end)
    assert [(r["name"], r["content"]) for r in found] == [("REPORT.BIN", bytes(range(256)) * 11)]


def test_a_file_given_up_fails_failfast_and_is_reported_by_permissive(tmp_path):
    messages = external_file("REPORT.BIN", 3000)
    land(tmp_path, "part-1.dmp", messages[:3], T0)
    stream = view_stream(tmp_path, "files")
    end, _ = run(stream, stream.initial_offset())
    with pytest.raises(IncompleteAttachmentError, match="attachmentTimeout"):
        run(stream, end, now=LATER)
    permissive = view_stream(tmp_path, "files", mode="PERMISSIVE")
    end, _ = run(permissive, permissive.initial_offset())
    _, found = run(permissive, end, now=LATER)
    assert [(r["name"], r["content"] is None, "REPORT.BIN" in r["_corrupt_record"]) for r in found] == [
        ("REPORT.BIN", True, True)]


def test_the_variables_stream_lists_a_data_sets_variables_once_when_it_completes(tmp_path):
    rotated = transfer(40, 100)
    land(tmp_path, "rotated-1.dmp", rotated[:len(rotated) // 2], T0)
    stream = view_stream(tmp_path, "variables")
    end, found = run(stream, stream.initial_offset())
    assert found == []
    land(tmp_path, "rotated-2.dmp", rotated[len(rotated) // 2:], T0 + 1)
    _, found = run(stream, end)
    assert [(r["dataset"], r["name"]) for r in found] == [("FIN.LEDGER", "ID"), ("FIN.LEDGER", "NAME")]


def test_a_transports_own_view_streams_file_by_file(tmp_path):
    sample = "sample_queues/sapdb_session.rte"
    shutil.copy(sample, tmp_path / "one.rte")
    os.utime(tmp_path / "one.rte", (T0, T0))
    stream = view_stream(tmp_path, "sapdb")
    end, first = run(stream, stream.initial_offset())
    shutil.copy(sample, tmp_path / "two.rte")
    os.utime(tmp_path / "two.rte", (T0 + 1, T0 + 1))
    _, second = run(stream, end)
    expected = cmi_datasource.read(sample, view="sapdb").to_pylist()
    without_source = [{k: v for k, v in r.items() if k != "source"} for r in expected]
    assert [{k: v for k, v in r.items() if k != "source"} for r in first] == without_source
    assert [{k: v for k, v in r.items() if k != "source"} for r in second] == without_source
    assert {r["source"] for r in second} == {str(tmp_path / "two.rte")}


def test_a_stream_of_the_dataset_view_names_its_data_set(tmp_path):
    land(tmp_path, "a.dmp", transfer(2, 0), T0)
    with pytest.raises(CmiOptionError, match="names? it with option\\('dataset'"):
        view_stream(tmp_path, "dataset")
    with pytest.raises(CmiOptionError, match="view"):
        view_stream(tmp_path, "no-such-view")
