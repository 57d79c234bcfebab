"""The write's commit on the work threads (``cmi_datasource/threads.py``) writes the bytes it
wrote on one thread: for every case of ``spark_tests/commit_cases.py`` (several partitions, an
empty one among them, mixed column types, strings whose widths differ across partitions, one
attachment or one per partition, text and binary files) and every capture the commit writes
(dmpmqmsg dump, TIB/RV, MQTT), against the commit with the threads turned off, and against the
SHA-256 of the capture the commit before the threads wrote (``commit_digests.json``, made by
``commit_cases.py`` run on that commit)."""
from __future__ import annotations

import hashlib
import json
import os
import threading

import pytest

from cmi_datasource import threads
from cmi_datasource.payload import sas_dataset_writer
from cmi_datasource.transports.mq import dmpmqmsg

try:
    from spark_tests.commit_cases import CASES, TRANSPORTS, write_case
except ImportError:  # run from spark_tests/
    from commit_cases import CASES, TRANSPORTS, write_case

with open(os.path.join(os.path.dirname(__file__), "commit_digests.json")) as f:
    BEFORE_THE_THREADS = json.load(f)

CASE_TRANSPORTS = [(case, transport) for case in CASES for transport in TRANSPORTS]


@pytest.fixture
def small_pieces(monkeypatch):
    """Two work threads and pieces so small that each batch of 97 rows is a chunk of its own and
    a few messages make a group: many pieces in flight, finishing out of order."""
    monkeypatch.setattr(threads, "WORK_THREADS", 2)
    monkeypatch.setattr(sas_dataset_writer, "OBSERVATION_CHUNK_BYTES", 1)
    monkeypatch.setattr(dmpmqmsg, "FORMAT_GROUP_BYTES", 1500)


@pytest.mark.parametrize("case, transport", CASE_TRANSPORTS)
def test_the_threads_write_the_bytes_one_thread_writes(case, transport, small_pieces, monkeypatch, tmp_path):
    on_threads = write_case(case, transport, str(tmp_path / "threads"))
    monkeypatch.setattr(threads, "WORK_THREADS", 1)
    on_one_thread = write_case(case, transport, str(tmp_path / "one"))
    assert on_threads == on_one_thread
    assert len(on_threads) > 5_000  # many messages of at most 600 bytes, so many pieces


@pytest.mark.parametrize("case, transport", CASE_TRANSPORTS)
def test_the_threads_write_the_bytes_written_before_them(case, transport, small_pieces, tmp_path):
    written = write_case(case, transport, str(tmp_path))
    assert hashlib.sha256(written).hexdigest() == BEFORE_THE_THREADS[f"{case}/{transport}"]


def test_the_work_runs_on_threads_in_order_a_few_items_ahead(monkeypatch):
    monkeypatch.setattr(threads, "WORK_THREADS", 2)
    drawn = []
    names = set()

    def items():
        for i in range(40):
            drawn.append(i)
            yield i

    def work(i):
        names.add(threading.current_thread().name)
        return i * i

    results = []
    for result in threads.ordered_map(work, items()):
        # Items are drawn as results are taken: at most WORK_THREADS + 1 beyond those taken.
        assert len(drawn) - len(results) <= threads.WORK_THREADS + 1
        results.append(result)
    assert results == [i * i for i in range(40)]
    assert names and all(name.startswith("cmi-work") for name in names)


def test_an_error_in_the_work_is_raised_for_its_item_and_later_work_dropped(monkeypatch):
    monkeypatch.setattr(threads, "WORK_THREADS", 2)
    done = []

    def work(i):
        if i == 5:
            raise ValueError("item 5")
        done.append(i)
        return i

    taken = []
    with pytest.raises(ValueError, match="item 5"):
        for result in threads.ordered_map(work, range(1000)):
            taken.append(result)
    assert taken == [0, 1, 2, 3, 4]
    assert max(done) < 5 + threads.WORK_THREADS + 2


class _Sink:
    """A file that records which thread wrote each piece, and fails at the piece ``fail_at``."""

    def __init__(self, fail_at: int = -1):
        self.pieces, self.threads, self.fail_at = [], set(), fail_at

    def write(self, piece: bytes) -> int:
        if len(self.pieces) == self.fail_at:
            raise OSError(28, "No space left on device")
        self.threads.add(threading.current_thread().name)
        self.pieces.append(piece)
        return len(piece)


def test_pieces_written_behind_land_in_order_on_the_write_thread_a_few_ahead():
    sink, drawn = _Sink(), []

    def pieces():
        for i in range(200):
            # Drawn only while at most `ahead` pieces wait: memory stays bounded.
            assert i - len(sink.pieces) <= 2 + 1
            drawn.append(i)
            yield b"%d," % i

    threads.written_behind(sink, pieces(), ahead=2)
    assert b"".join(sink.pieces) == b"".join(b"%d," % i for i in range(200))
    assert sink.threads == {n for n in sink.threads if n.startswith("cmi-write")} and sink.threads


def test_a_failed_write_behind_is_raised_and_nothing_is_written_after_it():
    sink = _Sink(fail_at=7)
    with pytest.raises(OSError, match="No space left"):
        threads.written_behind(sink, (b"%d," % i for i in range(1000)), ahead=2)
    assert sink.pieces == [b"%d," % i for i in range(7)]


def test_written_is_told_of_each_piece_once_written_on_the_write_thread_and_not_of_a_failed_one():
    sink, told = _Sink(fail_at=7), []

    def written(piece):
        told.append((piece, len(sink.pieces), threading.current_thread().name))

    with pytest.raises(OSError, match="No space left"):
        threads.written_behind(sink, (b"%d," % i for i in range(1000)), ahead=2, written=written)
    assert [piece for piece, _, _ in told] == sink.pieces == [b"%d," % i for i in range(7)]
    # Each piece is in the file when its ``written`` runs (the sink had taken it, and only it).
    assert [count for _, count, _ in told] == list(range(1, 8))
    assert all(name.startswith("cmi-write") for _, _, name in told)


def test_spare_buffers_serve_later_work_once_given_back_and_a_few_at_most_wait():
    import numpy as np

    spare = threads.SpareBuffers(keep=2)
    first = spare.take(100)
    assert first.shape == (100,) and first.dtype == np.uint8
    first[:] = 7
    spare.give(first[10:20].reshape(2, 5))  # a view of a view: the whole buffer comes back
    again = spare.take(80)
    assert again.shape == (80,) and np.shares_memory(again, first) and (again == 7).all()
    spare.give(again)
    larger = spare.take(101)  # the one given back is too small: dropped, a new one made
    assert not np.shares_memory(larger, first) and spare.take(1).base is not first.base
    many = [spare.take(10) for _ in range(4)]
    for taken in many:
        spare.give(taken)
    again = [spare.take(10) for _ in range(4)]  # the two kept, the last given first; then new ones
    assert [np.shares_memory(a, m) for a, m in zip(again, many[1::-1])] == [True, True]
    assert not any(np.shares_memory(a, m) for a in again[2:] for m in many)


def test_observations_encoded_into_a_used_buffer_are_those_encoded_into_a_new_one():
    import numpy as np
    import pyarrow as pa

    from cmi_datasource.charsets import code_page
    from cmi_datasource.encoding import FloatFormat
    from cmi_datasource.payload.sas_dataset import SasVariable
    # 3 bytes between the two variables that no variable writes: zeros, whatever the buffer held.
    variables = [SasVariable(name="a", label="", is_numeric=True, length=8, offset=0),
                 SasVariable(name="s", label="", is_numeric=False, length=4, offset=11)]
    table = pa.table({"a": pa.array([1.5, None, -2.0]), "s": pa.array(["ab", None, "abcd"])})

    def encoded(into=None):
        return bytes(sas_dataset_writer.encode_observations(table, variables, code_page(1208),
                                                            FloatFormat.IEEE_LITTLE, 15, into=into))

    fresh = encoded()
    assert fresh[8:11] == bytes(3) and len(fresh) == 45
    assert encoded(np.full(45, 0xEE, np.uint8)) == fresh
    for wrong in (np.zeros(44, np.uint8), np.zeros(46, np.uint8), np.zeros((3, 15), np.uint8),
                  np.zeros(45, np.int8)):
        with pytest.raises(ValueError, match="cannot hold 3 rows of 15 bytes"):
            encoded(wrong)


def test_a_string_too_long_for_its_declared_width_names_its_row_in_the_dataset(small_pieces):
    import pyarrow as pa

    from cmi_datasource.engine.write import DatasetToWrite, build_messages
    from cmi_datasource.errors import CmiEncodeError

    values = ["ab"] * 250 + ["much too long"] + ["ab"] * 10
    declared = pa.schema([pa.field("s", pa.string(), metadata={"sas_length": "4"})])
    table = pa.table({"s": pa.array(values)}).cast(declared)
    with pytest.raises(CmiEncodeError, match=r"column s, row 251: value of 13 bytes does not fit in 4"):
        build_messages([DatasetToWrite(pa.Table.from_batches(table.to_batches(max_chunksize=97)), "WORK", "S")])


@pytest.mark.parametrize("work_threads", [1, 2])
def test_observation_messages_cut_across_chunks_smaller_and_larger_than_a_message(monkeypatch, work_threads):
    """The observation messages of chunks of any size (here each batch a chunk, 0 to 9 rows of 16
    bytes, messages of 40): the bytes of every row encoded at once, cut every 40 bytes."""
    import random

    import pyarrow as pa

    from cmi_datasource.charsets import code_page
    from cmi_datasource.cmi.wire import WireFormat
    from cmi_datasource.encoding import FloatFormat
    from cmi_datasource.layout import LITTLE
    from cmi_datasource.payload.sas_dataset import SasVariable
    monkeypatch.setattr(threads, "WORK_THREADS", work_threads)
    monkeypatch.setattr(sas_dataset_writer, "OBSERVATION_CHUNK_BYTES", 1)
    variables = [SasVariable(name=n, label="", is_numeric=True, length=8, offset=8 * i) for i, n in enumerate("ab")]
    wire = WireFormat(LITTLE, 4, True)
    encoder = sas_dataset_writer.DatasetEncoder(variables, code_page(1208), FloatFormat.IEEE_LITTLE, wire,
                                                max_payload=4 + 40)
    rng = random.Random(30)
    sizes = [rng.choice((0, 1, 2, 3, 9)) for _ in range(200)]
    rows = iter(range(sum(sizes)))
    batches = [pa.record_batch([pa.array([float(r) for r in taken], pa.float64()),
                                pa.array([-float(r) for r in taken], pa.float64())],
                               names=["a", "b"]) for taken in ([next(rows) for _ in range(n)] for n in sizes)]
    whole = bytes(sas_dataset_writer.encode_observations(pa.Table.from_batches(batches), variables,
                                                         code_page(1208), FloatFormat.IEEE_LITTLE, 16))
    type_int = sas_dataset_writer._type_int(sas_dataset_writer.RECORD_OBSERVATIONS, wire)
    assert list(encoder.observation_payloads(batches)) == [type_int + whole[at:at + 40]
                                                           for at in range(0, len(whole), 40)]
