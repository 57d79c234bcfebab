"""Spark's Python workers started with a Python that lacks the package's dependencies (the README's
first snippet run with ``.venv/bin/python``, venv not activated): the error names PYSPARK_PYTHON,
from the worker (the source found by discovery) and from the driver (``register(spark)``)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import venv

import pytest

from cmi_datasource.spark.workers import NEEDED_MODULES, missing_modules

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MIXED = os.path.join(ROOT, "sample_queues", "mixed_types.dmp")

DRIVER = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    import cmi_datasource
    from cmi_datasource.spark.errors import unwrap
    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    seen = {}
    try:
        spark.read.format("cmi").load(sys.argv[1]).count()   # found by discovery, in the checkout
    except Exception as e:
        seen["discovered"] = [type(unwrap(e)).__name__, str(unwrap(e) or e)]
    try:
        cmi_datasource.register(spark)
    except Exception as e:
        seen["register"] = [type(e).__name__, str(e)]
    print(json.dumps(seen))
    spark.stop()
""")


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory):
    """A Python with nothing installed: a fresh virtual environment without even pip."""
    home = tmp_path_factory.mktemp("bare") / "venv"
    venv.create(home, with_pip=False)
    return str(home / "bin" / "python")


def test_missing_modules_asks_the_interpreter_itself(bare_python):
    assert missing_modules(sys.executable) == []
    # cmi_datasource itself may be found (PYTHONPATH, the working directory): its dependencies are not.
    assert set(missing_modules(bare_python)) >= set(NEEDED_MODULES) - {"cmi_datasource"}
    assert missing_modules(os.path.join(os.path.dirname(bare_python), "no-such-python")) is None


def test_workers_without_pyarrow_are_named_by_pyspark_python(bare_python):
    # The README's first snippet as a newcomer runs it: PYSPARK_PYTHON only (make test also exports
    # PYSPARK_DRIVER_PYTHON, which Spark's local planning workers would run instead).
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_DRIVER_PYTHON"}
    env.update(PYSPARK_PYTHON=bare_python, PYTHONPATH=ROOT, SPARK_CONF_DIR=os.path.join(ROOT, "conf"))
    done = subprocess.run([sys.executable, "-c", DRIVER, MIXED], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    for where in ("discovered", "register"):
        kind, text = seen[where]
        assert kind == "WorkerPythonError", (where, text)
        assert text.startswith(f"Spark's Python workers run {bare_python} (PYSPARK_PYTHON={bare_python}), which "
                               f"cannot import pyarrow"), (where, text)
        assert "set PYSPARK_PYTHON to the absolute path of the Python that has cmi-datasource" in text
    assert f"export PYSPARK_PYTHON={sys.executable}" in seen["register"][1]  # the driver knows the right one
