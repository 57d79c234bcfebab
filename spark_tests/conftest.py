"""Shared fixtures: one local Spark session for the Spark tests, sample dumps on disk.

The tests are split by layer: ``unit/`` needs no Spark (run it first: ``pytest spark_tests/unit``,
about 30 s), ``spark/`` starts a local Spark session. A unit test that asks for the ``spark``
fixture is refused, and every test that uses it is marked ``spark`` (``-m "not spark"``).
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile

import pytest

pytest_plugins = ("live",)  # the mosquitto and tcpdump fixtures

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(ROOT, "sample_queues")
UNIT_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "unit")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            if os.path.abspath(str(item.fspath)).startswith(UNIT_TESTS + os.sep):
                raise pytest.UsageError(f"{item.nodeid} needs Spark: it belongs in spark_tests/spark/")
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark():
    if shutil.which("java") is None:
        pytest.fail("Java is missing: the Spark tests need Java 17 on PATH")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_CONF_DIR", os.path.join(ROOT, "conf"))
    from pyspark.sql import SparkSession
    session = (SparkSession.builder.master("local[2]").appName("cmi-tests")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.timeType.enabled", "true")
               # Tables a test creates must not leave a spark-warehouse folder in the checkout.
               .config("spark.sql.warehouse.dir", tempfile.mkdtemp(prefix="cmi-warehouse-")).getOrCreate())
    yield session
    session.stop()


@pytest.fixture(scope="session")
def samples_dir():
    return SAMPLES


@pytest.fixture(scope="session")
def big_dump(tmp_path_factory):
    """``support.STRADDLING_TABLE`` in 1000-byte messages: records straddle nearly every message."""
    from cmi_datasource.engine.write import DatasetToWrite, WriteOptions
    from support import STRADDLING_TABLE, build_mq_messages
    path = tmp_path_factory.mktemp("big") / "big.dmp"
    dump_messages(path.parent, build_mq_messages([DatasetToWrite(STRADDLING_TABLE, "LIB", "BIG")],
                                                 options=WriteOptions(max_message_bytes=1000,
                                                                      deterministic_seed="big")), path.name)
    return str(path)


def dump_messages(tmp_path, messages, name="q.dmp") -> str:
    """Write (MQMD, payload) pairs as a dmpmqmsg dump under tmp_path; returns its path."""
    from cmi_datasource.transports.mq.dmpmqmsg import write_dump
    path = tmp_path / name
    with open(path, "wb") as f:
        write_dump(f, messages)
    return str(path)
