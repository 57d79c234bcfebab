"""A write's numeric columns placed straight from their Arrow buffers (``sas_numbers.place_slots``,
the C kernel ``put_arrow_numbers`` and its numba twin) against the reference they replace: the
doubles ``_numbers`` makes of the column (Arrow casts, numpy) placed by ``place_numbers``. Every
type the slots are read for, nulls at every position, NaNs of every payload (SAS's own special
missing patterns among them), -0.0, infinities, integers past 2**53, timestamps whose epoch shift
wraps; slices of every offset; columns of several chunks."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from cmi_datasource.charsets import code_page
from cmi_datasource.encoding import FloatFormat
from cmi_datasource.payload import sas_dataset_writer as writer
from cmi_datasource.payload import sas_numbers
from cmi_datasource.payload.sas_dataset import SasVariable

LITTLE, BIG = FloatFormat.IEEE_LITTLE, FloatFormat.IEEE_BIG

DOUBLES = np.concatenate([
    np.array([0xFFFFE10000000000, 0xFFFFFE0000000000, 0xFFFFFA0000000000, 0x7FF0000000000001,
              0xFFF8000000000000, 0x7FF8000000000000], np.uint64).view(np.float64),  # NaNs: .A, ., ._, others
    [-0.0, 0.0, np.inf, -np.inf, 5e-324, -1.7976931348623157e308, 0.69, 1 / 3, -2.5e-300, 1e300]])
INT64 = np.array([0, -1, 2 ** 53 + 1, -(2 ** 53) - 3, 2 ** 63 - 1, -2 ** 63, 1_700_000_000_123_457,
                  -315_619_200_000_001, 86_399_999_999_999, 123_456_789, 2 ** 63 - 315_619_200_000_000,
                  -2 ** 63 + 5, 9_007_199_254_740_993_000, 1, -86_400_000_000, 4_102_444_800_000_000], np.int64)
INT32 = np.array([0, -1, 2 ** 31 - 1, -2 ** 31, -3653, 2_936_547, -138_061, 19_000, 7, -7, 1, 3653, -3654,
                  2 ** 30, -2 ** 30, 365], np.int32)

with np.errstate(over="ignore", invalid="ignore"):  # the largest doubles become float32 infinities, NaNs stay
    FLOAT32 = DOUBLES.astype(np.float32)

# Every type the kernel reads, with slot values of it.
SLOTS = {
    pa.float64(): DOUBLES, pa.float32(): FLOAT32,
    pa.int64(): INT64, pa.int32(): INT32, pa.date32(): INT32,
    pa.timestamp("us"): INT64, pa.duration("us"): INT64, pa.time64("ns"): np.abs(INT64 % (86_400 * 10 ** 9)),
}


def test_every_type_the_slots_are_read_for_is_tested():
    assert set(writer._SLOT_READINGS) == set(SLOTS)


def _array(arrow_type: pa.DataType, values: np.ndarray, nulls) -> pa.Array:
    """An Arrow array of ``values`` built from buffers (what a spill holds), null where ``nulls`` is true:
    the null slots keep their values, as Arrow allows."""
    validity = pa.py_buffer(np.packbits(~np.asarray(nulls, bool), bitorder="little")) if any(nulls) else None
    return pa.Array.from_buffers(arrow_type, len(values), [validity, pa.py_buffer(np.ascontiguousarray(values))],
                                 null_count=int(np.count_nonzero(nulls)))


def _reference(column: pa.Array, fmt: FloatFormat, width: int, at: int = 3, row_length: int = 14) -> np.ndarray:
    rows = np.full((len(column), row_length), 0xEE, np.uint8)
    values, missing = writer._numbers(column)
    sas_numbers.place_numbers(values, missing, fmt, rows, at, width)
    return rows


def _placed(column: pa.Array, fmt: FloatFormat, width: int, at: int = 3, row_length: int = 14) -> np.ndarray:
    rows = np.full((len(column), row_length), 0xEE, np.uint8)
    writer._place_numeric(column, fmt, rows, at, width)
    return rows


@pytest.fixture(params=["C", "numba"])
def kernel(request, monkeypatch):
    """Each test runs with the C kernel and with its numba twin; the fixture's value counts the
    kernel's calls (a type the table missed would be placed by the reference itself, and match it)."""
    twin = sas_numbers._put_arrow_numbers
    run = twin.native_function() if request.param == "C" else twin.compiled()
    assert run is not None
    calls = []

    def counted(*args):
        calls.append(args[0].dtype)
        return run(*args)

    monkeypatch.setattr(twin, "chosen", counted)
    return calls


@pytest.mark.parametrize("arrow_type", list(SLOTS), ids=str)
def test_slots_place_what_the_doubles_would_with_a_null_at_every_position(arrow_type, kernel):
    values = SLOTS[arrow_type]
    n = len(values)
    masks = [np.zeros(n, bool), np.ones(n, bool)] + [np.arange(n) == k for k in range(n)]
    masks.append(np.arange(n) % 3 == 1)
    for nulls in masks:
        column = _array(arrow_type, values, nulls)
        for fmt in (LITTLE, BIG):
            for width in (8, 3, 5):
                expected = _reference(column, fmt, width)
                got = _placed(column, fmt, width)
                np.testing.assert_array_equal(got, expected, err_msg=f"{arrow_type} {fmt} {width} {nulls}")
                # Nulls and NaNs are SAS's "." and nothing else is.
                missing = nulls | np.isnan(writer._numbers(column)[0])
                dot = np.frombuffer(np.uint64(0xFFFFFE0000000000).tobytes()[::-1][:width] if fmt is BIG
                                    else np.uint64(0xFFFFFE0000000000).tobytes()[8 - width:], np.uint8)
                assert ((got[:, 3:3 + width] == dot).all(axis=1) == missing).all()
    assert np.count_nonzero(np.isnan(writer._numbers(_array(arrow_type, values, masks[0]))[0])) == (
        6 if arrow_type in (pa.float64(), pa.float32()) else 0)
    assert len(kernel) == len(masks) * 2 * 3  # every placing by the kernel


@pytest.mark.parametrize("arrow_type", list(SLOTS), ids=str)
def test_slices_of_every_offset_place_their_own_values_and_nulls(arrow_type, kernel):
    column = _array(arrow_type, SLOTS[arrow_type], np.arange(len(SLOTS[arrow_type])) % 4 == 2)
    for start in range(len(column)):
        for length in range(len(column) - start + 1):
            part = column.slice(start, length)
            assert part.offset == start
            np.testing.assert_array_equal(_placed(part, LITTLE, 8), _reference(part, LITTLE, 8))
            np.testing.assert_array_equal(_placed(part, BIG, 4), _reference(part, BIG, 4))
    assert len(kernel) == len(column) * (len(column) + 3)  # two placings by the kernel of each slice


def test_a_column_of_unaligned_slots_is_placed_from_a_copy(kernel):
    raw = np.zeros(8 * len(DOUBLES) + 1, np.uint8)
    raw[1:] = DOUBLES.view(np.uint8)
    column = pa.Array.from_buffers(pa.float64(), len(DOUBLES), [None, pa.py_buffer(raw[1:])])
    assert not writer._slots(column, np.float64).flags.aligned
    np.testing.assert_array_equal(_placed(column, LITTLE, 8), _reference(column, LITTLE, 8))


def _table_in_chunks(cuts) -> pa.Table:
    n = len(DOUBLES)
    columns = {str(t): _array(t, SLOTS[t], np.arange(n) % 5 == 1) for t in SLOTS}
    columns["text"] = pa.array(["é", None, "ab", "", None, "xyz", "q", None, "wxyz", "k", "m", "n", "o", "p", "r",
                                "s"][:n])
    whole = pa.table(columns)
    pieces = [whole.slice(a, b - a) for a, b in zip([0, *cuts], [*cuts, n])]
    return pa.concat_tables(pieces), whole


def _variables(table: pa.Table):
    variables, offset = [], 0
    for name in table.column_names:
        numeric = name != "text"
        variables.append(SasVariable(name=f"V{len(variables)}", label="", is_numeric=numeric,
                                     length=8 if numeric else 4, offset=offset))
        offset += variables[-1].length
    return variables, offset


@pytest.mark.parametrize("cuts", [[], [0], [5], [1, 2, 9], [3, 3, 15], [16]])
def test_columns_of_several_chunks_encode_as_the_column_made_whole(cuts, kernel):
    chunked, whole = _table_in_chunks(cuts)
    assert chunked.column(0).num_chunks == len(cuts) + 1
    variables, length = _variables(whole)
    for fmt in (LITTLE, BIG, FloatFormat.S390):
        if fmt is FloatFormat.S390:  # S/390 floats take no infinity: those columns alone
            keep = [i for i, name in enumerate(whole.column_names) if name in ("int32", "date32[day]", "text")]
            got = writer.encode_observations(chunked.select(keep), [variables[i] for i in keep], code_page(1208),
                                             fmt, length, first_row=7)
            expected = writer.encode_observations(whole.select(keep).combine_chunks(), [variables[i] for i in keep],
                                                  code_page(1208), fmt, length)
        else:
            got = writer.encode_observations(chunked, variables, code_page(1208), fmt, length, first_row=7)
            expected = writer.encode_observations(whole.combine_chunks(), variables, code_page(1208), fmt, length)
        assert bytes(got) == bytes(expected)


def test_a_value_too_long_in_a_later_chunk_names_its_row_in_the_dataset():
    from cmi_datasource.errors import CmiEncodeError
    table = pa.concat_tables([pa.table({"s": ["ab", "cd"]}), pa.table({"s": ["ef", "toolong"]})])
    variables = [SasVariable(name="S", label="", is_numeric=False, length=2, offset=0)]
    with pytest.raises(CmiEncodeError, match="row 14"):  # 10 rows before this batch, then the 4th
        writer.encode_observations(table, variables, code_page(1208), LITTLE, 2, first_row=10)


def test_one_byte_placed_wrong_is_seen(monkeypatch):
    """What these tests rely on: a kernel writing one byte otherwise differs from the reference."""
    twin = sas_numbers._put_arrow_numbers
    right = twin.native_function()

    def one_byte_off(*args):
        right(*args)
        args[5][3 + 14 * 2] ^= 0x01  # the third row's first byte of the value

    monkeypatch.setattr(twin, "chosen", one_byte_off)
    column = _array(pa.float64(), DOUBLES, np.zeros(len(DOUBLES), bool))
    assert not np.array_equal(_placed(column, LITTLE, 8), _reference(column, LITTLE, 8))
    monkeypatch.setattr(twin, "chosen", right)
    assert np.array_equal(_placed(column, LITTLE, 8), _reference(column, LITTLE, 8))


def test_the_slot_placing_refuses_what_it_does_not_take():
    rows = np.zeros((3, 8), np.uint8)
    with pytest.raises(ValueError, match="place_numbers"):
        sas_numbers.place_slots(np.zeros(3, np.float64), None, 0, 0, 1.0, FloatFormat.S390, rows, 0, 8)
    with pytest.raises(ValueError, match="place_numbers"):
        sas_numbers.place_slots(np.zeros(3, np.int16), None, 0, 0, 1.0, LITTLE, rows, 0, 8)
    with pytest.raises(ValueError, match="added to floating"):
        sas_numbers.place_slots(np.zeros(3, np.float64), None, 0, 1, 1.0, LITTLE, rows, 0, 8)
    with pytest.raises(ValueError, match="bitmap of 1 bytes from bit 6"):
        sas_numbers.place_slots(np.zeros(3, np.float64), np.zeros(1, np.uint8), 6, 0, 1.0, LITTLE, rows, 0, 8)
    with pytest.raises(ValueError, match="do not fit"):
        sas_numbers.place_slots(np.zeros(3, np.float64), None, 0, 0, 1.0, LITTLE, rows, 1, 8)
