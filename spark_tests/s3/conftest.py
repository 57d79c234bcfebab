"""A real local S3 server for the tests of ``s3://`` paths: moto's server in a process of its own.

One server per test session, on a free 127.0.0.1 port, stopped at the end even when tests fail.
It enforces IAM (moto's ``/moto-api/reset-auth``): the session signs as the IAM user
``cmi-reader``, allowed ``s3:*`` except on bucket ``cmi-denied`` (see ``s3_helpers``), so an
access-denied error is the server's real answer.

Credentials and endpoint reach the code only through the standard environment:
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``, ``AWS_REGION`` and
``AWS_ENDPOINT_URL`` (pyarrow's ``FileSystem.from_uri`` reads ``AWS_ENDPOINT_URL_S3``, else
``AWS_ENDPOINT_URL``; ``S3FileSystem()`` reads neither).

Spark's Python workers see the driver's environment only as the JVM saw it when it was launched:
the format ``cmi`` found by discovery (``pyspark_cmi.DefaultSource``) runs in workers forked
from a daemon that has the JVM process's environment; ``spark.executorEnv.*`` and
``sparkContext.environment`` do not reach it. So the server is started and the environment set
before the session (this folder's ``spark`` fixture asks for the server first). When another
test folder started the session earlier, the variables are also put into
``sparkContext.environment`` and ``cmi`` is registered at runtime (``cmi_datasource.register``):
a runtime-registered source's functions carry that environment, and Spark starts a new worker
daemon for it.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from .s3_helpers import DATA_BUCKET, DENIED_BUCKET, S3Server

REGION = "us-east-1"
ENV_NAMES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION", "AWS_REGION",
             "AWS_ENDPOINT_URL", "AWS_EC2_METADATA_DISABLED")
# Would take precedence over, or add to, what the tests set.
ENV_CLEARED = ("AWS_ENDPOINT_URL_S3", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_CONFIG_FILE",
               "AWS_SHARED_CREDENTIALS_FILE", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _moto_command(port: int):
    script = os.path.join(os.path.dirname(sys.executable), "moto_server")
    command = [script] if os.path.exists(script) else [sys.executable, "-m", "moto.server"]
    return command + ["-H", "127.0.0.1", "-p", str(port)]


def _wait_until_up(process, endpoint: str, log_path: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            with urllib.request.urlopen(endpoint + "/moto-api/", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    with open(log_path, errors="replace") as f:
        tail = f.read()[-3000:]
    raise RuntimeError(f"moto server at {endpoint} did not answer (exit code {process.poll()}):\n{tail}")


def _stop(process) -> None:
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(10)


def _setup_accounts(endpoint: str):
    """Buckets, the IAM user the session signs as and its key; done before IAM is enforced,
    with moto's default credentials."""
    import boto3
    root = dict(endpoint_url=endpoint, region_name=REGION, aws_access_key_id="testing",
                aws_secret_access_key="testing")
    s3 = boto3.client("s3", **root)
    for bucket in (DATA_BUCKET, DENIED_BUCKET):
        s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=DENIED_BUCKET, Key="secret/nightly_batch.dmp", Body=b"* not for you\n")
    iam = boto3.client("iam", **root)
    iam.create_user(UserName="cmi-reader")
    iam.put_user_policy(UserName="cmi-reader", PolicyName="all-but-denied", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": "s3:*", "Resource": "*"},
            {"Effect": "Deny", "Action": "s3:*",
             "Resource": [f"arn:aws:s3:::{DENIED_BUCKET}", f"arn:aws:s3:::{DENIED_BUCKET}/*"]},
        ]}))
    key = iam.create_access_key(UserName="cmi-reader")["AccessKey"]
    return key["AccessKeyId"], key["SecretAccessKey"]


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("moto")
    log_path = str(workdir / "moto_server.log")
    recording_path = str(workdir / "moto_recording.jsonl")
    port = _free_port()
    endpoint = f"http://127.0.0.1:{port}"
    server_env = dict(os.environ, MOTO_RECORDER_FILEPATH=recording_path)
    for name in ENV_CLEARED + ("AWS_ENDPOINT_URL",):
        server_env.pop(name, None)
    with open(log_path, "wb") as log:
        process = subprocess.Popen(_moto_command(port), stdout=log, stderr=subprocess.STDOUT,
                                   env=server_env, cwd=str(workdir), start_new_session=True)
    patch = pytest.MonkeyPatch()
    try:
        _wait_until_up(process, endpoint, log_path)
        access_key, secret_key = _setup_accounts(endpoint)
        server = S3Server(endpoint, port, access_key, secret_key, REGION, log_path, recording_path)
        server.moto_api("reset-auth", b"0")  # from now on every request is signed by cmi-reader
        for name in ENV_CLEARED:
            patch.delenv(name, raising=False)
        patch.setenv("AWS_ACCESS_KEY_ID", access_key)
        patch.setenv("AWS_SECRET_ACCESS_KEY", secret_key)
        patch.setenv("AWS_DEFAULT_REGION", REGION)
        patch.setenv("AWS_REGION", REGION)
        patch.setenv("AWS_ENDPOINT_URL", endpoint)
        patch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance-metadata probing
        yield server
    finally:
        patch.undo()
        _stop(process)


@pytest.fixture(scope="session")
def spark(s3_server, spark):
    """The session-wide Spark session, its Python workers seeing the S3 environment."""
    import cmi_datasource
    environment = spark.sparkContext.environment
    saved = {name: environment.get(name) for name in ENV_NAMES}
    for name in ENV_NAMES:
        environment[name] = os.environ[name]
    cmi_datasource.register(spark)  # needed only when the session predates the server (see above)
    yield spark
    for name, value in saved.items():
        if value is None:
            environment.pop(name, None)
        else:
            environment[name] = value


@pytest.fixture
def s3(s3_server):
    return s3_server
