"""A real MQTT broker and a real capture for the tests: mosquitto on a free loopback port, tcpdump
capturing loopback. `make test` (scripts/test_tools.sh) installs Debian's mosquitto,
mosquitto-clients and tcpdump when they are missing; the fixtures fail without them, and skip
(saying why) only where the machine does not permit capturing."""
from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import time

import pytest

TOOLS = ("mosquitto", "mosquitto_pub", "tcpdump")

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _require(*tools: str) -> None:
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"{', '.join(missing)} missing: make test installs them (scripts/test_tools.sh; "
                    f"or apt-get install -y mosquitto mosquitto-clients tcpdump)")


class Mosquitto:
    """mosquitto on a free loopback port; ``restart()`` stops it (SIGTERM: with ``persistence``, it
    saves its sessions and queued messages to disk as it exits) and starts it again on the same port."""

    def __init__(self, folder, persistence: bool = False):
        self.port = free_port()
        self.config = folder / f"mosquitto-{self.port}.conf"
        lines = [f"listener {self.port} 127.0.0.1", "allow_anonymous true", f"persistence {str(persistence).lower()}"]
        if persistence:
            store = folder / f"mosquitto-{self.port}-store"
            store.mkdir()
            # Started by root, mosquitto would become user mosquitto, who cannot write the test's folder.
            lines += [f"persistence_location {store}/", f"user {pwd.getpwuid(os.geteuid()).pw_name}"]
        self.config.write_text("\n".join(lines) + "\n")
        self.process: "subprocess.Popen | None" = None

    def listening(self) -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def start(self) -> None:
        with open(self.config.with_suffix(".log"), "ab") as log:  # a file: a pipe nobody reads could fill
            self.process = subprocess.Popen(["mosquitto", "-c", str(self.config)], stdout=subprocess.DEVNULL,
                                            stderr=log)
        wait_for(self.listening, 10, "mosquitto to listen")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture
def broker(tmp_path):
    _require(*TOOLS)
    mosquitto = Mosquitto(tmp_path)
    try:
        mosquitto.start()
        yield mosquitto.port
    finally:
        mosquitto.stop()


@pytest.fixture
def persistent_broker(tmp_path):
    """A ``Mosquitto`` with persistence on: ``restart()`` keeps its sessions and queued messages."""
    _require("mosquitto")
    mosquitto = Mosquitto(tmp_path, persistence=True)
    try:
        mosquitto.start()
        yield mosquitto
    finally:
        mosquitto.stop()


@contextlib.contextmanager
def tcpdump_on(tmp_path, port: int):
    """tcpdump capturing loopback traffic to and from ``port``: yields (pcap path, stop)."""
    pcap = tmp_path / f"loopback-{port}.pcap"
    log = tmp_path / f"tcpdump-{port}.log"
    with open(log, "wb") as err:
        process = subprocess.Popen(["tcpdump", "-i", "lo", "--immediate-mode", "-U", "-n", "-w", str(pcap),
                                    f"tcp port {port}"], stdout=subprocess.DEVNULL, stderr=err)

    def stop() -> None:
        """End the capture: tcpdump writes out what it holds and exits."""
        if process.poll() is None:
            time.sleep(0.3)  # the last acknowledgements reach it
            process.terminate()
            process.wait(10)

    try:
        wait_for(lambda: b"listening on" in log.read_bytes() or process.poll() is not None, 10, "tcpdump to start")
        if process.poll() is not None:
            reason = log.read_text(errors="replace").strip()
            if "permitted" in reason or "permission" in reason.lower():
                pytest.skip(f"capturing loopback traffic is not permitted here: {reason}")
            raise AssertionError(f"tcpdump stopped: {reason}")
        yield pcap, stop
    finally:
        stop()


@pytest.fixture
def capture_file(tmp_path, broker):
    with tcpdump_on(tmp_path, broker) as (pcap, stop):
        yield broker, pcap, stop


@pytest.fixture
def loopback_capture(tmp_path):
    """``start(port)``: tcpdump capturing loopback traffic of ``port``, as (pcap path, stop)."""
    if shutil.which("tcpdump") is None:
        pytest.fail("tcpdump missing: make test installs it (scripts/test_tools.sh; or apt-get install -y tcpdump)")
    with contextlib.ExitStack() as captures:
        yield lambda port: captures.enter_context(tcpdump_on(tmp_path, port))
