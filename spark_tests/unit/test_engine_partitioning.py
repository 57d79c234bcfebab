"""One large attachment split into partitions; planning decodes no observation; the index cache."""
from __future__ import annotations

import gc
import os

import pytest

from cmi_datasource import Capture, cache, read
from cmi_datasource.engine import index
from cmi_datasource.messages import DETAILS_REREAD
from cmi_datasource.transports.mq.dmpmqmsg import read_dump, write_dump
from cmi_datasource.engine.decode import slice_batches
from cmi_datasource.engine.plan import partition_target
from cmi_datasource.engine.write import DatasetToWrite

from cmi_datasource.transports import capture_format

from support import STRADDLING_ROWS as N, STRADDLING_TABLE as TABLE, build_mq_messages, slices_of

DMPMQMSG = capture_format("dmpmqmsg")

def test_planning_keeps_only_the_start_of_large_payloads(tmp_path):
    path = tmp_path / "wide.dmp"
    with open(path, "wb") as f:
        write_dump(f, build_mq_messages([DatasetToWrite(TABLE, "LIB", "BIG")]))  # 32 KiB messages
    cap = Capture.open(str(path))
    large = [m for m in cap.messages if m.length > index.KEEP_BYTES]
    assert large and all(m.is_partial for m in large)
    # Observations down to their record type (3, as this dump's encoding writes an int), the rest to KEEP_BYTES.
    kept = {(m.payload if len(m.payload) == 4 else len(m.payload)) for m in large}
    assert kept == {(3).to_bytes(4, "little")}
    assert read(cap).to_pylist() == TABLE.to_pylist()


def test_the_index_keeps_no_mqmd_and_the_messages_view_rereads_it(tmp_path):
    # The MQMD is half of an index entry and planning never reads it: the index leaves it out
    # (Transport.index_details) and the messages view takes it from the message re-read, small
    # messages (kept whole) too.
    pairs = build_mq_messages([DatasetToWrite(TABLE, "LIB", "BIG")])
    path = tmp_path / "wide.dmp"
    with open(path, "wb") as f:
        write_dump(f, pairs)
    cap = Capture.open(str(path))
    assert all(m.details is DETAILS_REREAD for m in cap.messages)
    assert any(not m.is_partial for m in cap.messages) and any(m.is_partial for m in cap.messages)
    rows = read(str(path), view="messages").to_pylist()
    assert [(r["msg_id"], r["put_time"], r["data_ccsid"], r["payload"]) for r in rows] == [
        (d.msg_id.hex().upper(), d.put_time, d.ccsid, payload) for d, payload in pairs]


@pytest.mark.parametrize("target", [5_000, 20_011, 333_333, 10 ** 9])
def test_slices_cover_every_row_once_at_observation_boundaries(big_dump, target):
    cap = Capture.open(big_dump)
    [att] = cap.attachments
    slices = slices_of(cap, att, target)
    assert slices[0].first_row == 0 and slices[-1].last_row == N
    assert all(a.last_row == b.first_row and a.first_row < a.last_row for a, b in zip(slices, slices[1:]))
    if target < 10 ** 9:
        assert len(slices) > 1
        assert all(len(s.messages) < len(slices_of(cap, att, 10 ** 9)[0].messages) for s in slices)
    rows = [r for s in slices for b in slice_batches(s, batch_rows=777) for r in b.to_pylist()]
    assert rows == TABLE.to_pylist()


def test_partition_target_follows_spark_file_sources():
    assert partition_target(1000, 128 << 20, 4) == 250
    assert partition_target(10 << 30, 128 << 20, 2) == 128 << 20
    assert partition_target(0, 128, 4) == 1
    # 5 partitions' worth on 2 cores: 6 smaller ones, so that no core idles in the last wave.
    assert partition_target(5 * 1000, 1000, 2) == 834


def test_index_is_built_once_per_file_version(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, str(tmp_path / "cache"))
    monkeypatch.setattr(index, "DISK_CACHED_FILE_BYTES", 0)
    path = tmp_path / "q.dmp"
    with open(path, "wb") as f:
        write_dump(f, build_mq_messages([DatasetToWrite(TABLE.slice(0, 10), "LIB", "SMALL")]))
    index._MEMORY.clear()
    first = index.indexed(str(path), DMPMQMSG)
    index._MEMORY.clear()  # a new Python worker: only the disk cache is left

    def no_rescan(*_):
        raise AssertionError("the file was scanned again")

    monkeypatch.setattr(index, "scan", no_rescan)
    assert index.indexed(str(path), DMPMQMSG) == first
    monkeypatch.undo()
    os.utime(path, ns=(1, 1))  # a changed file is scanned again
    assert index.indexed(str(path), DMPMQMSG) == first


@pytest.mark.parametrize("chunk", [64, 1000, 4096])
def test_dump_read_in_chunks_is_the_same(big_dump, chunk):
    whole = list(read_dump(big_dump))
    assert list(read_dump(big_dump, chunk_bytes=chunk * 10)) == whole


def test_building_an_index_leaves_the_cycle_collector_as_it_was(big_dump, tmp_path, monkeypatch):
    # index.scan pauses the collector while the messages accumulate; it must run again after,
    # also when the scan fails, and stay off for a caller that had turned it off.
    whole = list(read_dump(big_dump))
    assert gc.isenabled()
    assert index.scan(big_dump, DMPMQMSG) == [index.entry(m, DMPMQMSG.transport) for m in whole] and gc.isenabled()

    def failing(*_, **__):
        assert not gc.isenabled()
        raise OSError("the disk went away")

    monkeypatch.setattr(index, "scan_recovering", failing)
    with pytest.raises(OSError):
        index.scan(big_dump, DMPMQMSG)
    assert gc.isenabled()
    gc.disable()
    try:
        with pytest.raises(OSError):
            index.scan(big_dump, DMPMQMSG)
        assert not gc.isenabled()
    finally:
        gc.enable()


def entries(directory) -> list:
    """The cache's entries in ``directory`` (beside them: its key)."""
    return [name for name in os.listdir(directory) if name.endswith(cache.ENTRY_SUFFIX)]


def _index_three_dumps(tmp_path) -> list:
    """Index three small dumps, their cache files written in order q0, q1, q2; their names."""
    names = []
    for n in range(3):
        path = tmp_path / f"q{n}.dmp"
        with open(path, "wb") as f:
            write_dump(f, build_mq_messages([DatasetToWrite(TABLE.slice(0, 5), "LIB", f"S{n}")]))
        index.indexed(str(path), DMPMQMSG)
        cache_file = tmp_path / "cache" / cache.entry_name(index.index_key(str(path), DMPMQMSG))
        os.utime(cache_file, (n + 1, n + 1))
        names.append(os.path.basename(cache_file))
    return names


@pytest.fixture
def pruned_every_store(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "STORES_PER_PRUNE", 1)
    monkeypatch.setattr(cache, "_stores_since_prune", 0)
    monkeypatch.setattr(cache, "_stored_before", True)
    monkeypatch.setattr(index, "DISK_CACHED_FILE_BYTES", 0)
    index._MEMORY.clear()
    yield
    index._MEMORY.clear()


def test_index_cache_keeps_only_the_newest_files(tmp_path, monkeypatch, pruned_every_store):
    monkeypatch.setattr(cache, "CACHE_FILES_KEPT", 2)
    q0, q1, q2 = _index_three_dumps(tmp_path)
    assert sorted(entries(tmp_path / "cache")) == sorted([q1, q2])


def test_index_cache_keeps_within_its_bytes(tmp_path, monkeypatch, pruned_every_store):
    # Room for two of the three indexes: the oldest goes.
    q0, q1, q2 = _index_three_dumps(tmp_path)
    sizes = {n: os.path.getsize(tmp_path / "cache" / n) for n in (q0, q1, q2)}
    monkeypatch.setattr(cache, "CACHE_BYTES_KEPT", sizes[q1] + sizes[q2])
    cache.prune()
    assert sorted(entries(tmp_path / "cache")) == sorted([q1, q2])


def test_index_cache_prunes_once_per_many_stores(tmp_path, monkeypatch, pruned_every_store):
    # Pruning stats the whole cache: a load of thousands of small dumps must not do it per file.
    monkeypatch.setattr(cache, "STORES_PER_PRUNE", 3)
    monkeypatch.setattr(cache, "CACHE_FILES_KEPT", 1)
    pruned = []
    real_prune = cache._prune
    monkeypatch.setattr(cache, "_prune", lambda directory: pruned.append(1) or real_prune(directory))
    _index_three_dumps(tmp_path)
    assert len(pruned) == 1
    assert len(entries(tmp_path / "cache")) == 1


def test_a_process_first_store_prunes_unless_the_cache_was_pruned_lately(tmp_path, monkeypatch,
                                                                          pruned_every_store):
    # Each new Spark worker's first index stored used to list and stat the whole cache (0.19 s
    # for 20,000 entries); the marker's mtime says when some process last did.
    monkeypatch.setattr(cache, "STORES_PER_PRUNE", 1000)
    monkeypatch.setattr(cache, "CACHE_FILES_KEPT", 1)
    pruned = []
    real_prune = cache._prune
    monkeypatch.setattr(cache, "_prune", lambda directory: pruned.append(1) or real_prune(directory))
    monkeypatch.setattr(cache, "_stored_before", False)  # a new process: no marker yet, so it prunes
    _index_three_dumps(tmp_path)
    marker = tmp_path / "cache" / cache.PRUNED_MARKER
    assert len(pruned) == 1 and marker.is_file()
    monkeypatch.setattr(cache, "_stored_before", False)  # another new process, just after: no prune
    cache.store(("k", 1), [1])
    assert len(pruned) == 1
    old = marker.stat().st_mtime - cache.PRUNE_INTERVAL_SECONDS - 1
    os.utime(marker, (old, old))
    monkeypatch.setattr(cache, "_stored_before", False)  # and one after the interval: it prunes
    cache.store(("k", 2), [2])
    assert len(pruned) == 2 and marker.stat().st_mtime > old
    assert len(entries(tmp_path / "cache")) == 1


def test_a_capture_is_freed_by_reference_counting_alone(samples_dir, monkeypatch):
    # Spark workers freeze what they hold (gc.freeze) after their first task, so a capture
    # evicted from a worker's cache must not need the cycle collector, even one that cached a
    # layout error (an exception's traceback would hold the capture in a cycle).
    import gc
    import weakref
    from cmi_datasource.engine import capture
    from cmi_datasource.errors import DatasetLayoutError
    gc.collect()
    gc.disable()
    try:
        cap = Capture.open(samples_dir)
        for view in ("attachments", "variables", "files"):
            read(cap, view=view)
        read(cap, dataset="SALES.MONTHLY")
        monkeypatch.setattr(capture, "read_layout", lambda *a: (_ for _ in ()).throw(DatasetLayoutError("bad")))
        cap._layouts.clear()
        with pytest.raises(DatasetLayoutError):
            cap.layout(next(a for a in cap.attachments if a.entry.attachment_type == 1))
        assert cap._layouts
        ref = weakref.ref(cap)
        del cap
        assert ref() is None
    finally:
        gc.enable()


def test_only_large_files_have_their_index_on_disk(tmp_path, monkeypatch):
    # A small dump is rescanned faster than its index is written and read back.
    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, str(tmp_path / "cache"))
    path = tmp_path / "q.dmp"
    with open(path, "wb") as f:
        write_dump(f, build_mq_messages([DatasetToWrite(TABLE.slice(0, 10), "LIB", "SMALL")]))
    size = os.path.getsize(path)
    index._MEMORY.clear()
    monkeypatch.setattr(index, "DISK_CACHED_FILE_BYTES", size + 1)
    index.indexed(str(path), DMPMQMSG)
    assert not os.path.exists(tmp_path / "cache")
    index._MEMORY.clear()
    monkeypatch.setattr(index, "DISK_CACHED_FILE_BYTES", size)
    index.indexed(str(path), DMPMQMSG)
    assert entries(tmp_path / "cache") == [cache.entry_name(index.index_key(str(path), DMPMQMSG))]
    index._MEMORY.clear()


def test_a_rewrite_that_restores_size_and_mtime_is_a_new_file(tmp_path):
    # cp -p and rsync -t put the old mtime back; the ctime (and the ends' CRC) still differ.
    path = tmp_path / "q.dmp"
    path.write_bytes(b"A" * 100)
    os.utime(path, ns=(10 ** 18, 10 ** 18))
    before = index.file_key(str(path))
    assert index.file_key(str(path)) == before
    path.write_bytes(b"B" * 100)
    os.utime(path, ns=(10 ** 18, 10 ** 18))
    assert index.file_key(str(path)) != before


def test_chunks_parsed_on_threads_name_a_damaged_message_by_its_place_in_the_file(big_dump, tmp_path):
    # Chunks are parsed on threads, each numbering its messages from 0: the damage in a late
    # chunk must still be reported as the file's message it is, after every message before it.
    from cmi_datasource.transports.mq.errors import DumpSyntaxError
    whole = list(read_dump(big_dump))
    victim = whole[len(whole) * 3 // 4]
    data = bytearray(open(big_dump, "rb").read())
    x_line = data.index(b"\nX ", victim.file_offset) + 1
    data[x_line + 2:x_line + 4] = b"GG"
    damaged = tmp_path / "damaged.dmp"
    damaged.write_bytes(bytes(data))
    seen = []
    with pytest.raises(DumpSyntaxError) as raised:
        for message in read_dump(str(damaged), chunk_bytes=20_000):
            seen.append(message)
    assert raised.value.location.message_index == victim.index
    assert [(m.index, m.payload) for m in seen] == [(m.index, m.payload) for m in whole[:victim.index]]


def test_cached_indexes_and_plans_belong_to_the_code_that_made_them(monkeypatch):
    # An upgrade, or an edit to the checkout a worker imports, must not be handed pickles of
    # older classes: the cache keys hold a fingerprint of the package's modules.
    import cmi_datasource.engine.plan as a_module
    before = cache.code_fingerprint()
    assert cache.code_fingerprint() == before  # computed once per process
    stat = os.stat(a_module.__file__)
    monkeypatch.setattr(cache, "_CODE_FINGERPRINT", None)
    try:
        os.utime(a_module.__file__, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
        assert cache.code_fingerprint() != before
    finally:
        os.utime(a_module.__file__, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    monkeypatch.setattr(cache, "_CODE_FINGERPRINT", None)
    assert cache.code_fingerprint() == before


def test_where_only_an_mtime_is_known_the_ends_of_the_file_tell_a_rewrite(tmp_path, monkeypatch):
    # A store without versions, or Windows (whose st_ctime is the creation time): the CRC of the
    # file's first and last 64 KiB tells a rewrite that restored size and mtime.
    import dataclasses
    real_identity = index.identity

    def mtime_only(path):
        found = real_identity(path)
        return dataclasses.replace(found, version=found.version[:1])

    monkeypatch.setattr(index, "identity", mtime_only)
    path = tmp_path / "q.dmp"
    path.write_bytes(b"A" * 100)
    os.utime(path, ns=(10 ** 18, 10 ** 18))
    before = index.file_key(str(path))
    assert len(before) == 4 and index.file_key(str(path)) == before  # path, size, mtime, CRC
    path.write_bytes(b"B" * 100)
    os.utime(path, ns=(10 ** 18, 10 ** 18))
    assert index.file_key(str(path)) != before
