"""The whole-read differential oracle (``fuzz/whole_read.py``) over a fixed set of message-level
mutations: every observation message of several small captures dropped, garbled (a hex digit
made no hex digit), duplicated, and swapped with the next, in both byte orders and over MQ
(dmpmqmsg, amqsbcg, MQGET, MQTT) and TIB/RV; then a few mutations that must not make a read
blow up (a huge count or sequence number, a decompression bomb) or raise an untyped error (a
compressed stream cut or flipped).

Each case reads the mutated capture whole, as ``cmi`` and Spark read it, in FAILFAST, PERMISSIVE
and DROPMALFORMED, and asserts what the oracle asks (only CmiError escapes; the modes agree;
trusted rows are the clean read's rows at their own row numbers; returned plus reported rows
equal the declared count). The one damage no reader can see, TIB/RV messages swapped, is marked
strict xfail with why; the cases of issue 26's findings 1 to 4 and 6, 7 that failed before its
fixes now pass (fuzz/results.md).
"""
from __future__ import annotations

import os

import pytest

from fuzz import whole_read as w

# Small captures with several observation messages: straddling or whole observations, 2 to 7
# observation messages, little- and big-endian, sequence numbers in either order, every
# MQ-carrying format and TIB/RV.
CAPTURES = ("mixed_types.dmp", "big_endian_273_819.dmp", "orders_3obs.dmp", "orders_3obs_be.dmp",
            "orders_2obs_be_aligned.dmp", "indep_le_seq.dmp", "orders_3obs.amqsbcg.txt", "orders_3obs.mqget",
            "orders_3obs.mqtt", "orders_small_ato.rv")

# What no reader can tell (docs/spec/tibrv.md#order): an RV attachment carries no sequence number, offset or
# send time, so two ATO messages swapped leave every count it declares right, and capture order is
# read as the order. Strict xfail: if a later change detects the swap, pytest says so.
KNOWN = {f"orders_small_ato.rv-swap-{i}-{i + 1}": "TIB/RV carries no message order: a swap of two ATO messages "
         "keeps every declared count (transports/tibrv/sequence.py)" for i in range(1, 7)}


def _message_cases():
    for name in CAPTURES:
        seed = w.all_seeds()[name]
        observations = w.observation_records(seed)
        operations = ["drop", "duplicate"] + (["garble"] if seed.format in w.TEXT_FORMATS else [])
        for i, record in enumerate(observations):
            for op in operations:
                yield f"{name}-{op}-{i + 1}", name, [(op, record, 0, 0)]
            if i + 1 < len(observations):
                yield f"{name}-swap-{i + 1}-{i + 2}", name, [("swap", record, observations[i + 1], 0)]


def _params(cases):
    for case_id, name, operations in cases:
        marks = ()
        if case_id in KNOWN:
            marks = pytest.mark.xfail(strict=True, reason=KNOWN[case_id])
        yield pytest.param(name, operations, id=case_id, marks=marks)


def _violations(name, operations):
    found = w.decode(w.program(name, operations))
    assert found.operations, f"{operations} changed nothing in {name}"
    path = w._capture_file(found.data)
    try:
        return w.check(w.read_everything(path), w.clean_of(name))
    finally:
        os.remove(path)


@pytest.mark.parametrize("name, operations", list(_params(_message_cases())))
def test_message_level_mutation_keeps_the_oracle(name, operations):
    assert _violations(name, operations) == []


def test_the_oracle_sees_a_made_up_row():
    """The oracle itself: a clean read whose second row is replaced must be called out."""
    path = w._capture_file(w.all_seeds()["orders_3obs.dmp"].data)
    try:
        reads = w.read_everything(path)
    finally:
        os.remove(path)
    clean = w.clean_reference(reads)
    assert w.check(reads, clean) == []
    permissive = next(r for r in reads if r.view == "dataset" and r.mode == "permissive")
    permissive.rows[1] = permissive.rows[2]
    found = [check for check, _ in w.check(reads, clean)]
    assert any(check.startswith("trusted row that the clean read does not have") for check in found), found
    assert any(check.startswith("FAILFAST succeeded, PERMISSIVE differs") for check in found), found


# Mutations run in a child under limits that catch a blow-up, not a slow read: the memory a read
# may take (1 GiB) and issue 26's own bound on a bomb's read (60 s; every read of every view and
# mode of one of these takes a few seconds on a loaded 2-core machine).
LIMIT_SECONDS = 60.0
LIMIT_MEMORY = 1 << 30
GUARDED = (
    ("mixed_types.dmp-huge-count", "mixed_types.dmp", [("huge_count", 0, 0, 0)]),  # 10^6 messages
    ("orders_3obs_be.dmp-huge-sequence", "orders_3obs_be.dmp", [("huge_sequence", 2, 1, 0)]),  # 2^31 - 1
    ("orders_3obs.dmp-zstd-bomb", "orders_3obs.dmp", [("zstd", 0, 0, 0), ("bomb", 0, 0, 0)]),  # 64 MiB of \n
    ("orders_3obs.mqget-zstd-bomb", "orders_3obs.mqget", [("zstd", 0, 0, 0), ("bomb", 15, 1, 0)]),  # 1 GiB of \0
    ("orders_3obs.dmp-gzip-flip", "orders_3obs.dmp", [("gzip", 0, 0, 0), ("flip", 7, 0, 0)]),
    ("orders_3obs.dmp-zstd-flip", "orders_3obs.dmp", [("zstd", 0, 0, 0), ("flip", 7, 0, 0)]),
    ("mixed_types.dmp-gzip-cut", "mixed_types.dmp", [("gzip", 0, 0, 0), ("truncate", 128, 0, 0)]),
    ("orders_3obs.mqtt-zstd-cut", "orders_3obs.mqtt", [("zstd", 0, 0, 0), ("truncate", 200, 0, 0)]),
)


@pytest.mark.parametrize("name, operations", list(_params(GUARDED)))
def test_guarded_mutation_keeps_the_oracle(name, operations):
    found = w.decode(w.program(name, operations))
    clean = w.clean_of(name) if found.message_level else None
    path = w._capture_file(found.data)
    try:
        outcome = w.in_child(lambda: w.check(w.read_everything(path), clean), LIMIT_SECONDS, LIMIT_MEMORY)
    finally:
        os.remove(path)
    assert outcome == ("ok", [])


def test_a_fuzz_input_runs_whole_in_a_child():
    """What the harness runs per input (``run_input``): a recipe decoded, read in the child,
    checked, read again here; a duplicated message of a capture is no finding."""
    w.run_input(w.program("orders_3obs.dmp", [("duplicate", 5, 0, 0)]), replay=True, formats=("dmpmqmsg",))
