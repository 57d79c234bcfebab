"""Fixtures of the standalone cluster test: the wheel, the executors' Python, the cluster, a
multi-file capture, and one run of the cluster driver (``cluster_driver.py``) whose JSON the
tests assert on.

The cluster is a master and two workers on 127.0.0.1 (Spark's own ``bin/spark-class`` launcher),
started and stopped here (``cluster_harness.py``). The driver runs in a child process: a
SparkContext is one per process and the suite's local session may already live in this one.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from . import cluster_harness as harness

HERE = Path(__file__).resolve().parent

DATASET = harness.CAPTURE_DATASET
SALES_FILES = 5  # one attachment each, plus one spread over two files
SAMPLES_TOO = ("mixed_types.dmp", "nightly_batch.dmp", "files.dmp")  # other attachments in the same load


@pytest.fixture(scope="session")
def cluster_wheel(tmp_path_factory) -> Path:
    return harness.build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="session")
def executor_python(tmp_path_factory, cluster_wheel) -> Path:
    """The Python of the cluster's "nodes": a venv where cmi_datasource is the installed wheel."""
    return harness.executor_venv(tmp_path_factory.mktemp("executor-venv"), cluster_wheel)


@pytest.fixture(scope="module")
def standalone_cluster(tmp_path_factory):
    if shutil.which("java") is None:
        pytest.fail("Java is missing: the cluster test needs Java 17 on PATH")
    cluster = harness.StandaloneCluster(tmp_path_factory.mktemp("cluster"))
    try:
        yield cluster.start(workers=2, cores=1, memory="1g")
    finally:
        cluster.stop()


def sales_table(n: int, file_no: int) -> pa.Table:
    return pa.table({"FILE": pa.array([float(file_no)] * n),
                     "ID": pa.array([float(i) for i in range(n)]),
                     "NAME": pa.array([f"f{file_no}-r{i}-{'é' * (i % 3)}" for i in range(n)])})


@pytest.fixture(scope="module")
def cluster_capture(tmp_path_factory, samples_dir) -> Path:
    """A capture of several files: ``SALES_FILES`` dumps with one LIB.SALES attachment each, one
    more LIB.SALES attachment whose messages are split over two files, and sample dumps holding
    other datasets and files."""
    from cmi_datasource.engine.write import DatasetToWrite, WriteOptions, build_messages, write_attachments_dump
    from cmi_datasource.transports.mq.dmpmqmsg import write_dump
    from cmi_datasource.transports.mq.transport import mq_pairs

    directory = tmp_path_factory.mktemp("capture")
    for i in range(SALES_FILES):
        with open(directory / f"sales-{i}.dmp", "wb") as f:
            # Distinct seeds: distinct correlation ids, else the copies would be dropped as duplicates.
            write_attachments_dump(f, [DatasetToWrite(sales_table(3000 + 700 * i, i), "LIB", "SALES")],
                                   options=WriteOptions(max_message_bytes=4096, deterministic_seed=f"cluster-{i}"))
    split = mq_pairs(build_messages([DatasetToWrite(sales_table(2500, SALES_FILES), "LIB", "SALES")],
                                    options=WriteOptions(max_message_bytes=4096, deterministic_seed="cluster-split")))
    half = len(split) // 2
    for name, part in (("split-a.dmp", split[:half]), ("split-b.dmp", split[half:])):
        with open(directory / name, "wb") as f:
            write_dump(f, part)
    for name in SAMPLES_TOO:
        shutil.copy(os.path.join(samples_dir, name), directory / f"sample-{name}")
    return directory


@pytest.fixture(scope="module")
def cluster_run(standalone_cluster, executor_python, cluster_capture, tmp_path_factory):
    """One run of ``cluster_driver.py`` against the cluster; its result and where things were."""
    base = tmp_path_factory.mktemp("driver")
    driver_tmp = base / "tmp"
    driver_tmp.mkdir()
    config = {"master": standalone_cluster.master_url, "executors": len(standalone_cluster.workers),
              "capture": str(cluster_capture), "dataset": DATASET, "write_to": str(base / "written"),
              # A partition per LIB.SALES attachment: small attachments are otherwise packed together.
              "min_partitions": SALES_FILES + 1,
              "driver_local_dir": str(base / "local"), "register": False, "checkout": str(harness.ROOT),
              "reports": str(base / "reports")}
    (base / "reports").mkdir()
    env = standalone_cluster.env(
        PYSPARK_PYTHON=str(executor_python),  # the executors' Python: cmi_datasource from the wheel
        SPARK_CONF_DIR=str(harness.ROOT / "conf"),  # the suite's quiet logging (spark.master is set)
        TMPDIR=str(driver_tmp), CMI_DATASOURCE_CACHE=str(base / "cmi-cache"))
    try:
        result = harness.run_driver(HERE / "cluster_driver.py", config, env, base / "driver.log", timeout=300)
    except RuntimeError as e:
        pytest.fail(f"{e}\n{standalone_cluster.log_tails()}")
    result["config"] = config
    result["master_state"] = standalone_cluster.state()
    result["worker_states"] = {w.name: standalone_cluster.get_json(f"http://127.0.0.1:{w.ui_port}/json/")
                               for w in standalone_cluster.workers}
    return result
