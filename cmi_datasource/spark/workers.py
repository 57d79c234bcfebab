"""Whether Spark's Python workers can run the source, said before Spark's own error would.

Spark runs every method of a Python data source (``schema()`` too) in Python workers it starts
with the interpreter ``PYSPARK_PYTHON`` names, by default ``python3`` as found on ``PATH``: not
the Python running the driver. A virtual environment's Python that is not first on ``PATH``
(``.venv/bin/python script.py``, venv not activated) therefore gives workers without the package
or its dependencies, and Spark says only ``No module named 'pyarrow'`` or that there is no
``cmi`` format. Two places see it first, and raise ``WorkerPythonError`` naming ``PYSPARK_PYTHON``:

- the worker itself, when it finds ``pyspark_cmi`` (in the working directory of a checkout, or on
  ``PYTHONPATH``) but cannot import the rest (``source_class``);
- the driver, in ``cmi_datasource.register(spark)``: a local session's workers run on this machine,
  so the interpreter they will run is asked, in a subprocess, whether it finds what the source
  imports (``check_worker_python``). A cluster's workers run elsewhere and are not asked.

When neither applies (a pip install the worker's Python cannot see, found by discovery), nothing of
ours runs anywhere and Spark answers ``DATA_SOURCE_NOT_FOUND``: the README says why there.

This module imports nothing beyond the standard library and ``cmi_datasource.errors``, so that it
runs in a worker that lacks everything else.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Optional, Sequence, Type

from .errors import WorkerPythonError
from .reporting import reported

# What the source's Spark classes import first that is not the standard library or pyspark (which
# Spark puts on the workers' path itself): found or not, without importing them.
NEEDED_MODULES = ("cmi_datasource", "pyarrow", "numpy", "numba")
_FIND_MISSING = ("import importlib.util, sys\n"
                 "print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))")


def _which_python(python_setting: Optional[str]) -> str:
    if python_setting:
        return f"PYSPARK_PYTHON={python_setting}"
    return "PYSPARK_PYTHON is not set, so python3 as found on PATH"


def worker_python_error(worker_python: str, python_setting: Optional[str], problem: str,
                        driver_python: Optional[str] = None) -> WorkerPythonError:
    """The one text of the problem (``problem``: what the workers' Python cannot do), from the
    worker's side or the driver's."""
    example = driver_python or "/absolute/path/to/.venv/bin/python"
    return WorkerPythonError(
        f"Spark's Python workers run {worker_python} ({_which_python(python_setting)}), which {problem}: "
        f"set PYSPARK_PYTHON to the absolute path of the Python that has cmi-datasource "
        f"installed before the Spark session starts (export PYSPARK_PYTHON={example}, "
        f"or os.environ['PYSPARK_PYTHON'] = sys.executable before SparkSession.builder)")


@reported
def source_class() -> Type:
    """``CmiDataSource``, imported in a Spark worker: a dependency missing there is a
    ``WorkerPythonError`` (shown without traceback) instead of a bare ``ModuleNotFoundError``."""
    try:
        from .source import CmiDataSource
    except ImportError as e:
        missing = (e.name or "").split(".")[0]
        if not missing or missing == "cmi_datasource":
            raise  # a module of ours is missing: a broken install or a bug, with its traceback
        raise worker_python_error(sys.executable, os.environ.get("PYSPARK_PYTHON"),
                                  f"cannot import {missing}") from e
    return CmiDataSource


def _local_master(spark) -> bool:
    try:
        master = spark.sparkContext.master
    except Exception:  # a Spark Connect session has no SparkContext: its workers are the server's
        return False
    return master == "local" or master.startswith(("local[", "local-cluster["))


def missing_modules(python: str, modules: Sequence[str] = NEEDED_MODULES) -> Optional[Sequence[str]]:
    """The ``modules`` that ``python``, started here as a worker would be (same environment and
    working directory), cannot find; None when ``python`` cannot be started at all."""
    try:
        done = subprocess.run([python, "-c", _FIND_MISSING, *modules], capture_output=True, text=True,
                              timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.split()


def check_worker_python(spark) -> None:
    """Raise ``WorkerPythonError`` when a local session's Python workers cannot import the source
    (see the module's docstring); nothing to check when they run this very interpreter."""
    if not _local_master(spark):
        return
    # What the session's workers run: PYSPARK_PYTHON as it was when the session started.
    python = getattr(spark.sparkContext, "pythonExec", None) or os.environ.get("PYSPARK_PYTHON") or "python3"
    setting = None if python == "python3" else python
    found = shutil.which(python)
    if found is not None and os.path.abspath(found) == os.path.abspath(sys.executable):
        return
    missing = missing_modules(found or python)
    if missing is None:
        raise worker_python_error(python, setting, "cannot be started", driver_python=sys.executable)
    if missing:
        raise worker_python_error(found or python, setting, f"cannot import {', '.join(missing)}",
                                  driver_python=sys.executable)
