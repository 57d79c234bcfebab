"""The differential fuzz target of the C kernels (``fuzz/native_diff.py``, issue 30) for a bounded
number of Hypothesis examples: each input calls one C kernel and its numba reference alike (within
their bounds: the same result and output bytes; outside: the C kernel refuses). ``make fuzz
FUZZ_TARGETS=native_kernels`` runs it under atheris for longer, ``scripts/sanitize_native.sh``
under AddressSanitizer and UBSan. Derandomized: CI runs the same examples every time.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz import native_diff
from fuzz.native_diff import KERNELS, PARAMETER_BYTES, KernelMismatch, make_input, native_kernels_target

BOUNDED = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                   suppress_health_check=list(HealthCheck))
SEEDS = native_diff.native_kernels_seeds()


def test_every_seed_runs_alike():
    assert {s[0] for s in SEEDS} == set(range(len(KERNELS)))
    for seed in SEEDS:
        native_kernels_target(seed)


@st.composite
def mutated_seed(draw) -> bytes:
    """A seed with its kernel, parameter bytes and data bytes changed here and there, or cut."""
    data = bytearray(draw(st.sampled_from(SEEDS)))
    data[0] = draw(st.integers(0, len(KERNELS) - 1))
    for _ in range(draw(st.integers(0, 8))):
        at = draw(st.integers(1, PARAMETER_BYTES)) if draw(st.booleans()) else draw(st.integers(0, len(data) - 1))
        data[at] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        del data[draw(st.integers(1 + PARAMETER_BYTES, len(data))):]
    return bytes(data)


@BOUNDED
@given(mutated_seed())
def test_mutated_seeds_run_alike(data):
    native_kernels_target(data)


@BOUNDED
@given(st.sampled_from(list(KERNELS)), st.binary(min_size=PARAMETER_BYTES, max_size=PARAMETER_BYTES),
       st.binary(max_size=600))
def test_any_bytes_run_alike(kernel, parameters, data):
    native_kernels_target(make_input(kernel, parameters, data))


@pytest.mark.parametrize("kernel", list(KERNELS))
def test_one_wrong_byte_or_a_call_taken_out_of_bounds_is_found(kernel, monkeypatch):
    """The oracle fails when a C kernel writes one byte differently, returns another value, or
    takes a call outside its bounds: what the fuzzing relies on to find a bug."""
    twin = KERNELS[kernel][0]
    right = twin.native_function()

    def one_byte_off(*args):
        result = right(*args)
        for a in args:
            if isinstance(a, np.ndarray) and a.flags.writeable and a.size:
                a.reshape(-1).view(np.uint8)[0] ^= 1
                break
        return result

    def other_value(*args):
        result = right(*args)
        return (result, 0) if result is not None else 0

    def never_refuses(*args):
        try:
            return right(*args)
        except (ValueError, TypeError):
            return None

    for wrong in (one_byte_off, other_value, never_refuses):
        monkeypatch.setattr(twin, "native_function", lambda w=wrong: w)
        found = False
        for seed in SEEDS:
            if seed[0] != list(KERNELS).index(kernel):
                continue
            try:
                native_kernels_target(seed)
            except KernelMismatch:
                found = True
                break
        if wrong is never_refuses:  # some seeds make calls out of bounds: found by many inputs
            found = found or _any_found(kernel)
        assert found, f"{kernel}: {wrong.__name__} went unnoticed"
        monkeypatch.undo()


def _any_found(kernel: str) -> bool:
    """Whether parameter blocks of every byte value make a call the C kernel must refuse."""
    index = list(KERNELS).index(kernel)
    data = next(s for s in SEEDS if s[0] == index)[1 + PARAMETER_BYTES:]
    for value in range(256):
        try:
            native_kernels_target(make_input(kernel, bytes([value]) * PARAMETER_BYTES, data))
        except KernelMismatch:
            return True
    return False


def test_the_sanitizer_runs_driver_replays_a_corpus_and_keeps_a_difference(tmp_path, monkeypatch):
    """``python -m fuzz.native_diff`` (what scripts/sanitize_native.sh runs under ASan): the corpus
    first (then the seeds), each input left in ``--last`` before it runs, a difference kept and
    the status 1."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    kept = make_input("gather_fields", bytes(range(7, 7 + PARAMETER_BYTES)), bytes(range(64)))
    (corpus / "one").write_bytes(kept)
    options = ["--seconds", "600", "--runs", "30", "--corpus", str(corpus), "--crashes", str(tmp_path / "crashes"),
               "--last", str(tmp_path / "last.bin")]
    assert native_diff.main(options) == 0
    assert (tmp_path / "last.bin").exists() and not (tmp_path / "crashes").exists()
    assert native_diff.main(options[:3] + ["1"] + options[4:]) == 0
    assert (tmp_path / "last.bin").read_bytes() == kept
    twin = KERNELS["gather_fields"][0]
    right = twin.native_function()

    def zero_bits(flat, stride, count, offsets, widths, little, bits, nan):
        right(flat, stride, count, offsets, widths, little, bits, nan)
        bits[...] = 0

    monkeypatch.setattr(twin, "native_function", lambda: zero_bits)
    assert native_diff.main(options) == 1
    assert list((tmp_path / "crashes").iterdir())


@BOUNDED
@given(st.binary(min_size=PARAMETER_BYTES, max_size=PARAMETER_BYTES), st.binary(max_size=300))
def test_ato_rows_run_alike(parameters, data):
    """The TIB/RV ATO rows kernel alone: its messages split, re-encoded, damaged, its layout made to
    disagree, its out cut short, calls outside its bounds; and the rows as sent are what Python
    reads of the fields."""
    native_kernels_target(make_input("ato_rows", parameters, data))


def test_the_ato_rows_material_is_real_rows():
    """The sample's ATO rows under its DAT and VAR, and the writer's with the string sizes the
    sample lacks; each row's bytes are its 2 fields a variable, back to back."""
    sample, written = native_diff.ato_material()
    assert (sample.numeric, sample.lengths, sample.obs_length, len(sample.rows)) == ((True, False, True), (8, 6, 8),
                                                                                       22, 20)
    assert len(written.rows) == 24 and max(written.lengths) == 300
    strings = [f for _, fields in written.rows for f in fields if f.type == 8]
    # NUL included: empty, sizes of one byte, and of 0x79 then a u16 (131 and 301)
    assert {len(f.data) for f in strings} >= {1, 66, 131, 301}
    for material in (sample, written):
        for sent, fields in material.rows:
            assert len(fields) == 2 * len(material.lengths)
            assert len(sent) == fields[-1].data_offset + len(fields[-1].data) - fields[0].offset


def test_a_c_kernel_that_runs_past_a_huge_count_is_found(monkeypatch):
    """A count, row start or observation length no buffer holds is run by the C kernel alone
    (numba's product may overflow), which must stop there with problem 8: one that went on is found."""
    import random

    twin = KERNELS["ato_rows"][0]
    right = twin.native_function()

    def past_huge(buf, starts, ends, counts, out_starts, *rest):
        if (counts > 1 << 31).any() or (out_starts > 1 << 31).any() or rest[3] > 1 << 31:
            return 0, 0, 0, 0, 0
        return right(buf, starts, ends, counts, out_starts, *rest)

    monkeypatch.setattr(twin, "native_function", lambda: past_huge)
    rng = random.Random(0)
    for _ in range(3000):
        parameters = bytes(rng.randrange(256) for _ in range(PARAMETER_BYTES))
        try:
            native_kernels_target(make_input("ato_rows", parameters, b""))
        except KernelMismatch as e:
            assert "results differ" in str(e)
            return
    pytest.fail("no input ran a huge count")


@BOUNDED
@given(st.sampled_from(["x_lines", "put_high_bytes", "put_padded", "put_arrow_numbers"]),
       st.binary(min_size=PARAMETER_BYTES, max_size=PARAMETER_BYTES), st.binary(max_size=400))
def test_the_write_kernels_run_alike(kernel, parameters, data):
    """The write's kernels alone: X lines of payloads past the C's 8 KiB block, of widths either side
    of its one-block line copy, with any 16 digits; numbers and text placed at any column of rows,
    values ending near or far from the data's end; their outputs cut short; calls outside their
    bounds (a column past the row, fewer rows than values, values longer than the width or falling
    offsets, a blank that is no byte, a validity bitmap short of a bit per value), which the C
    kernel alone runs and must refuse; Arrow slots of every type the write reads, with nulls."""
    native_kernels_target(make_input(kernel, parameters, data))
