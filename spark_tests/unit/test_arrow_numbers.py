"""Arrow arrays from numpy buffers (cmi_datasource/arrow/numbers.py), and the reason for them:
decoding a data set never imports pandas, which pa.array would (0.4 s in each fresh worker)."""
from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from cmi_datasource.arrow.numbers import booleans, from_numpy

from conftest import ROOT, SAMPLES


def test_values_and_nulls_are_those_of_the_numpy_arrays():
    values = np.array([1.5, -2.0, 0.0, 7.25, 9.0, 1e300, -0.0, 3.0, 4.0], dtype=np.float64)
    missing = np.array([False, True, False, False, True, False, False, False, True])
    array = from_numpy(values, pa.float64(), missing)
    assert array.to_pylist() == [1.5, None, 0.0, 7.25, None, 1e300, -0.0, 3.0, None]
    assert array.null_count == 3 and array.type == pa.float64()
    assert from_numpy(values, pa.float64()).to_pylist() == values.tolist()
    assert from_numpy(values, pa.float64(), np.zeros(9, dtype=bool)).null_count == 0


def test_temporal_types_take_their_integer_widths():
    days = from_numpy(np.array([0, 19000, -1], dtype=np.int32), pa.date32(), np.array([False, False, True]))
    assert days.to_pylist() == [dt.date(1970, 1, 1), dt.date(2022, 1, 8), None]
    stamps = from_numpy(np.array([1_000_000], dtype=np.int64), pa.timestamp("us"))
    assert stamps.to_pylist() == [dt.datetime(1970, 1, 1, 0, 0, 1)]
    with pytest.raises(TypeError, match="cannot be an Arrow"):
        from_numpy(np.array([1.0]), pa.date32())


def test_a_strided_column_is_made_contiguous():
    table = np.arange(12, dtype=np.float64).reshape(3, 4)
    assert from_numpy(table[:, 1], pa.float64()).to_pylist() == [1.0, 5.0, 9.0]


def test_boolean_masks():
    assert booleans(np.array([True, False, True] * 5)).to_pylist() == [True, False, True] * 5


def test_decoding_a_data_set_imports_no_pandas():
    # The data sets' own reads only: the inventory views build their small tables with
    # from_pylist, which may import pandas.
    script = ("import sys\nfrom cmi_datasource import read\n"
              "for name, dataset, rows in (('mixed_types.dmp', 'WORK.CUSTOMERS', 6),\n"
              "                            ('zos_785_37.dmp', 'PROD.LEDGER', 3),\n"
              "                            ('nightly_batch.dmp', 'FIN.DAILY_SALES', 543)):\n"
              f"    assert read([{SAMPLES!r} + '/' + name], dataset=dataset).num_rows == rows\n"
              "print('pandas' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
