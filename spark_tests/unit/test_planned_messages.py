"""A plan's messages held as columns (reread.PlannedMessages) read the rows the tuple of
PlannedMessage objects they replace read; messages the columns cannot hold (MQ segments joined)
stay a tuple and still read."""
from __future__ import annotations

import dataclasses
import pickle
import random

import pytest

from cmi_datasource import Capture, cache, read
from cmi_datasource.engine import planned
from cmi_datasource.engine.decode import slice_batches
from cmi_datasource.engine.load import Load
from cmi_datasource.engine.options import ReadOptions
from cmi_datasource.engine.plan import planned_message_count
from cmi_datasource.engine.reread import PlannedMessage, PlannedMessages, reread
from cmi_datasource.errors import CmiFormatError, Location

from conftest import dump_messages
from independent_encoder import Encoder, Var, write_dump
from mq_traffic import EXPECTED, plain, segmented
from support import STRADDLING_TABLE, slices_of

VARS = [Var("ID"), Var("NAME", "char", 12), Var("SHORT", "num", 4)]
ROWS = [[float(i), f"row {i % 1000}", 1000.0 + i] for i in range(3000)]


def independent_dump(path) -> str:
    """A dump of ROWS written by the independent encoder, in 200-byte messages (records straddle them)."""
    enc = Encoder(encoding=273, long_size=8)
    attachment = enc.dataset_attachment(bytes(range(16)), "work", "rows", VARS, ROWS, max_payload=200)
    return write_dump(path, enc.transmission(b"\xa1" * 24, b"\xb2" * 24, b"app", [attachment]))


def rows_of(part, **kw):
    return [r for b in slice_batches(part, batch_rows=301, **kw) for r in b.to_pylist()]


def as_tuple(part):
    """The part as planning made it before: its messages a tuple of PlannedMessage."""
    return dataclasses.replace(part, messages=tuple(part.messages))


@pytest.mark.parametrize("written_by", ["independent encoder", "project writer"])
def test_a_dump_planned_as_columns_reads_the_rows_of_the_tuple_plan(tmp_path, big_dump, written_by):
    path = independent_dump(tmp_path / "ind.dmp") if written_by == "independent encoder" else big_dump
    cap = Capture.open(path)
    [att] = cap.attachments
    slices = slices_of(cap, att, 3_000)
    assert len(slices) > 2 and all(isinstance(s.messages, PlannedMessages) for s in slices)
    compact = [r for s in slices for r in rows_of(s)]
    assert compact == [r for s in slices for r in rows_of(as_tuple(s))]  # both through the fast path
    assert compact == [r for s in slices for r in rows_of(s, messages=list(reread(s.messages, s.formats)))]
    if written_by == "project writer":
        assert compact == STRADDLING_TABLE.to_pylist()
    else:
        assert [(r["ID"], r["NAME"], r["SHORT"]) for r in compact] == [tuple(r) for r in ROWS]


def test_planned_messages_pickle_slice_and_compare_as_the_tuple_they_replace(big_dump):
    cap = Capture.open(big_dump)
    [att] = cap.attachments
    [part] = slices_of(cap, att, 10 ** 9)
    messages = part.messages
    assert isinstance(messages, PlannedMessages) and len(messages) > 20
    items = tuple(messages)
    assert all(isinstance(m, PlannedMessage) and m.hint is None and len(m.spans) == 1 for m in items)
    assert [m.sequence for m in items] == list(range(items[0].sequence, items[0].sequence + len(items)))
    planned_at = {m.origin.span: m.content_key for m in cap.messages}
    assert all(planned_at[m.spans[0]] == m.content_key for m in items)
    assert messages[3] == items[3] and messages[-1] == items[-1]
    cut = messages[5:17]
    assert isinstance(cut, PlannedMessages) and tuple(cut) == items[5:17]
    for kept in (messages, cut):
        copy = pickle.loads(pickle.dumps(kept, protocol=pickle.HIGHEST_PROTOCOL))
        assert copy == kept and hash(copy) == hash(kept) and tuple(copy) == tuple(kept)
    assert cut != messages[5:16] and messages[5:17] == cut
    # The part (a frozen dataclass) compares through its messages.
    assert pickle.loads(pickle.dumps(part)) == part
    assert dataclasses.replace(part, messages=messages[:-1]) != part
    # A message is found by its place, as with the tuple.
    m = items[7]
    source, index, offset, _ = m.spans[0]
    assert part.sequence_of(Location(source, index, offset)) == m.sequence == as_tuple(part).sequence_of(
        Location(source, index, offset))
    assert part.sequence_of(Location(source, 10 ** 6)) is None and part.sequence_of(Location("elsewhere", 1)) is None


def test_a_file_changed_since_planning_is_an_error_in_the_columns_too(tmp_path, big_dump):
    cap = Capture.open(big_dump)
    [att] = cap.attachments
    part = slices_of(cap, att, 3_000)[1]
    rows = part.messages.rows.copy()
    rows["crc"][2] ^= 1
    changed = dataclasses.replace(part, messages=PlannedMessages(part.messages.sources, rows))
    with pytest.raises(CmiFormatError, match="differs from the one planned"):
        rows_of(changed)


def test_a_part_with_segmented_messages_keeps_a_tuple_and_reads(tmp_path):
    cap = Capture.open(dump_messages(tmp_path, segmented(plain(), rng=random.Random(3))))
    [att] = cap.attachments
    slices = slices_of(cap, att, 2_000)
    assert any(not isinstance(s.messages, PlannedMessages) for s in slices)
    joined = [m for s in slices if isinstance(s.messages, tuple) for m in s.messages if len(m.spans) > 1]
    assert joined
    assert [r for s in slices for r in rows_of(s)] == EXPECTED
    assert read(cap).to_pylist() == EXPECTED


def test_only_a_large_plan_returns_memory(tmp_path, big_dump, monkeypatch):
    """A full collection and malloc_trim after planning, only from MEMORY_RETURNED_FROM_MESSAGES
    planned messages on: a process planning many small captures does not pay for one each time."""
    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, "OFF")
    returned = []
    monkeypatch.setattr(planned, "return_freed_memory", lambda: returned.append(1))
    load = Load(ReadOptions.parse({"path": big_dump}))
    messages = sum(map(planned_message_count, planned.planned(load).parts))
    assert 20 < messages and returned == []
    planned._MEMORY.clear()
    monkeypatch.setattr(planned, "MEMORY_RETURNED_FROM_MESSAGES", messages)
    assert planned.planned(load).rows == len(STRADDLING_TABLE) and returned == [1]
