"""The folder stream's offsets without Spark (engine/stream.py): which files and attachments each
micro-batch takes, that replaying a micro-batch reads the same rows, limits, availableNow, an
attachment split over two files, the timeout and the read modes."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from cmi_datasource.engine.options import ReadOptions
from cmi_datasource.engine.stream import FolderStream, stream_schema
from cmi_datasource.errors import AttachmentError, CmiOptionError, IncompleteAttachmentError
from landing import land, rows, transfer

T0 = 1_700_000_000  # a landing time, in seconds: files are modified from here on
NOW = (T0 + 100) * 10**9  # "now" for the timeout, in nanoseconds


def folder_stream(folder, **options) -> FolderStream:
    o = ReadOptions.parse({"path": str(folder), "dataset": "FIN.LEDGER", **options})
    schema = stream_schema(o)
    assert schema is not None
    return FolderStream(o, schema)


def run(stream: FolderStream, start: dict, limit=None, now=NOW):
    """One micro-batch as Spark runs it: its end offset (through JSON, as checkpointed) and its rows' IDs."""
    end = json.loads(json.dumps(stream.latest_offset(start, limit, now)))
    ids = []
    for part in stream.partitions(start, end):
        for batch in stream.read(part):
            assert batch.schema.names == stream.schema.names
            ids += [v for v in batch.column("ID").to_pylist()] if "ID" in batch.schema.names else []
    return end, ids


def test_files_landing_over_time_give_every_row_once_and_nothing_when_nothing_is_new(tmp_path):
    land(tmp_path, "a.dmp", transfer(5, 0), T0)
    stream = folder_stream(tmp_path)
    start = stream.initial_offset()
    end, ids = run(stream, start)
    assert sorted(ids) == [float(i) for i in range(5)]
    assert stream.latest_offset(end, None, NOW) == end  # nothing new: no micro-batch
    land(tmp_path, "b.dmp", transfer(3, 5), T0 + 1)
    land(tmp_path, "c.dmp", transfer(2, 8), T0 + 2)
    again, more = run(stream, end)
    assert sorted(more) == [float(i) for i in range(5, 10)]
    assert again["taken"][1].endswith("c.dmp") and again["carried"] == [] and again["waiting"] == []
    # A replay of the micro-batch (a failure before its commit) reads the same rows.
    replayed = [i for p in stream.partitions(end, again) for b in stream.read(p) for i in b.column("ID").to_pylist()]
    assert sorted(replayed) == more
    # A new reader (a restart) from the checkpointed offset: nothing more.
    assert folder_stream(tmp_path).latest_offset(again, None, NOW) == again


def test_an_attachment_rotated_into_the_next_file_is_emitted_once_whole_after_it_lands(tmp_path):
    messages = transfer(40, 0)
    assert len(messages) > 6
    land(tmp_path, "first.dmp", transfer(2, 100), T0)
    land(tmp_path, "rotated-1.dmp", messages[:len(messages) // 2], T0 + 1)
    stream = folder_stream(tmp_path)
    end, ids = run(stream, stream.initial_offset())
    assert sorted(ids) == [100.0, 101.0]  # the split attachment waits
    assert len(end["waiting"]) == 1 and [p for p, _ in end["carried"]] == [str(tmp_path / "rotated-1.dmp")]
    assert stream.latest_offset(end, None, NOW) == end  # waiting, nothing new: no micro-batch
    land(tmp_path, "rotated-2.dmp", messages[len(messages) // 2:], T0 + 2)
    later, ids = run(stream, end)
    assert sorted(ids) == [float(i) for i in range(40)]
    assert later["waiting"] == [] and later["carried"] == []
    land(tmp_path, "next.dmp", transfer(1, 200), T0 + 3)
    _, ids = run(stream, later)
    assert ids == [200.0]  # the carried file is not read again


def test_max_files_and_max_bytes_per_trigger_and_available_now(tmp_path):
    for i in range(5):
        land(tmp_path, f"f{i}.dmp", transfer(1, i), T0 + i)
    stream = folder_stream(tmp_path, maxFilesPerTrigger="2")
    offset, seen, batches = stream.initial_offset(), [], 0
    while True:
        end, ids = run(stream, offset, ("files", 2))
        if end == offset:
            break
        assert len(ids) <= 2
        seen += ids
        batches += 1
        offset = end
    assert batches == 3 and sorted(seen) == [float(i) for i in range(5)]
    size = (tmp_path / "f0.dmp").stat().st_size
    by_bytes = folder_stream(tmp_path)
    end, ids = run(by_bytes, by_bytes.initial_offset(), ("bytes", size * 2 + 1))
    assert ids == [0.0, 1.0]
    end, ids = run(by_bytes, by_bytes.initial_offset(), ("bytes", 1))
    assert ids == [0.0]  # at least one file
    available = folder_stream(tmp_path)
    available.prepare_available_now()
    land(tmp_path, "late.dmp", transfer(1, 99), T0 + 10)
    end, ids = run(available, available.initial_offset())
    assert sorted(ids) == [float(i) for i in range(5)]  # the file landed after the trigger waits
    assert available.latest_offset(end, None, NOW) == end


def test_the_offset_stays_small_whatever_the_number_of_files(tmp_path):
    for i in range(30):
        land(tmp_path, f"f{i:02d}.dmp", transfer(1, i), T0 + i)
    stream = folder_stream(tmp_path)
    end = stream.latest_offset(stream.initial_offset(), None, NOW)
    assert len(json.dumps(end)) < 400 and end["new"]["files"] == 30


def test_a_file_landing_with_an_older_time_inside_a_replayed_micro_batch_is_refused(tmp_path):
    land(tmp_path, "a.dmp", transfer(1, 0), T0)
    land(tmp_path, "c.dmp", transfer(1, 2), T0 + 2)
    stream = folder_stream(tmp_path)
    start = stream.initial_offset()
    end = stream.latest_offset(start, None, NOW)
    land(tmp_path, "b.dmp", transfer(1, 1), T0 + 1)  # modified before the newest file read
    with pytest.raises(CmiOptionError, match="files of a micro-batch differ"):
        stream.partitions(start, end)


@pytest.mark.parametrize("mode, expected", [("FAILFAST", IncompleteAttachmentError), ("PERMISSIVE", None),
                                            ("DROPMALFORMED", None)])
def test_an_attachment_whose_rest_never_lands_is_given_up_after_the_timeout(tmp_path, mode, expected):
    messages = transfer(200, 0)
    land(tmp_path, "rotated-1.dmp", messages[:-3], T0)  # the definitions and some observations
    stream = folder_stream(tmp_path, mode=mode, attachmentTimeout="60s")
    end, ids = run(stream, stream.initial_offset(), now=(T0 + 30) * 10**9)
    assert ids == [] and len(end["waiting"]) == 1
    # 60 s after the stream read its messages (not after the file's modification time).
    assert stream.latest_offset(end, None, (T0 + 61) * 10**9) == end
    late = stream.latest_offset(end, None, (T0 + 91) * 10**9)
    assert late["given_up"] == end["waiting"] and late["waiting"] == [] and late["carried"] == []
    if expected:
        with pytest.raises(expected, match="attachmentTimeout"):
            stream.partitions(end, late)
        return
    batches = [b for p in stream.partitions(end, late) for b in stream.read(p)]
    table = pa.Table.from_batches(batches, schema=stream.schema)
    trusted = [i for i in table.column("ID").to_pylist() if i is not None]
    assert 0 < len(trusted) < 200 and trusted == [float(i) for i in range(len(trusted))]
    reports = table.column("_corrupt_record").drop_null().to_pylist() if mode == "PERMISSIVE" else []
    assert (len(reports) >= 1) == (mode == "PERMISSIVE")
    assert stream.latest_offset(late, None, (T0 + 1000) * 10**9) == late  # given up once


def test_an_attachment_with_other_variables_follows_the_read_mode(tmp_path):
    land(tmp_path, "a.dmp", transfer(2, 0), T0)
    other = pa.table({"ID": pa.array([7.0]), "EXTRA": pa.array([1.0])})
    land(tmp_path, "b.dmp", transfer(1, table=other), T0 + 1)
    failing = folder_stream(tmp_path)
    start = failing.initial_offset()
    with pytest.raises(AttachmentError, match="other variables than the stream's schema"):
        failing.partitions(start, failing.latest_offset(start, None, NOW))
    permissive = folder_stream(tmp_path, mode="PERMISSIVE")
    end = permissive.latest_offset(start, None, NOW)
    table = pa.Table.from_batches([b for p in permissive.partitions(start, end) for b in permissive.read(p)])
    assert sorted(i for i in table.column("ID").to_pylist() if i is not None) == [0.0, 1.0]
    assert ["other variables" in t for t in table.column("_corrupt_record").drop_null().to_pylist()] == [True]


def test_a_stream_needs_a_data_set_and_takes_its_schema_from_the_first_attachment(tmp_path):
    with pytest.raises(CmiOptionError, match="option\\('dataset'"):
        FolderStream(ReadOptions.parse({"path": str(tmp_path)}), pa.schema([]))
    (tmp_path / "empty").mkdir()
    assert stream_schema(ReadOptions.parse({"path": str(tmp_path / "empty"), "dataset": "FIN.LEDGER"})) is None
    messages = transfer(200, 0)
    land(tmp_path / "half", "rotated-1.dmp", messages[:-3], T0)  # definitions, not the rest
    found = stream_schema(ReadOptions.parse({"path": str(tmp_path / "half"), "dataset": "FIN.LEDGER"}))
    assert found is not None and found.names == ["ID", "NAME"] and rows(1).schema.field("ID").type == found.field(
        "ID").type


def test_a_file_landing_in_the_same_tick_as_the_newest_read_with_a_name_before_it_is_read_once(tmp_path):
    # An object store's times have whole seconds: z.dmp read, then a.dmp lands in the same second.
    land(tmp_path, "z.dmp", transfer(2, 0), T0)
    stream = folder_stream(tmp_path)
    first, ids = run(stream, stream.initial_offset())
    assert sorted(ids) == [0.0, 1.0] and first["same_time"] == [str(tmp_path / "z.dmp")]
    land(tmp_path, "a.dmp", transfer(2, 2), T0)
    second, ids = run(stream, first)
    assert sorted(ids) == [2.0, 3.0] and second["new"]["files"] == 1
    assert second["taken"] == first["taken"]  # z.dmp is still the newest taken
    assert stream.batch_files(first, second) == [str(tmp_path / "a.dmp")]
    assert stream.latest_offset(second, None, NOW) == second  # nothing more
    land(tmp_path, "m.dmp", transfer(1, 4), T0 + 1)
    third, ids = run(stream, second)
    assert ids == [4.0] and third["same_time"] == [str(tmp_path / "m.dmp")]


def test_files_of_one_tick_are_each_taken_once_under_a_limit(tmp_path):
    for i in range(4):
        land(tmp_path, f"f{3 - i}.dmp", transfer(1, i), T0)
    stream = folder_stream(tmp_path, maxFilesPerTrigger="1")
    offset, seen = stream.initial_offset(), []
    for _ in range(6):
        offset, ids = run(stream, offset, limit=("files", 1))
        seen += ids
    assert sorted(seen) == [0.0, 1.0, 2.0, 3.0]


def test_an_offset_checkpointed_without_same_time_reads_nothing_again(tmp_path):
    # Offsets written before same_time existed took every file at or before taken: they still do.
    land(tmp_path, "a.dmp", transfer(2, 0), T0)
    land(tmp_path, "b.dmp", transfer(2, 2), T0)
    stream = folder_stream(tmp_path)
    end, _ = run(stream, stream.initial_offset())
    old = {key: value for key, value in end.items() if key != "same_time"}
    assert stream.latest_offset(old, None, NOW) == old
    land(tmp_path, "c.dmp", transfer(1, 4), T0)  # after b.dmp in the order taken
    later, ids = run(stream, old)
    assert ids == [4.0] and later["same_time"] == [str(tmp_path / n) for n in ("a.dmp", "b.dmp", "c.dmp")]
