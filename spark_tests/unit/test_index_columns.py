"""The message index as the disk cache keeps it (engine/index_columns.py): columns made of a
file's index give back the same entries, equal and of the same types, for every capture format
and for the entries the columns do not hold (damage, pieces, transport details, odd numbers)."""
from __future__ import annotations

import dataclasses
import os
import pickle
import random

import pytest

from cmi_datasource.engine import index
from cmi_datasource.engine.index_columns import IndexColumns
from cmi_datasource.messages import DETAILS_REREAD
from cmi_datasource.transports import detect_format

from conftest import dump_messages
from mq_traffic import plain, rfh2, segmented

SAMPLES = sorted(name for name in os.listdir(os.path.join(os.path.dirname(__file__), "..", "..", "sample_queues"))
                 if not name.startswith("."))


def same_entries(found, expected) -> None:
    assert found == expected
    for a, b in zip(found, expected):
        assert type(a.descriptor) is type(b.descriptor) and a.details is b.details or a.details == b.details
        assert type(a.origin) is type(b.origin) and [type(v) for v in a.origin] == [type(v) for v in b.origin]
        assert type(a.payload) is type(b.payload) and type(a.full_key) is type(b.full_key)


def round_trip(messages, source):
    """The entries as a load from the disk cache gives them back: columns, pickled, unpickled."""
    return pickle.loads(pickle.dumps(IndexColumns.of(messages, source), protocol=pickle.HIGHEST_PROTOCOL)).messages()


@pytest.mark.parametrize("name", SAMPLES)
def test_every_sample_capture_index_comes_back_the_same(samples_dir, name):
    path = os.path.join(samples_dir, name)
    messages = index.scan(path, detect_format(path))
    assert messages
    same_entries(round_trip(messages, path), messages)


def test_a_dump_index_is_held_in_columns(samples_dir):
    path = os.path.join(samples_dir, "nightly_batch.dmp")
    messages = index.scan(path, detect_format(path))
    columns = IndexColumns.of(messages, path)
    assert columns.others == () and len(columns.message_index) == len(messages)
    assert any(m.full_key is not None for m in messages) and any(m.full_key is None for m in messages)
    assert all(m.details is DETAILS_REREAD for m in messages)


def test_damaged_stretches_and_segments_are_kept_whole_in_place(tmp_path):
    messages = segmented(plain(), rng=random.Random(3)) + [rfh2(*plain()[2])]
    path = dump_messages(tmp_path, messages)
    text = open(path, "rb").read()
    cut = text.index(b"\nX ", len(text) // 2) + 3
    damaged = tmp_path / "damaged.dmp"
    damaged.write_bytes(text[:cut] + b"ZZ" + text[cut + 2:])  # an X line that is no hex
    fmt = detect_format(str(damaged))
    entries = index.scan(str(damaged), fmt)
    columns = IndexColumns.of(entries, str(damaged))
    kept_whole = [m for _, m in columns.others]
    assert any(m.damage is not None for m in kept_whole) and any(m.parts or fmt.transport.is_piece(m)
                                                                  for m in kept_whole)
    assert len(columns.message_index) + len(kept_whole) == len(entries) and len(columns.message_index) > 0
    same_entries(round_trip(entries, str(damaged)), entries)


def test_entries_the_columns_cannot_hold_are_kept_whole(samples_dir):
    path = os.path.join(samples_dir, "nightly_batch.dmp")
    messages = index.scan(path, detect_format(path))
    odd = list(messages)
    first, second, third = odd[1], odd[2], odd[3]
    odd[1] = first.replaced(origin=first.origin._replace(file_end=1 << 70))  # past 64 bits
    odd[2] = second.replaced(descriptor=dataclasses.replace(second.descriptor, ccsid=True))  # a bool
    odd[3] = third.replaced(origin=third.origin._replace(source="elsewhere"))
    columns = IndexColumns.of(odd, path)
    assert [place for place, _ in columns.others] == [1, 2, 3]
    back = round_trip(odd, path)
    same_entries(back, odd)
    assert back[2].descriptor.ccsid is True


def test_an_empty_index(tmp_path):
    assert IndexColumns.of([], str(tmp_path)).messages() == []
