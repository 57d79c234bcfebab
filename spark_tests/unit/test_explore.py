"""The exploring helpers without Spark: the capture summary, labelled previews and the plots,
on the story capture nightly_batch.dmp (three transfers, FIN.RETURNS missing its sequence 4)."""
from __future__ import annotations

import os
import sys

import matplotlib
import pyarrow as pa
import pytest

matplotlib.use("Agg")  # no display in tests; set before pyplot is first imported

import matplotlib.colors as mcolors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

from cmi_datasource import read
from cmi_datasource.engine.capture import Capture  # noqa: E402
from cmi_datasource.explore import labelled, plots, summarize  # noqa: E402
from cmi_datasource.explore.frames import labels_of, to_pandas  # noqa: E402
from cmi_datasource.explore.render import as_text, html_table, rich_table  # noqa: E402

SAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                       "sample_queues")
NIGHTLY = os.path.join(SAMPLES, "nightly_batch.dmp")
RED = mcolors.to_rgba(plots.INCOMPLETE_COLOUR)


@pytest.fixture(scope="module")
def capture():
    return Capture.open([NIGHTLY])


@pytest.fixture(scope="module")
def messages(capture):
    return read(capture, view="messages")


@pytest.fixture(scope="module")
def attachments(capture):
    return read(capture, view="attachments")


@pytest.fixture(scope="module")
def sales(capture):
    return read(capture, dataset="FIN.DAILY_SALES")


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


# -- the summary -------------------------------------------------------------------------------

def test_summary_says_what_is_in_the_capture_and_what_went_wrong(capture):
    summary = summarize(capture)
    text = str(summary)
    assert "nightly_batch.dmp (dmpmqmsg)" in text and "33 messages" in text
    assert "4 attachments: 3 data sets, 1 external file; 3 complete, 1 incomplete; 1 problem" in text
    for name, messages, observations in [("FIN.DAILY_SALES", "11 of 11", "543"), ("PROD.INVENTORY", "4 of 4", "40")]:
        row = next(line for line in text.splitlines() if name in line)
        assert "complete" in row and messages in row and observations in row
    returns = next(line for line in text.splitlines() if "FIN.RETURNS" in line and "6 of 7" in line)
    assert "incomplete" in returns
    assert "sales_notes.txt" in text
    text = " ".join(text.split())  # sentences may be wrapped anywhere
    assert "missing [4]" in text
    # What PERMISSIVE gets of it, from the engine's recovery.
    assert "94 of 120 observations can be trusted" in text and "observations 26 to 51 lost (26)" in text
    assert summary.incomplete == ["FIN.RETURNS"]
    assert summary.complete == ["FIN.DAILY_SALES", "sales_notes.txt", "PROD.INVENTORY"]
    assert summary.datasets == ["FIN.DAILY_SALES", "PROD.INVENTORY", "FIN.RETURNS"]
    assert summary.external_files == ["sales_notes.txt"]
    assert [p.subject for p in summary.problems] == ["FIN.RETURNS"]


def test_summary_numbers_are_the_attachments_views(capture, attachments):
    summary = summarize(capture)
    view = {row["name"]: row for row in attachments.to_pylist()}
    for row in summary.attachments.to_pylist():
        for column in ("complete", "expected_messages", "found_messages", "observations", "variables", "problem"):
            assert row[column] == view[row["name"]][column]


def test_summary_html_is_a_table_marking_the_incomplete_transfer(capture):
    page = summarize(capture)._repr_html_()
    assert page.count("<table>") == 2  # attachments, what went wrong
    assert "FIN.DAILY_SALES" in page and "543" in page and "missing [4]" in page
    marked = [row for row in page.split("<tr")[1:] if "color:#b00020" in row.split(">", 1)[0]]
    assert len(marked) == 1 and "FIN.RETURNS" in marked[0] and "incomplete" in marked[0]


def test_summary_of_paths_of_a_folder_and_of_a_clean_capture():
    folder = summarize(SAMPLES)
    assert len(folder.files) == len([f for f in os.listdir(SAMPLES) if not f.startswith((".", "_"))])
    assert {"tibrv", "mqtt", "sapdb", "amqsbcg", "dmpmqmsg"} <= set(folder.formats)
    assert folder.unclaimed_messages > 0  # the SAP DB packets carry no CMI
    clean = summarize([os.path.join(SAMPLES, "files.dmp")])
    assert clean.problems == [] and "no problems" in str(clean) and "What went wrong" not in str(clean)
    assert clean.external_files == ["report.txt", "logo.bin"]


def test_summary_renders_the_same_in_a_terminal(capture):
    summary = summarize(capture)
    assert as_text(summary) == str(summary) == repr(summary)


# -- rendering ---------------------------------------------------------------------------------

def test_html_table_escapes_and_cuts_rows():
    table = pa.table({"name": ["<b>x</b>", "y", "z"], "n": [1, 2, None]})
    page = html_table(table, headers={"n": "count"}, max_rows=2)
    assert "&lt;b&gt;x&lt;/b&gt;" in page and "<b>x" not in page
    assert "<th style=\"text-align:right\">count</th>" in page and "2 of 3 rows" in page


def test_rich_table_keeps_its_signature_and_marks_rows():
    table = pa.table({"name": ["a", "b"]})
    assert "a" in as_text(rich_table(table, ["name"], "T", {"name": "Name"}, 5, 60))
    marked = rich_table(table, marked_rows=[False, True])
    assert marked.rows[1].style == "bold red" and marked.rows[0].style is None


# -- labelled previews -------------------------------------------------------------------------

def test_labelled_uses_the_labels_as_headers(sales):
    preview = labelled(sales, 4)
    assert list(preview.columns) == ["Business day (DAY)", "Sales region (REGION)", "Net sales (AMOUNT)",
                                     "Units sold (UNITS)"]
    assert len(preview) == 4 and list(preview["Sales region (REGION)"]) == ["NORTH", "SOUTH", "WEST", "NORTH"]
    assert len(labelled(sales, None)) == 543


def test_labelled_keeps_names_without_labels(sales):
    frame = sales.to_pandas()
    assert list(labelled(frame, 2).columns) == ["DAY", "REGION", "AMOUNT", "UNITS"]
    assert labels_of(frame) == {}
    assert labels_of(sales)["AMOUNT"] == "Net sales"


def test_to_pandas_refuses_what_is_no_table():
    with pytest.raises(TypeError, match="Spark DataFrame, a pyarrow Table or a pandas DataFrame"):
        to_pandas([1, 2], ["a"])


# -- plots -------------------------------------------------------------------------------------

def _points(ax):
    return sum(len(c.get_offsets()) for c in ax.collections)


@pytest.mark.parametrize("as_pandas", [False, True])
def test_messages_over_time_has_a_point_per_message_in_a_lane_per_attachment(messages, attachments, as_pandas):
    if as_pandas:
        messages, attachments = messages.to_pandas(), attachments.to_pandas()
    ax = plots.messages_over_time(messages, attachments)
    assert _points(ax) == 33
    lanes = [label.get_text() for label in ax.get_yticklabels()]
    assert lanes == ["(header)", "(application)", "FIN.DAILY_SALES", "sales_notes.txt", "PROD.INVENTORY",
                     "FIN.RETURNS"]
    colours = {label.get_text(): mcolors.to_rgba(label.get_color()) for label in ax.get_yticklabels()}
    assert colours["FIN.RETURNS"] == RED and colours["FIN.DAILY_SALES"] != RED
    returns = next(c for c in ax.collections if c.get_label() == "FIN.RETURNS")
    assert len(returns.get_offsets()) == 7  # six sequenced messages and the count message


def test_messages_over_time_without_attachments_names_keys(messages):
    ax = plots.messages_over_time(messages)
    lanes = [label.get_text() for label in ax.get_yticklabels()]
    assert "9782F5CC…" in lanes and _points(ax) == 33


def test_put_times_read_hundredths_and_leave_missing_ones_empty():
    import pandas as pd
    times = plots.put_times(pd.DataFrame({"put_date": ["20261120", None], "put_time": ["22000150", None]}))
    assert times[0] == pd.Timestamp("2026-11-20 22:00:01.500") and pd.isna(times[1])


def test_message_sizes_counts_every_message(messages, attachments):
    ax = plots.message_sizes(messages, attachments)
    assert sum(p.get_height() for p in ax.patches) == 33
    assert ax.get_xscale() == "log"  # 4-byte count messages to 2048-byte data
    by_role = plots.message_sizes(messages.to_pandas(), by="role")
    assert {t.get_text() for t in by_role.get_legend().get_texts()} == {"header", "application", "sequenced", "count"}
    with pytest.raises(ValueError, match="'attachment' or 'role'"):
        plots.message_sizes(messages, by="queue")


def test_completeness_draws_found_of_expected(attachments):
    ax = plots.completeness(attachments)
    expected, found = ax.containers
    assert [b.get_width() for b in expected] == [11, 2, 4, 7]
    assert [b.get_width() for b in found] == [11, 2, 4, 6]
    assert [b.get_facecolor() == RED for b in found] == [False, False, False, True]
    assert "6 of 7" in [t.get_text() for t in ax.texts]
    assert [label.get_text() for label in ax.get_yticklabels()][3] == "FIN.RETURNS"


def test_column_by_draws_a_line_per_group_with_labels(sales):
    ax = plots.column_by(sales, "DAY", "AMOUNT", by="REGION", every="MS")
    assert [line.get_label() for line in ax.get_lines()] == ["NORTH", "SOUTH", "WEST"]
    assert all(len(line.get_xdata()) == 6 for line in ax.get_lines())  # January to June
    total = sum(line.get_ydata().sum() for line in ax.get_lines())
    assert total == pytest.approx(pa.compute.sum(sales.column("AMOUNT")).as_py())
    assert ax.get_xlabel() == "Business day (DAY)" and ax.get_ylabel() == "Net sales (AMOUNT)"
    assert "per month" in ax.get_title()


def test_column_by_without_a_group_on_pandas(sales):
    ax = plots.column_by(sales.to_pandas(), "DAY", "UNITS")
    [line] = ax.get_lines()
    assert len(line.get_xdata()) == 181 and ax.get_ylabel() == "UNITS"


def test_a_missing_column_names_what_the_plot_needs(attachments, sales):
    with pytest.raises(ValueError, match=r"messages_over_time \(the messages view\) needs the columns put_date, "
                                         r"put_time"):
        plots.messages_over_time(attachments)
    with pytest.raises(ValueError, match="needs the column PRICE"):
        plots.column_by(sales, "DAY", "PRICE")


def test_plots_without_matplotlib_say_how_to_install_it(monkeypatch, attachments):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)  # as if it were not installed
    with pytest.raises(ImportError, match=r'pip install "\.\[notebook\]"'):
        plots.completeness(attachments)
