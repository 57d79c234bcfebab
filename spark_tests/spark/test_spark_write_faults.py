"""The writer under faults (issue 15), through Spark: a task that fails and is retried, a job aborted
midway, two jobs writing one directory at once, a driver killed mid-commit. The destination holds
complete dumps only (each row read back exactly once), never a partial one, no staging leftovers
of a job that ended, and the error says what happened. The guarantees are listed in the docstring
of ``cmi_datasource/spark/writer.py``.

Task retries need Spark's local mode with maxFailures > 1 (``local[2,3]``), and a driver killed
with SIGKILL needs a driver of its own: those run in a child Python process (``SCENARIOS``); the
results are read back with the shared session.
"""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from pyspark.sql import functions as F

from cmi_datasource.errors import CmiOptionError
from cmi_datasource.spark.errors import StagingLostError, unwrap
from cmi_datasource.spark.writer import STAGING_DIR

from conftest import ROOT
from support import kill_tree, wait_for

pytestmark = pytest.mark.spark


def tree(directory) -> list:
    """Every file under ``directory``, as relative paths (staging folders included)."""
    found = []
    for folder, _, names in os.walk(directory):
        found += [os.path.relpath(os.path.join(folder, n), directory) for n in names]
    return sorted(found)


def dumps(directory) -> list:
    return sorted(glob.glob(os.path.join(str(directory), "cmi-*.dmp")))


def values(spark, path) -> list:
    return sorted(r["x"] for r in spark.read.format("cmi").load(str(path)).collect())


# -- a driver of its own ------------------------------------------------------------------------

SCENARIOS = textwrap.dedent(r"""
    import json, os, sys, time
    from pyspark import TaskContext
    from pyspark.sql import SparkSession, functions as F
    from cmi_datasource.engine.options import SaveOptions
    from cmi_datasource.spark.source import CmiDataSource
    from cmi_datasource.spark.writer import CmiWriter

    spark = SparkSession.builder.master("local[2,3]").config("spark.ui.enabled", "false").getOrCreate()
    scenario = out = log = None

    def note(**fields):
        with open(log, "a") as f:
            f.write(json.dumps(fields) + "\n")

    class FaultyWriter(CmiWriter):
        def write(self, iterator):
            ctx = TaskContext.get()
            note(event="write", partition=ctx.partitionId(), attempt=ctx.attemptNumber())

            def batches():
                for n, batch in enumerate(iterator):
                    yield batch
                    if scenario == "crash" and ctx.partitionId() == 2 and ctx.attemptNumber() == 0:
                        # The first batch is in the spill: the worker dies with the file half written.
                        note(event="crash", partition=2, staged=sorted(os.listdir(self.staging)))
                        os._exit(1)
            return super().write(batches())

        def commit(self, messages):
            note(event="commit", spills=[m.spill_path for m in messages], staged=sorted(os.listdir(self.staging)))
            if scenario == "kill":
                import cmi_datasource.spark.writer as writer
                spill_batches = writer._spill_batches

                def slow(message):  # the driver dies with the dump partly on disk
                    for batch in spill_batches(message):
                        yield batch
                        assembling = [os.path.join(self.staging, n) for n in os.listdir(self.staging)
                                      if n.startswith("assembling-")]
                        if assembling and os.path.getsize(assembling[0]) > 0:
                            note(event="committing")
                            time.sleep(300)
                writer._spill_batches = slow
            return super().commit(messages)

    class FaultySource(CmiDataSource):
        @classmethod
        def name(cls):
            return "cmi_faulty"

        def writer(self, schema, overwrite):
            return FaultyWriter(SaveOptions.parse(dict(self.options)), schema, overwrite)

    @F.udf("double")
    def fail_once(x):
        ctx = TaskContext.get()
        if scenario == "raise" and ctx.partitionId() == 1 and ctx.attemptNumber() == 0 and x == 17:
            raise ValueError("first attempt of partition 1 fails")
        return x

    # argv: (scenario, destination, log) triples, run one after the other
    for scenario, out, log in zip(sys.argv[1::3], sys.argv[2::3], sys.argv[3::3]):
        big = scenario == "kill"
        spark.dataSource.register(FaultySource)  # pickled now: with this run's scenario and log
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "10000" if big else "5")
        # Big: 4.8 MB of observations, more than the commit reads ahead (a few chunks of 1 MiB).
        df = spark.range(0, 600000 if big else 40, 1, 4).select(fail_once(F.col("id").cast("double")).alias("x"))
        df.write.format("cmi_faulty").mode("append").save(out)
        note(event="done")
""")


def run_scenarios(*runs) -> subprocess.Popen:
    """A driver of its own running ``SCENARIOS`` for each (scenario, destination, log) of ``runs``."""
    env = dict(os.environ, SPARK_CONF_DIR=os.path.join(ROOT, "conf"), PYSPARK_PYTHON=sys.executable,
               PYTHONPATH=ROOT)
    return subprocess.Popen([sys.executable, "-c", SCENARIOS] + [str(a) for run in runs for a in run], env=env,
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def events(log) -> list:
    with open(log) as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def retried(tmp_path_factory):
    """Two writes of ids 0..39 in 4 partitions (batches of 5 rows) with local[2,3], in a driver of
    their own: ``raise`` (a UDF raises on partition 1's first attempt, after a batch was spilled)
    and ``crash`` (partition 2's Python writer dies with os._exit on its first attempt, its spill
    half written)."""
    root = tmp_path_factory.mktemp("retried")
    runs = {s: (root / s, root / f"{s}.log") for s in ("raise", "crash")}
    driver = run_scenarios(*[(s, out, log) for s, (out, log) in runs.items()])
    _, stderr = driver.communicate(timeout=300)
    assert driver.returncode == 0, stderr[-3000:]
    return {s: (out, events(log)) for s, (out, log) in runs.items()}


def test_a_task_whose_udf_fails_once_is_retried_and_each_row_is_written_once(spark, retried):
    out, log = retried["raise"]
    attempts = sorted((e["partition"], e["attempt"]) for e in log if e["event"] == "write")
    assert (1, 0) in attempts and (1, 1) in attempts  # really retried
    [commit] = [e for e in log if e["event"] == "commit"]
    assert len(commit["spills"]) == 4 and len(set(commit["spills"])) == 4
    assert [os.path.basename(p) for p in commit["spills"] if "part-00001-" in p][0].startswith("part-00001-attempt-1-")
    assert values(spark, out) == [float(i) for i in range(40)]
    assert tree(out) == [os.path.basename(dumps(out)[0])]  # one dump, no staging


def test_a_writer_that_dies_mid_spill_leaves_a_partial_file_the_commit_never_reads(spark, retried):
    out, log = retried["crash"]
    [crash] = [e for e in log if e["event"] == "crash"]
    [commit] = [e for e in log if e["event"] == "commit"]
    crashed = [name for name in crash["staged"] if name.startswith("part-00002-attempt-0-")]
    assert crashed and crashed[0] in commit["staged"]  # the dead attempt's spill is still in staging...
    assert crashed[0] not in {os.path.basename(p) for p in commit["spills"]}  # ...and is not committed
    assert len(commit["spills"]) == 4 and any("part-00002-attempt-1-" in p for p in commit["spills"])
    assert values(spark, out) == [float(i) for i in range(40)]
    assert tree(out) == [os.path.basename(dumps(out)[0])]


def test_a_driver_killed_mid_commit_leaves_no_dump_and_the_next_write_ignores_its_leftovers(spark, tmp_path):
    out, log = tmp_path / "out", tmp_path / "kill.log"
    driver = run_scenarios(("kill", out, log))
    try:
        wait_for(lambda: os.path.exists(log) and any(e["event"] == "committing" for e in events(log)),
                 "the commit to write part of the dump", timeout=180)
        assembling = wait_for(lambda: [p for p in glob.glob(str(out / STAGING_DIR / "*" / "assembling-*"))
                                       if os.path.getsize(p) > 0], "dump bytes on disk")
    finally:
        kill_tree(driver)
    time.sleep(0.5)
    leftovers = tree(out)
    assert dumps(out) == [] and all(p.startswith(STAGING_DIR + os.sep) for p in leftovers)  # nothing looks finished
    assert any(os.path.basename(p).startswith("part-") for p in leftovers) and \
        os.path.relpath(assembling[0], out) in leftovers

    with pytest.raises(Exception) as raised:  # the reader sees no capture: it skips _cmi_temporary
        spark.read.format("cmi").load(str(out)).count()
    assert isinstance(unwrap(raised.value), CmiOptionError) and "no capture files" in str(raised.value)

    spark.range(0, 10, 1, 2).select(F.col("id").cast("double").alias("x")).write.format("cmi") \
        .mode("overwrite").save(str(out))
    assert values(spark, out) == [float(i) for i in range(10)]
    assert sorted(set(tree(out)) - set(leftovers)) == [os.path.basename(p) for p in dumps(out)]  # leftovers untouched


# -- aborted jobs ---------------------------------------------------------------------------------


def fail_after_others_spilled(out, seen_log):
    """A UDF failing in the last of 4 partitions, once partitions 0 and 1 have spilled (it writes the
    spills it saw to ``seen_log``): the job aborts with staged files to clean up."""
    staging = os.path.join(str(out), STAGING_DIR)

    @F.udf("double")
    def udf(x):
        from pyspark import TaskContext
        if TaskContext.get().partitionId() == 3:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                spills = glob.glob(os.path.join(staging, "*", "part-*.arrow"))
                if {os.path.basename(s)[:10] for s in spills} >= {"part-00000", "part-00001"}:
                    break
                time.sleep(0.02)
            with open(seen_log, "w") as f:
                f.write("\n".join(sorted(os.path.basename(s) for s in spills)))
            raise ValueError("injected failure in partition 3")
        return x
    return udf


@pytest.mark.parametrize("mode", ["append", "overwrite"])
def test_a_job_aborted_after_some_tasks_spilled_leaves_the_previous_dumps_and_nothing_else(spark, tmp_path, mode):
    out = tmp_path / "out"
    spark.range(0, 3).select(F.col("id").cast("double").alias("x")).write.format("cmi").mode("append").save(str(out))
    before = {p: (out / p).read_bytes() for p in tree(out)}
    failing = fail_after_others_spilled(out, tmp_path / "seen")
    df = spark.range(0, 400, 1, 4).select(failing(F.col("id").cast("double")).alias("x"))
    with pytest.raises(Exception) as raised:
        df.write.format("cmi").mode(mode).save(str(out))
    assert "ValueError: injected failure in partition 3" in str(raised.value)
    assert "part-00000" in (tmp_path / "seen").read_text() and "part-00001" in (tmp_path / "seen").read_text()
    assert {p: (out / p).read_bytes() for p in tree(out)} == before  # no staging, nothing replaced
    assert sorted(os.listdir(out)) == sorted(before)
    assert values(spark, out) == [0.0, 1.0, 2.0]


def test_an_aborted_job_into_a_new_directory_leaves_no_directory(spark, tmp_path):
    out = tmp_path / "new"
    failing = fail_after_others_spilled(out, tmp_path / "seen")
    with pytest.raises(Exception, match="injected failure in partition 3"):
        spark.range(0, 400, 1, 4).select(failing(F.col("id").cast("double")).alias("x")) \
            .write.format("cmi").mode("append").save(str(out))
    assert not out.exists()


def test_spills_removed_under_a_running_job_fail_the_commit_saying_so(spark, tmp_path):
    out = tmp_path / "out"
    staging = os.path.join(str(out), STAGING_DIR)

    @F.udf("double")
    def remove_the_others(x):  # the last partition deletes the spills of partitions 0 and 1
        from pyspark import TaskContext
        if TaskContext.get().partitionId() == 3 and x == 399:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                spills = [s for s in glob.glob(os.path.join(staging, "*", "part-*.arrow"))
                          if os.path.basename(s)[:10] in ("part-00000", "part-00001")]
                if len(spills) == 2:
                    break
                time.sleep(0.02)
            for s in spills:
                os.remove(s)
        return x

    df = spark.range(0, 400, 1, 4).select(remove_the_others(F.col("id").cast("double")).alias("x"))
    with pytest.raises(Exception) as raised:
        df.write.format("cmi").mode("append").save(str(out))
    error = unwrap(raised.value)
    assert isinstance(error, StagingLostError), str(raised.value)[:2000]
    assert str(error).startswith("the spill of partition 0 (") and "nothing was committed" in str(error)
    assert tree(out) == []


# -- concurrent jobs ----------------------------------------------------------------------------


def in_thread(spark, target):
    """``target`` run in a thread of its own, its outcome in the dict returned.

    Spark 4.3 finds no Python data source for ``df.write`` in a Python thread whose JVM thread has
    no active session (DATA_SOURCE_NOT_FOUND, while reads work): the thread sets it first."""
    outcome = {}

    def run():
        try:
            spark._jvm.org.apache.spark.sql.classic.SparkSession.setActiveSession(spark._jsparkSession)
            outcome["result"] = target()
        except BaseException as e:  # handed to the test
            outcome["error"] = e
    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def test_two_appends_at_once_into_one_directory_each_leave_a_complete_dump(spark, tmp_path):
    out = str(tmp_path / "out")
    start = threading.Barrier(3)

    def append(first):
        start.wait()
        spark.range(first, first + 300, 1, 2).select(F.col("id").cast("double").alias("x")) \
            .write.format("cmi").mode("append").save(out)
    jobs = [in_thread(spark, lambda first=first: append(first)) for first in (0, 1000)]
    start.wait()
    for thread, outcome in jobs:
        thread.join(120)
        assert "error" not in outcome, outcome.get("error")
    found = dumps(out)
    assert len(found) == 2 and tree(out) == sorted(os.path.basename(p) for p in found)
    assert sorted(values(spark, p) for p in found) == [[float(i) for i in range(first, first + 300)]
                                                       for first in (0, 1000)]


def test_an_overwrite_keeps_a_dump_another_job_committed_while_it_ran(spark, tmp_path):
    out = tmp_path / "out"
    spark.range(0, 3).select(F.col("id").cast("double").alias("x")).write.format("cmi").mode("append").save(str(out))
    [old] = dumps(out)
    go = tmp_path / "go"

    @F.udf("double")
    def wait_for_go(x):
        deadline = time.monotonic() + 60
        while not os.path.exists(go) and time.monotonic() < deadline:
            time.sleep(0.02)
        return x

    overwriting = spark.range(100, 110, 1, 1).select(wait_for_go(F.col("id").cast("double")).alias("x"))
    thread, outcome = in_thread(spark, lambda: overwriting.write.format("cmi").mode("overwrite").save(str(out)))
    try:
        wait_for(lambda: glob.glob(str(out / STAGING_DIR / "*")), "the overwrite to start")
        spark.range(200, 205, 1, 1).select(F.col("id").cast("double").alias("x")) \
            .write.format("cmi").mode("append").save(str(out))  # commits while the overwrite runs
    finally:
        go.write_text("")
        thread.join(120)
    assert "error" not in outcome, outcome.get("error")
    found = dumps(out)
    assert old not in found and len(found) == 2 and tree(out) == sorted(os.path.basename(p) for p in found)
    assert sorted(values(spark, p) for p in found) == [[float(i) for i in range(100, 110)],
                                                       [float(i) for i in range(200, 205)]]
