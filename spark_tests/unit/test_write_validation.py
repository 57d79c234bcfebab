"""The writer never emits what it cannot read back (issue 14), without Spark.

Column names are SAS variable names under option validVarName (SAS's VALIDVARNAME=: v7, upcase,
any), unique without regard to case; every column type has a SAS equivalent; decimals of more
than 15 significant digits and 64-bit integers beyond +-2**53 are refused unless rounding is
accepted. What passes is written and read back through real messages.
"""
from __future__ import annotations

import decimal
import itertools

import pyarrow as pa
import pytest

from cmi_datasource import read
from cmi_datasource.charsets import code_page
from cmi_datasource.cmi.emit import OutgoingAttachment
from cmi_datasource.cmi.header import ATTACHMENT_DATASET
from cmi_datasource.encoding import float_format
from cmi_datasource.engine.write import DatasetToWrite, WriteOptions, build_messages, stream_messages
from cmi_datasource.errors import CmiEncodeError, DatasetLayoutError
from cmi_datasource.payload.sas_dataset import SasVariable
from cmi_datasource.payload.sas_dataset_writer import (DatasetEncoder, check_exact_numbers, check_schema,
                                                       sas_variable_names, significant_digits)
from cmi_datasource.transports.mq.transport import mq_pairs

from support import capture_of, physical

D = decimal.Decimal
UTF8 = code_page(1208)


def read_back(messages) -> pa.Table:
    """The dataset the reader makes of written messages."""
    return read(capture_of(physical(mq_pairs(messages))))


def round_trip(table: pa.Table, **options) -> pa.Table:
    return read_back(build_messages([DatasetToWrite(table, "WORK", "X")], options=WriteOptions(**options)))


def one_column(name: str, values=(1.0, None, -2.5)) -> pa.Table:
    return pa.table({name: pa.array(list(values), pa.float64())})


def refusal(table: pa.Table, **options) -> str:
    """The CmiEncodeError text build_messages gives for ``table``: one line, problem and remedy."""
    with pytest.raises(CmiEncodeError) as caught:
        build_messages([DatasetToWrite(table, "WORK", "X")], options=WriteOptions(**options))
    text = str(caught.value)
    assert "\n" not in text
    return text


# -- 1. names unique without regard to case ----------------------------------------------------------


@pytest.mark.parametrize("rule", ["v7", "upcase", "any"])
def test_names_that_differ_only_in_case_are_refused_naming_both(rule):
    table = pa.table({"id": [1.0], "x": [2.0], "ID": [3.0]})
    text = refusal(table, valid_var_name=rule)
    assert "columns 'id' and 'ID' would be the same SAS variable" in text and "rename one of them" in text


def _dump_with_names(names):
    """Messages of a dataset whose variables are named ``names`` as given, the writer's checks bypassed."""
    options = WriteOptions()
    variables = [SasVariable(name=n, label="", is_numeric=True, length=8, offset=8 * i) for i, n in enumerate(names)]
    encoder = DatasetEncoder(variables, UTF8, float_format(options.encoding), options.wire)
    row = pa.record_batch([pa.array([float(i)]) for i in range(len(names))], names=[f"c{i}" for i in range(len(names))])
    payloads = itertools.chain(encoder.definition_payloads(1), encoder.observation_payloads([row]))
    return list(stream_messages([OutgoingAttachment(ATTACHMENT_DATASET, "WORK", "X", "", payloads)], options))


@pytest.mark.parametrize("names", [("id", "ID"), ("my col", "MY COL"), ("Straße", "STRASSE"), ("id", "id2"),
                                   ("a", " a"), ("é", "É")])
def test_the_writer_refuses_exactly_the_names_the_reader_takes_for_one(names):
    try:
        read_back(_dump_with_names(names))
        reader_refuses = False
    except DatasetLayoutError as e:
        assert "appears twice" in str(e)
        reader_refuses = True
    try:
        sas_variable_names(names, "any", UTF8)
        writer_refuses = False
    except CmiEncodeError:
        writer_refuses = True
    assert writer_refuses == reader_refuses
    assert reader_refuses == (names[0].upper() == names[1].upper())


# -- 2. SAS variable names by validVarName ---------------------------------------------------------


@pytest.mark.parametrize("name", ["x", "_", "A1_b", "mixedCase", "x" * 32, "_2"])
def test_v7_names_are_written_as_given(name):
    back = round_trip(one_column(name))
    assert back.schema.names == [name]
    assert back.column(0).to_pylist() == [1.0, None, -2.5]


LITERAL_WOULD_DO = "rename it, or set option validVarName=any to write it as a SAS name literal"


@pytest.mark.parametrize("name, problem, remedy", [
    ("my col", "it holds ' ', not only letters, digits and underscores", LITERAL_WOULD_DO),
    ("a-b.c", "it holds '-.', not only letters, digits and underscores", LITERAL_WOULD_DO),
    ("café", "it holds 'é', not only letters, digits and underscores", LITERAL_WOULD_DO),
    ("1st", "it starts with a digit", LITERAL_WOULD_DO),
    # A name literal would not help these: no pointless advice.
    ("x" * 33, "it has 33 characters, more than 32", "rename it"),
    ("", "it is empty", "rename it"),
    ("_N_", "SAS reserves it for an automatic variable or a variable list", "rename it"),
    ("_all_", "SAS reserves it for an automatic variable or a variable list", "rename it"),
])
@pytest.mark.parametrize("rule", ["v7", "upcase"])
def test_v7_and_upcase_refuse_what_is_no_v7_name(rule, name, problem, remedy):
    assert refusal(one_column(name), valid_var_name=rule) == (
        f"column {name!r} is not a valid SAS variable name under validVarName={rule} ({problem}): {remedy}")


def test_upcase_writes_upper_cased_names():
    table = pa.table({"mixedCase": [1.0], "s": ["a"]})
    back = round_trip(table, valid_var_name="upcase")
    assert back.schema.names == ["MIXEDCASE", "S"]
    assert back.column("S").to_pylist() == ["a"]


NAME_LITERALS = ["my col", " leading blank", "a-b/c%&'\"n", "漢字 und Ümlaut", "é" * 16, "x" * 32, "1st",
                 "tab\there"]


@pytest.mark.parametrize("name", NAME_LITERALS)
def test_any_writes_name_literals_that_read_back_exactly(name):
    back = round_trip(one_column(name), valid_var_name="any")
    assert back.schema.names == [name]
    assert back.column(0).to_pylist() == [1.0, None, -2.5]


@pytest.mark.parametrize("encoding, ccsid", [(273, 819), (785, 37), (785, 1047)])
def test_any_name_literals_in_single_byte_code_pages(encoding, ccsid):
    names = ["my col", "Ça coûte", "a+b=c"]
    table = pa.table({n: [float(i)] for i, n in enumerate(names)})
    back = round_trip(table, valid_var_name="any", encoding=encoding, ccsid=ccsid)
    assert back.schema.names == names and back.to_pylist() == table.to_pylist()


def test_any_counts_bytes_in_the_target_code_page():
    name = "é" * 32  # 32 bytes in Latin-1, 64 in UTF-8
    assert round_trip(one_column(name), valid_var_name="any", encoding=273, ccsid=819).schema.names == [name]
    text = refusal(one_column(name), valid_var_name="any")
    assert "(it is 64 bytes in utf-8 (CCSID 1208), more than 32): rename it" in text


@pytest.mark.parametrize("name, problem", [
    ("trailing ", "it ends with a blank, which SAS drops from names): rename it without the trailing blanks"),
    ("   ", "it is empty or all blanks"),
    ("", "it is empty or all blanks"),
    ("a\0b", "it holds a NUL character"),
    ("x" * 33, "it is 33 bytes in utf-8 (CCSID 1208), more than 32"),
    ("漢" * 11, "it is 33 bytes in utf-8 (CCSID 1208), more than 32"),
    ("_n_", "SAS reserves it"),
])
def test_any_refuses_what_sas_name_literals_cannot_be(name, problem):
    text = refusal(one_column(name), valid_var_name="any")
    assert text.startswith(f"column {name!r} is not a valid SAS variable name under validVarName=any ({problem}")


def test_any_refuses_a_name_the_code_page_lacks():
    text = refusal(one_column("漢字"), valid_var_name="any", encoding=785, ccsid=37)
    assert "('漢字' cannot be encoded in cp037 (CCSID 37)): rename it, or choose a CCSID" in text


def test_names_are_checked_before_any_value():
    # A bad name and a bad number: the name is reported, the data never looked at.
    table = pa.table({"my col": pa.array([2 ** 60], pa.int64())})
    assert "validVarName=v7" in refusal(table)


# -- 3. numbers a double holds ----------------------------------------------------------------------


def test_significant_digits_of_decimals():
    values = [D("0"), D("1.5"), D("-0.0000000001"), D("1234567890123456789012345678"), D("1E+20"),
              None, D("-123456789012345.0000000000"), D("0.1234567890")]
    array = pa.array(values, pa.decimal128(38, 10))
    assert significant_digits(array).to_pylist() == [0, 2, 1, 28, 1, None, 15, 9]
    assert significant_digits(array.slice(3, 2)).to_pylist() == [28, 1]
    assert significant_digits(pa.array([D("12345678901234567891")], pa.decimal256(60, 0))).to_pylist() == [20]


def test_a_decimal_of_more_than_15_digits_is_refused_naming_column_value_and_row():
    values = [D("1.5"), None, D("1234567890123456789012345678"), D("1")]
    table = pa.table({"ok": pa.array([1.0] * 4), "amount": pa.array(values, pa.decimal128(38, 10))})
    text = refusal(table)
    assert text == ("column 'amount', row 3: 1234567890123456789012345678.0000000000 has 28 significant digits "
                    "and a SAS number (a double) holds 15: set option lossyNumbers=true to write such values "
                    "rounded, or cast the column to string to keep every digit")
    with pytest.raises(CmiEncodeError, match=r"column 'amount', row 103 of spark_partition_id\(\) 4: 1234567890"):
        check_exact_numbers(table, first_row=100, partition=4)


def test_decimals_of_up_to_15_significant_digits_pass_whatever_their_precision():
    values = [D("123456789012345"), D("-99999.9999999999"), D("1E+27"), D("0.0000000001"), D("0")]
    back = round_trip(pa.table({"d": pa.array(values, pa.decimal128(38, 10))}))
    assert back.column("d").to_pylist() == [123456789012345.0, -99999.9999999999, 1e27, 1e-10, 0.0]
    assert refusal(pa.table({"d": pa.array([D("1234567890123456")], pa.decimal128(16, 0))})).startswith(
        "column 'd', row 1: 1234567890123456 has 16 significant digits")


def test_decimals_of_precision_15_or_less_are_not_looked_at_and_read_back_as_the_nearest_double():
    # Arrow's own decimal-to-double cast gives 0.6900000000000001 for 0.69: the writer must not.
    values = [D("0.69"), D("6.89"), D("3489431.80"), D("-0.01"), D("9999999999999.99"), None]
    back = round_trip(pa.table({"d": pa.array(values, pa.decimal128(15, 2))}))
    assert back.column("d").to_pylist() == [float(v) if v is not None else None for v in values]


def test_decimals_of_high_precision_read_back_as_the_nearest_double():
    values = [D("547.300000000000000000"), D("0.000003522458000000"), D("1234.560000000000000000")]
    back = round_trip(pa.table({"d": pa.array(values, pa.decimal128(38, 18))}))
    assert back.column("d").to_pylist() == [547.3, 0.000003522458, 1234.56]


def test_lossy_numbers_writes_rounded_values():
    value = D("1234567890123456789012345678.0123456789")
    table = pa.table({"d": pa.array([value], pa.decimal128(38, 10)), "l": pa.array([2 ** 53 + 1], pa.int64())})
    back = round_trip(table, lossy_numbers=True)
    assert back.column("d").to_pylist() == [float(value)]
    assert back.column("l").to_pylist() == [float(2 ** 53)]  # the nearest double


@pytest.mark.parametrize("value, refused", [(2 ** 53, False), (-2 ** 53, False), (2 ** 53 + 1, True),
                                            (-2 ** 53 - 1, True), (2 ** 63 - 1, True), (-2 ** 63, True)])
def test_longs_beyond_2_to_the_53_are_refused(value, refused):
    table = pa.table({"n": pa.array([0, None, value], pa.int64())})
    if refused:
        assert refusal(table).startswith(f"column 'n', row 3: {value} is beyond +-2**53 (9007199254740992)")
    else:
        assert round_trip(table).column("n").to_pylist() == [0.0, None, float(value)]


def test_unsigned_64_bit_integers_are_checked_and_narrower_integers_are_not():
    assert refusal(pa.table({"u": pa.array([2 ** 53 + 1], pa.uint64())})).startswith("column 'u', row 1:")
    table = pa.table({"i": pa.array([2 ** 31 - 1], pa.int32()), "u": pa.array([2 ** 32 - 1], pa.uint32())})
    assert round_trip(table).to_pylist() == [{"i": 2.0 ** 31 - 1, "u": 2.0 ** 32 - 1}]


def test_rows_are_counted_across_chunks():
    first = pa.record_batch([pa.array([1, 2, 3], pa.int64())], names=["n"])
    second = pa.record_batch([pa.array([4, 2 ** 60], pa.int64())], names=["n"])
    table = pa.Table.from_batches([first, second])
    assert table.column("n").num_chunks == 2
    assert refusal(table).startswith(f"column 'n', row 5: {2 ** 60} is beyond")


# -- 4. types without a SAS equivalent ---------------------------------------------------------------


@pytest.mark.parametrize("arrow_type", [
    pa.binary(), pa.large_binary(), pa.list_(pa.int32()), pa.map_(pa.string(), pa.int32()),
    pa.struct([("a", pa.int32())]), pa.month_day_nano_interval(), pa.null(),
    pa.dictionary(pa.int32(), pa.string()),
])
def test_types_without_a_sas_equivalent_are_refused_naming_column_type_and_remedy(arrow_type):
    table = pa.table({"ok": pa.array([1.0]), "bad": pa.array([None], arrow_type)})
    text = refusal(table)
    assert text.startswith(f"column 'bad' has type {arrow_type}, which has no SAS equivalent: cast it to string")


def test_type_names_can_be_the_users_own():
    schema = pa.schema([("v", pa.struct([("value", pa.binary()), ("metadata", pa.binary())]))])
    with pytest.raises(CmiEncodeError, match=r"^column 'v' has type variant, which has no SAS equivalent"):
        check_schema(schema, "v7", UTF8, ["variant"])


def test_check_schema_returns_the_names_to_write():
    schema = pa.schema([("a", pa.float64()), ("b", pa.string()), ("c", pa.date32()), ("d", pa.timestamp("us")),
                        ("e", pa.time64("us")), ("f", pa.bool_()), ("g", pa.decimal128(38, 2))])
    assert check_schema(schema, "upcase", UTF8) == ["A", "B", "C", "D", "E", "F", "G"]
    assert check_schema(schema, "v7", UTF8) == list("abcdefg")


# -- the destination: a folder of captures (issue 28) -----------------------------------------------

def _destination_refused(path: str, **options) -> str:
    from cmi_datasource.engine.options import SaveOptions
    from cmi_datasource.errors import CmiOptionError
    with pytest.raises(CmiOptionError) as raised:
        SaveOptions.parse({"path": path, **options}).check_destination()
    return str(raised.value)


@pytest.mark.parametrize("name, suffix", [("x.dmp", ".dmp"), ("X.DMP", ".dmp"), ("night.rv", ".rv"),
                                          ("feed.mqtt/", ".mqtt")])
def test_a_new_path_named_like_a_capture_file_is_refused_naming_the_rule(tmp_path, name, suffix):
    text = _destination_refused(str(tmp_path / name) + ("/" if name.endswith("/") else ""))
    assert f"names a {suffix} file, but df.write.format('cmi').save() takes a folder" in text
    assert "each save adds one capture named cmi-work.data-<job id>.dmp" in text
    assert f"(for example {str(tmp_path / name.rstrip('/')[:-len(suffix)])!r})" in text
    assert list(tmp_path.iterdir()) == []  # nothing made


def test_the_capture_named_follows_the_transport(tmp_path):
    assert "cmi-fin.sales-<job id>.rv" in _destination_refused(str(tmp_path / "x.rv"), transport="tibrv",
                                                                 dataset="FIN.SALES")


def test_an_existing_folder_of_that_name_and_plain_folders_are_destinations(tmp_path):
    from cmi_datasource.engine.options import SaveOptions
    (tmp_path / "kept.dmp").mkdir()
    for path in (tmp_path / "kept.dmp", tmp_path / "outbound", tmp_path / "new" / "daily"):
        SaveOptions.parse({"path": str(path)}).check_destination()


def test_an_existing_file_is_refused(tmp_path):
    (tmp_path / "notes").write_text("kept")
    assert "is a file; df.write.format('cmi') writes a folder of captures" in _destination_refused(
        str(tmp_path / "notes"))
    assert (tmp_path / "notes").read_text() == "kept"
