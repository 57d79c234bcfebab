"""Shared fixtures: one local Spark session for the Spark tests, sample dumps on disk."""
from __future__ import annotations

import os
import shutil
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(ROOT, "sample_queues")


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
               .config("spark.sql.timeType.enabled", "true").getOrCreate())
    yield session
    session.stop()


@pytest.fixture(scope="session")
def samples_dir():
    return SAMPLES


def dump_messages(tmp_path, messages, name="q.dmp") -> str:
    """Write (descriptor, payload) pairs as a dmpmqmsg dump under tmp_path; returns its path."""
    from cmi_datasource.transports.mq.dmpmqmsg import write_dump
    path = tmp_path / name
    with open(path, "wb") as f:
        write_dump(f, messages)
    return str(path)
