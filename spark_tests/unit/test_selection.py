"""Which data set a read returns, through ``cmi_datasource.read`` (the selection Spark's reads use):
the errors when the options choose none, or several, list the candidates as data; a data set
whose header is damaged is said to be hidden by that damage, with where it lies, not to be
missing."""
from __future__ import annotations

import pickle

import pytest

import cmi_datasource as cmi
from cmi_datasource.engine.selection import Candidate, DatasetChoiceError
from cmi_datasource.errors import AttachmentError, CmiOptionError
from cmi_datasource.spark.errors import unwrap_text
from damaged_nightly import HEADER_DAMAGE, NIGHTLY, header_damaged

DAILY_SALES_KEY = "0F822591EA62F28213D077827E09A774"


def test_several_data_sets_list_the_candidates_as_data():
    with pytest.raises(DatasetChoiceError) as raised:
        cmi.read(NIGHTLY)
    error = raised.value
    assert isinstance(error, CmiOptionError)  # still the usage error it was
    assert error.problem.startswith("several datasets with different variables in")
    assert error.candidates == (Candidate("FIN.DAILY_SALES", DAILY_SALES_KEY, "dataset", True),
                                Candidate("PROD.INVENTORY", "40DD390D1ABB1861D262F9896EB47E8D", "dataset", True))
    text = str(error)
    assert "\n" not in text and "option('dataset', 'LIB.MEMBER')" in text
    assert f"FIN.DAILY_SALES (attachment {DAILY_SALES_KEY}, complete)" in text
    assert pickle.loads(pickle.dumps(error)).candidates == error.candidates


def test_an_unknown_data_set_lists_every_data_set_of_the_capture():
    with pytest.raises(DatasetChoiceError) as raised:
        cmi.read(NIGHTLY, dataset="nope")
    assert raised.value.problem.startswith("no dataset NOPE in")
    assert [(c.name, c.complete) for c in raised.value.candidates] == [
        ("FIN.DAILY_SALES", True), ("PROD.INVENTORY", True), ("FIN.RETURNS", False)]
    # What Spark's text gives back: the class, and the whole first line.
    spark_text = f"cmi_datasource.engine.selection.DatasetChoiceError: {raised.value}"
    again = unwrap_text(spark_text)
    assert type(again) is DatasetChoiceError and str(again) == str(raised.value)


@pytest.mark.parametrize("mode", ["FAILFAST", "PERMISSIVE", "DROPMALFORMED"])
@pytest.mark.parametrize("how", HEADER_DAMAGE)
def test_a_data_set_whose_header_is_damaged_is_said_to_be_hidden_by_it(tmp_path, how, mode):
    path = header_damaged(str(tmp_path), how)
    if how == "correlid" and mode == "FAILFAST":
        # Damage no attachment claims stops any FAILFAST read first, with where it lies.
        with pytest.raises(cmi.DumpSyntaxError) as failfast:
            cmi.read(path, dataset="FIN.DAILY_SALES", mode=mode)
        assert failfast.value.message_number == 1 and "COI" in failfast.value.problem
        return
    with pytest.raises(AttachmentError) as raised:
        cmi.read(path, dataset="FIN.DAILY_SALES", mode=mode)
    error = raised.value
    assert error.problem.startswith(f"no readable header names dataset FIN.DAILY_SALES in ['{path}']: ")
    kind = "damaged stretch no attachment claims" if how == "correlid" else "damaged attachment header"
    assert f"1 {kind} may hide its header" in error.problem
    assert "the readable datasets: PROD.INVENTORY (attachment" in error.problem
    assert "option('view', 'attachments')" in error.hint and "option('view', 'messages')" in error.hint
    # Where: the file, message 1 and the offset of the damage in it.
    text = open(path, encoding="latin-1").read()
    message_start = text.index("* Index 1\n") + len("* Index 1\n")
    expected_offset = {"cut": message_start, "hex": text.find("X 0G"), "correlid": text.find("A COI ZZ")}[how]
    assert (error.source, error.message_number, error.location.file_offset) == (path, 1, expected_offset)
    [first] = [r for r in cmi.read(path, view="messages").to_pylist() if r["index"] == 1]
    assert first["offset"] <= expected_offset < first["offset"] + 2000
    for line in (f"  file: {path}", "  message: 1", f"  file offset: {expected_offset}"):
        assert line in str(error).splitlines()


def test_a_data_set_the_damage_does_not_hide_reads_and_an_unknown_one_is_still_a_choice_error(tmp_path):
    path = header_damaged(str(tmp_path), "cut")
    assert cmi.read(path, dataset="PROD.INVENTORY").num_rows == 40
    # The damage may hide any data set: a name no readable header has is said to be hidden too.
    with pytest.raises(AttachmentError, match="no readable header names dataset NOPE"):
        cmi.read(path, dataset="nope")
    with pytest.raises(DatasetChoiceError, match="no dataset NOPE"):
        cmi.read(NIGHTLY, dataset="nope")  # the undamaged capture
