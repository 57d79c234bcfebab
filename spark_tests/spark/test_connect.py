"""Spark Connect: the source through a remote session, against a real Connect server.

The server is what ``sbin/start-connect-server.sh`` runs (``spark-submit --class
org.apache.spark.sql.connect.service.SparkConnectServer``), in the foreground, in a child process
of its own: its own JVM and Python workers, this repository on their ``PYTHONPATH``, listening
on a free port of 127.0.0.1 and requiring a fresh token. The client here only speaks gRPC to it
(``sc://localhost:PORT/;token=...``), as a user's notebook would, so what crosses is what crosses
in production: the pickled data source class at ``register``, options, the schema with its
field metadata, Arrow batches, and errors as text.

Why not ``SparkSession.builder.remote("local[2]")``: that starts the server inside this process,
as a classic session of its own, and the suite's ``spark`` fixture (a classic session) may
already be running in the same pytest process; ``pyspark.sql.SparkSession.builder.remote(...)``
(any URL) then refuses (``SESSION_ALREADY_EXIST``), and once it succeeds it sets
``SPARK_CONNECT_MODE_ENABLED`` in ``os.environ`` for good, which turns every later classic
``getOrCreate()`` of the process into a Connect one. So the tests' client is the Connect
``SparkSession`` class itself (what ``builder.remote`` returns), which leaves the environment
alone, and one test runs the user's lines (``pyspark.sql.SparkSession.builder.remote(url)``,
``cmi_datasource.register(spark)``) in a fresh Python process.

Expected values come from ``Capture`` (no Spark), the same as the classic tests'.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

import cmi_datasource
from cmi_datasource import Capture, read
from cmi_datasource.errors import IncompleteAttachmentError
from cmi_datasource.spark.errors import typed_errors, unwrap
from cmi_datasource.spark.schema import spark_schema

pytestmark = pytest.mark.spark

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLES = os.path.join(ROOT, "sample_queues")
NIGHTLY = os.path.join(SAMPLES, "nightly_batch.dmp")
MIXED = os.path.join(SAMPLES, "mixed_types.dmp")
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
READY_SECONDS = 120  # a cold JVM on a busy 2-core machine; about 12 s when idle


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def python_path() -> str:
    """This checkout first, then this process's PYTHONPATH made absolute (the server runs elsewhere)."""
    given = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join([ROOT] + [p for p in given if p != ROOT])


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when pytest dies, so a killed run leaves no server
    (PR_SET_PDEATHSIG survives exec; spark-submit execs down to the JVM)."""
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG


class ConnectServer:
    """A Spark Connect server in a child process (the JVM, once spark-submit has exec'd)."""

    def __init__(self, workdir: str):
        import pyspark
        self.spark_home = os.path.dirname(os.path.abspath(pyspark.__file__))
        self.workdir = workdir
        self.log_path = os.path.join(workdir, "server.log")
        self.token = str(uuid.uuid4())
        self.process = None
        self.port = None

    @property
    def url(self) -> str:
        # "localhost", not 127.0.0.1: with a token and no TLS, the client uses gRPC local
        # credentials only for the host "localhost" (any other host would need TLS).
        return f"sc://localhost:{self.port}/;token={self.token}"

    def environment(self) -> dict:
        env = {k: v for k, v in os.environ.items()
               if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE", "SPARK_API_MODE",
                            "MASTER", "PYSPARK_SUBMIT_ARGS")}
        env.update(SPARK_HOME=self.spark_home, SPARK_CONF_DIR=os.path.join(ROOT, "conf"),
                   PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
                   # The workers import cmi_datasource from this checkout, not an installed copy.
                   PYTHONPATH=python_path(),
                   SPARK_CONNECT_AUTHENTICATE_TOKEN=self.token)
        return env

    def command(self, port: int) -> list:
        return [os.path.join(self.spark_home, "bin", "spark-submit"), "--class", SERVER_CLASS,
                "--name", "cmi-connect-tests", "--master", "local[2]",
                "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
                "--conf", f"spark.connect.grpc.binding.port={port}",
                "--conf", "spark.driver.bindAddress=127.0.0.1", "--conf", "spark.driver.host=127.0.0.1",
                "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.session.timeZone=UTC",
                "--conf", "spark.sql.timeType.enabled=true",
                "--conf", f"spark.sql.warehouse.dir={os.path.join(self.workdir, 'warehouse')}"]

    def start(self, attempts: int = 3) -> None:
        for _ in range(attempts):  # a port picked free may be taken before the server binds it
            self.port = free_port()
            with open(self.log_path, "ab") as log:
                self.process = subprocess.Popen(
                    self.command(self.port), env=self.environment(), cwd=self.workdir, stdin=subprocess.DEVNULL,
                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                    preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
            deadline = time.monotonic() + READY_SECONDS
            while self.process.poll() is None and time.monotonic() < deadline:
                if listening(self.port):
                    return
                time.sleep(0.2)
            if self.process.poll() is None:
                self.stop()
                raise RuntimeError(f"the Connect server did not listen within {READY_SECONDS} s:\n{self.log_tail()}")
        raise RuntimeError(f"the Connect server exited with {self.process.returncode}:\n{self.log_tail()}")

    def stop(self) -> None:
        """SIGTERM (Spark's shutdown hooks stop the context and its Python workers), then SIGKILL
        of the process group it leads if it has not exited within 30 s."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)

    def log_tail(self, chars: int = 4000) -> str:
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()[-chars:]


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory):
    import glob
    import shutil
    import pyspark
    if shutil.which("java") is None:
        pytest.fail("Java is missing: the Spark tests need Java 17 on PATH")
    if not glob.glob(os.path.join(os.path.dirname(os.path.abspath(pyspark.__file__)), "jars", "spark-connect_*.jar")):
        pytest.skip("this pyspark has no Spark Connect server jar")
    # Its cwd and log (server.log), kept by pytest with the run's other temporary directories.
    server = ConnectServer(str(tmp_path_factory.mktemp("connect-server")))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def remote(connect_server):
    """A Connect client session in this process, with the source registered as a user would."""
    pytest.importorskip("grpc", reason="Spark Connect's client needs pyspark[connect]")
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession
    before = os.environ.get("SPARK_CONNECT_MODE_ENABLED")
    session = RemoteSparkSession.builder.remote(connect_server.url).create()
    try:
        cmi_datasource.register(session)
        # A classic session of this process (the suite's spark fixture) is left as it was.
        assert os.environ.get("SPARK_CONNECT_MODE_ENABLED") == before
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="module")
def nightly():
    return Capture.open(NIGHTLY)


def plain(value):
    """Rows compared as Python values: Spark Rows and Arrow's to_pylist give the same types."""
    return value.asDict(recursive=True) if hasattr(value, "asDict") else value


def test_register_and_read_a_dataset_schema_labels_and_rows(remote):
    from pyspark.sql.connect.dataframe import DataFrame as RemoteDataFrame
    expected = read(MIXED, dataset="WORK.CUSTOMERS")
    df = remote.read.format("cmi").load(MIXED)
    assert isinstance(df, RemoteDataFrame)  # really the Connect client, not a classic session
    # The schema the server's Python worker planned, field metadata (labels, formats) included.
    assert df.schema == spark_schema(expected.schema)
    assert df.schema["OPENED"].metadata == {"label": "Date opened", "format": "DATE9.", "informat": "",
                                            "sas_type": "num", "sas_length": 8}
    assert [plain(r) for r in df.collect()] == expected.to_pylist()
    assert df.count() == 6


def test_a_large_dataset_by_name(remote, nightly):
    expected = read(nightly, dataset="FIN.DAILY_SALES")
    df = remote.read.format("cmi").option("dataset", "fin.daily_sales").load(NIGHTLY)
    assert df.schema == spark_schema(expected.schema)
    assert [f.metadata["label"] for f in df.schema.fields] == ["Business day", "Sales region", "Net sales",
                                                               "Units sold"]
    rows = [plain(r) for r in df.collect()]
    assert len(rows) == 543 and rows == expected.to_pylist()


def test_attachments_view(remote, nightly):
    columns = ["attachment", "kind", "name", "complete", "expected_messages", "found_messages", "observations",
               "variables", "problem", "source"]
    got = remote.read.format("cmi").option("view", "attachments").load(NIGHTLY).select(*columns).collect()
    expected = read(nightly, view="attachments").select(columns).to_pylist()
    assert sorted((plain(r) for r in got), key=lambda r: r["attachment"]) == \
        sorted(expected, key=lambda r: r["attachment"])
    by_name = {r["name"]: r for r in got}
    assert by_name["FIN.DAILY_SALES"]["complete"] and by_name["FIN.DAILY_SALES"]["observations"] == 543
    assert not by_name["FIN.RETURNS"]["complete"] and "missing [4]" in by_name["FIN.RETURNS"]["problem"]


def test_permissive_read_option(remote):
    df = remote.read.format("cmi").option("dataset", "FIN.RETURNS").option("mode", "PERMISSIVE").load(NIGHTLY)
    assert df.columns[-1] == "_corrupt_record"
    rows = df.collect()
    corrupt = [r for r in rows if r["_corrupt_record"] is not None]
    assert len(rows) == 95 and len(corrupt) == 1  # 94 trusted (before the gap and placed from the end)
    assert "sequenced message 4 is missing from the capture" in corrupt[0]["_corrupt_record"]
    assert all(v is None for k, v in corrupt[0].asDict().items() if k != "_corrupt_record")
    dropped = remote.read.format("cmi").option("dataset", "FIN.RETURNS").option("mode", "DROPMALFORMED")
    assert dropped.load(NIGHTLY).count() == 94


def test_failfast_error_is_typed_through_connect(remote):
    from pyspark.errors import PySparkException
    with pytest.raises(PySparkException) as raised:
        remote.read.format("cmi").option("dataset", "FIN.RETURNS").option("mode", "FAILFAST").load(NIGHTLY).collect()
    assert type(raised.value).__module__ == "pyspark.errors.exceptions.connect"  # Connect's, rebuilt from gRPC
    assert "Traceback (most recent call last)" not in str(raised.value)
    error = unwrap(raised.value)
    assert type(error) is IncompleteAttachmentError
    assert error.source == NIGHTLY and error.attachment is not None and len(error.attachment) == 32
    assert error.problem.startswith(f"attachment {error.attachment} (dataset FIN.RETURNS) is incomplete")
    assert "missing [4]" in error.problem and error.message_number is not None
    with pytest.raises(IncompleteAttachmentError), typed_errors():
        remote.read.format("cmi").option("dataset", "FIN.RETURNS").load(NIGHTLY).count()


def test_an_error_in_a_task_is_typed_through_connect(remote, tmp_path):
    # Raised while reading rows (a PythonException from a task), not while planning.
    import pyarrow as pa
    from pyspark.errors import PythonException
    from cmi_datasource.engine.write import DatasetToWrite, WriteOptions
    from cmi_datasource.errors import ValueConversionError
    from cmi_datasource.transports.mq.dmpmqmsg import write_dump
    from support import build_mq_messages
    path = str(tmp_path / "latin.dmp")
    with open(path, "wb") as f:
        write_dump(f, build_mq_messages([DatasetToWrite(pa.table({"S": pa.array(["café"] * 20)}), "LIB", "LATIN")],
                                        options=WriteOptions(ccsid=819, max_message_bytes=512)))
    with pytest.raises(PythonException) as raised:
        remote.read.format("cmi").option("ccsid", "1208").load(path).collect()
    error = unwrap(raised.value)
    assert type(error) is ValueConversionError and error.source == path and error.message_number is not None
    assert "is not valid UTF-8" in error.problem


def test_write_append_through_connect_reads_back_equal(remote, tmp_path):
    out = str(tmp_path / "outbound")
    df = remote.read.format("cmi").load(MIXED)
    df.write.format("cmi").mode("append").option("dataset", "WORK.CUSTOMERS").save(out)
    assert [n for n in os.listdir(out) if not n.startswith((".", "_"))]  # the server wrote here
    back = remote.read.format("cmi").load(out)
    assert back.schema == df.schema  # labels and formats went out with the attachment
    assert sorted((plain(r) for r in back.collect()), key=lambda r: r["ID"]) == \
        sorted((plain(r) for r in df.collect()), key=lambda r: r["ID"])
    created = remote.createDataFrame([(1.5, "ab"), (None, None)], "x double, s string")
    created.write.format("cmi").mode("append").option("dataset", "WORK.MADE").save(out)
    made = remote.read.format("cmi").option("dataset", "work.made").load(out)
    assert sorted(made.collect(), key=lambda r: r["x"] is None) == [(1.5, "ab"), (None, None)]


CLIENT_SCRIPT = textwrap.dedent("""
    import json, os, sys
    from pyspark.sql import SparkSession
    import cmi_datasource

    spark = SparkSession.builder.remote(os.environ["CMI_TEST_CONNECT_URL"]).getOrCreate()
    cmi_datasource.register(spark)
    schema = spark.read.format("cmi").load(sys.argv[1]).schema  # planned by the server's Python worker
    print(json.dumps({"session": type(spark).__module__, "columns": len(schema.fields),
                      "label": schema["OPENED"].metadata["label"]}))
    spark.stop()
""")


def test_the_readme_lines_in_a_fresh_client_process(connect_server):
    # What a user types: pyspark.sql.SparkSession.builder.remote(...), then register. A schema
    # only: the server starts Python workers afresh for each Connect session (each has its own
    # environment), and the rows' path is the other tests'.
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")}
    env["CMI_TEST_CONNECT_URL"] = connect_server.url
    env["PYTHONPATH"] = python_path()
    done = subprocess.run([sys.executable, "-c", CLIENT_SCRIPT, MIXED], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-4000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "session": "pyspark.sql.connect.session", "columns": 9, "label": "Date opened"}
