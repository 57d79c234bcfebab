"""Bad input in a stream follows the read modes as in batch: damaged captures (the whole-read
fuzz oracle's mutations: messages dropped, garbled, duplicated, swapped; compressed streams
flipped and cut) land in a folder beside a clean one, and the stream, a file per micro-batch,
then past attachmentTimeout (an attachment missing a message waits for it until then), emits in
every mode exactly what a batch read of the same folder returns; where the batch read fails
(FAILFAST), the stream fails with the same typed error."""
from __future__ import annotations

import json
import os
from typing import List, Optional, Tuple

import pyarrow as pa
import pytest

import cmi_datasource
from cmi_datasource.engine.options import ReadOptions
from cmi_datasource.engine.stream import FolderStream, stream_schema
from cmi_datasource.errors import CmiError
from fuzz import whole_read as w
from landing import land, transfer

T0 = 1_700_000_000
NOW = (T0 + 100) * 10**9
LATER = (T0 + 7200) * 10**9  # past the default attachmentTimeout (1 h)
MODES = ("FAILFAST", "PERMISSIVE", "DROPMALFORMED")

CASES = [
    ("orders_3obs.dmp", [("drop", 3, 0, 0)]),
    ("orders_3obs.dmp", [("garble", 3, 0, 0)]),
    ("orders_3obs.dmp", [("duplicate", 4, 0, 0)]),
    ("orders_3obs.dmp", [("swap", 3, 4, 0)]),
    ("orders_3obs.mqtt", [("drop", 3, 0, 0)]),
    ("mixed_types.dmp", [("gzip", 0, 0, 0), ("flip", 7, 0, 0)]),
    ("mixed_types.dmp", [("gzip", 0, 0, 0), ("truncate", 128, 0, 0)]),
    ("orders_3obs.mqtt", [("zstd", 0, 0, 0), ("truncate", 200, 0, 0)]),
]


def _dataset_of(seed: str) -> str:
    return {"orders_3obs.dmp": "WORK.ORDERS", "orders_3obs.mqtt": "WORK.ORDERS",
            "mixed_types.dmp": "WORK.CUSTOMERS"}[seed]


def _canonical(rows) -> List[str]:
    """The rows, each without its nulls (a stream's report row has its schema's data columns, null;
    the batch read's, when nothing of the data set can be read, the corrupt-record column alone)."""
    return sorted(json.dumps({k: v for k, v in r.items() if v is not None}, sort_keys=True, default=repr)
                  for r in rows)


def _batch(folder: str, dataset: str, mode: str) -> Tuple[Optional[type], List[str]]:
    try:
        return None, _canonical(cmi_datasource.read(folder, dataset=dataset, mode=mode).to_pylist())
    except CmiError as e:
        return type(e), []


def _streamed(folder: str, dataset: str, mode: str, schema: Optional[pa.Schema]) -> Tuple[Optional[type], List[str]]:
    """Every micro-batch's rows, a file per micro-batch, as Spark runs them (offsets through JSON),
    in the stream's own schema or the one given."""
    try:
        options = ReadOptions.parse({"path": folder, "dataset": dataset, "mode": mode})
        schema = schema or stream_schema(options)
        assert schema is not None
        stream = FolderStream(options, schema)
        offset, rows = stream.initial_offset(), []
        for now in (NOW, NOW, NOW, LATER):  # the files, then past attachmentTimeout: the incomplete are given up
            end = json.loads(json.dumps(stream.latest_offset(offset, ("files", 1), now)))
            for part in stream.partitions(offset, end):
                for batch in stream.read(part):
                    rows += batch.to_pylist()
            offset = end
        return None, _canonical(rows)
    except CmiError as e:
        return type(e), []


@pytest.mark.parametrize("seed, operations", CASES, ids=[f"{s}-{'-'.join(o[0] for o in ops)}" for s, ops in CASES])
def test_a_stream_of_damaged_captures_gives_what_a_batch_read_gives_in_every_mode(tmp_path, seed, operations):
    found = w.decode(w.program(seed, operations))
    assert found.operations, f"{operations} changed nothing in {seed}"
    land(tmp_path, "a-clean.dmp", transfer(3, 0), T0)  # another data set's: read, not emitted
    damaged = tmp_path / "b-damaged"
    damaged.write_bytes(found.data)
    os.utime(damaged, (T0 + 1, T0 + 1))
    dataset = _dataset_of(seed)
    clean = tmp_path.parent / f"{tmp_path.name}-clean"
    clean.write_bytes(w.all_seeds()[seed].data)
    for mode in MODES:
        expected = _batch(str(tmp_path), dataset, mode)
        options = ReadOptions.parse({"path": str(tmp_path), "dataset": dataset, "mode": mode})
        try:
            own = stream_schema(options)
        except CmiError as e:  # the query does not start: Spark asks the source for the schema first
            assert (type(e), []) == expected, mode
            continue
        if own is not None:
            assert _streamed(str(tmp_path), dataset, mode, None) == expected, mode
            continue
        # No variable definitions of the data set can be read: the user gives the schema, as the
        # docs say, from a clean capture of it. Then DROPMALFORMED drops what the batch read,
        # having no schema, cannot return.
        given = cmi_datasource.read(str(clean), dataset=dataset, mode=mode).schema
        if mode == "DROPMALFORMED" and expected[0] is not None:
            expected = (None, [])
        assert _streamed(str(tmp_path), dataset, mode, given) == expected, mode
