"""Shared fixtures: one local Spark session for the Spark tests, sample dumps on disk.

The tests are split by layer, and marked by folder (``pytest_collection_modifyitems``; the
markers are declared in pyproject.toml): ``unit/`` needs no Spark and is the fast stage of
``make test`` (``pytest -m unit``, about a minute), ``spark/`` and ``s3/`` start a local Spark
session (``s3/`` a moto server too), ``cluster/`` a standalone cluster. A test that runs a real
broker or tcpdump (the fixtures of ``live.py``) is ``live``, and a test measured at more than
about 20 s carries ``@pytest.mark.slow``: neither is ``unit``, so the fast stage stays fast,
and ``pytest -m "not unit"`` runs them with the rest. A unit test that asks for the ``spark``
fixture is refused, and every test that uses it is marked ``spark``.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, settings

# No test asserts on wall-clock time (timings belong in bench/): Hypothesis's per-example deadline
# and its data-generation speed check would fail a test on a loaded machine. The profile is loaded
# here, before the test modules are imported, so that their own @settings inherit it.
settings.register_profile("no-timing", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("no-timing")

pytest_plugins = ("live",)  # the mosquitto and tcpdump fixtures

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(ROOT, "sample_queues")
TESTS = os.path.dirname(os.path.abspath(__file__))
FOLDER_MARKERS = {"unit": ("unit",), "spark": ("spark",), "s3": ("spark",), "cluster": ("spark", "cluster")}
LIVE_FIXTURES = {"broker", "persistent_broker", "capture_file", "loopback_capture"}  # live.py: mosquitto, tcpdump


def pytest_collection_modifyitems(config, items):
    for item in items:
        folder = os.path.relpath(os.path.abspath(str(item.fspath)), TESTS).split(os.sep)[0]
        fixtures = set(getattr(item, "fixturenames", ()))
        if folder not in FOLDER_MARKERS:
            raise pytest.UsageError(f"{item.nodeid}: tests live in one of spark_tests/{{{','.join(FOLDER_MARKERS)}}}/")
        if "spark" in fixtures:
            if folder == "unit":
                raise pytest.UsageError(f"{item.nodeid} needs Spark: it belongs in spark_tests/spark/")
            item.add_marker(pytest.mark.spark)
        live = bool(fixtures & LIVE_FIXTURES)
        if live:
            item.add_marker(pytest.mark.live)
        for marker in FOLDER_MARKERS[folder]:
            if marker == "unit" and (live or item.get_closest_marker("slow")):
                continue  # not in the fast stage: ``pytest -m "not unit"`` runs it
            item.add_marker(getattr(pytest.mark, marker))


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
