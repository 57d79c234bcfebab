"""notebooks/explore.ipynb runs from a clean kernel and shows what it says it shows.

The kernel starts its own Spark session (a second JVM beside the tests' one) in notebooks/, as a
reader running the notebook would. Nothing is written back: ``python -m
cmi_datasource.explore.run_notebook --write notebooks/explore.ipynb`` refreshes the committed outputs.
"""
from __future__ import annotations

import os
import re
import shutil

import pytest

from conftest import ROOT

pytestmark = pytest.mark.spark

NOTEBOOK = os.path.join(ROOT, "notebooks", "explore.ipynb")


@pytest.fixture(scope="module")
def executed():
    if shutil.which("java") is None:
        pytest.fail("Java is missing: the notebook starts a Spark session, which needs Java 17 on PATH")
    from cmi_datasource.explore.run_notebook import execute
    with open(NOTEBOOK, "rb") as f:
        before = f.read()
    # Raises CellExecutionError, with the cell and its traceback, on an error; a cell that hangs
    # is stopped by execute's per-cell timeout (CellTimeoutError). Its run time is not asserted here.
    notebook = execute(NOTEBOOK)
    with open(NOTEBOOK, "rb") as f:
        assert f.read() == before, "running the notebook must not change the committed file"
    return notebook


def _outputs(notebook):
    return [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs]


def _texts(notebook) -> str:
    parts = []
    for o in _outputs(notebook):
        if o.output_type == "stream":
            parts.append(o.text)
        elif o.output_type in ("execute_result", "display_data"):
            parts.extend(v for k, v in o.data.items() if k in ("text/plain", "text/html"))
    return "\n".join(parts)


def test_every_cell_ran_without_error(executed):
    notebook = executed
    assert not [o for o in _outputs(notebook) if o.output_type == "error"]
    assert all(c.execution_count for c in notebook.cells if c.cell_type == "code")


def test_it_shows_its_plots(executed):
    notebook = executed
    images = [o for o in _outputs(notebook) if "image/png" in o.get("data", {})]
    assert len(images) >= 4  # completeness, the sales by month, messages over time, message sizes


def test_it_tells_the_story_of_the_capture(executed):
    notebook = executed
    text = _texts(notebook)
    # The summary and the attachments view: FIN.RETURNS incomplete, sequence 4 missing.
    assert "FIN.RETURNS" in text and "incomplete" in text and "missing [4]" in text
    assert "94 of 120 observations can be trusted" in text
    # PROC CONTENTS and the preview with labels as headers.
    assert "DOLLAR12.2" in text and "Net sales (AMOUNT)" in text and "Business day (DAY)" in text
    # The z/OS inventory decoded from EBCDIC.
    assert "Zürich" in text
    # The external file's text.
    assert "Amounts are net of returns; see FIN.RETURNS." in text
    # The messages of the broken attachment and its gap, FAILFAST's error, PERMISSIVE's report.
    assert "[1, 2, 3, 5, 6, 7]" in text
    assert "IncompleteAttachmentError" in text
    assert "FIN.RETURNS: sequenced message 4 is missing from the capture" in text
    assert "observations 26 to 51 lost (26)" in text
    assert "94 trusted observations of FIN.RETURNS" in text


def test_its_stream_counts_each_data_set_as_the_folder_fills_up(executed):
    notebook = executed
    text = _texts(notebook)
    # The running count after each file lands: each landing grows its own data set's count only.
    assert re.search(r"^0\s+sales-2026-q1\.dmp\s+270\s+0$", text, re.MULTILINE)
    assert re.search(r"^1\s+inventory\.dmp\s+270\s+40$", text, re.MULTILINE)
    assert re.search(r"^2\s+sales-2026-q2\.dmp\s+543\s+40$", text, re.MULTILINE)
