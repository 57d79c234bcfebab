"""Spooling a live broker (transports/mqtt/spool.py, ``cmi spool``): attachments published by our
writer to a real mosquitto, spooled into raw MQTT stream files, read back with
``cmi_datasource.read(folder)`` row for row; the spooler stopped, killed (SIGKILL, between fsync and
PUBACK) and restarted, the broker restarted, with nothing lost and nothing read twice.

The tests that run mosquitto are ``live`` (spark_tests/live.py); the rest need no broker."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import paho.mqtt.client as mqtt
import pyarrow as pa
import pytest
from click.testing import CliRunner

from cmi_datasource import CmiOptionError, read
from cmi_datasource.cli import cli
from cmi_datasource.engine.options import ReadOptions
from cmi_datasource.engine.write import DatasetToWrite, WriteOptions, build_messages
from cmi_datasource.transports.mqtt import packets
from cmi_datasource.transports.mqtt.publish import DISCONNECT, connect_packet, publish
from cmi_datasource.transports.mqtt.spool import SpoolFolder, Spooler, SpoolFolderError, SpoolSettings

from live import wait_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def table(name: str, rows: int) -> pa.Table:
    return pa.table({"ID": [float(i) for i in range(rows)], "NAME": [f"{name} {i % 13}" for i in range(rows)]})


def messages_of(member: str, data: pa.Table):
    return build_messages([DatasetToWrite(data, "SPOOL", member)],
                          options=WriteOptions(max_message_bytes=700, deterministic_seed=member))


def settings(folder, port: int, **more) -> SpoolSettings:
    return SpoolSettings(str(folder), f"127.0.0.1:{port}", topic="sas/#", rotate_seconds=0.3, timeout=10, **more)


def spool_holds(folder, expected) -> bool:
    """Whether the published spool files hold every attachment of ``expected`` (member -> table) whole."""
    if not any(name.endswith(".mqtt") and not name.startswith(".") for name in os.listdir(folder)):
        return False
    rows = read(str(folder), view="attachments").to_pylist()
    complete = {r["name"] for r in rows if r["complete"]}
    return all(f"SPOOL.{member}" in complete for member in expected)


def assert_read_once(folder, expected) -> None:
    for member, data in expected.items():
        assert read(str(folder), dataset=f"SPOOL.{member}").equals(data), member
    names = [r["name"] for r in read(str(folder), view="attachments").to_pylist()]
    assert sorted(names) == sorted(f"SPOOL.{m}" for m in expected)


# -- with a live broker ----------------------------------------------------------------------------

def test_published_attachments_are_spooled_and_read_back_row_for_row(tmp_path, broker):
    spool = tmp_path / "spool"
    first, second = table("first", 500), table("second", 40)
    with Spooler(settings(spool, broker, rotate_bytes=4096)) as spooler:
        sent = publish(messages_of("FIRST", first), f"127.0.0.1:{broker}", "sas/cmi")
        sent += publish(messages_of("SECOND", second), f"127.0.0.1:{broker}", "sas/other")
        wait_for(lambda: spooler.spooled == sent, 20, "every message spooled")
    files = sorted(os.listdir(spool))
    assert files == [".spool.lock"] + [os.path.basename(f) for f in spooler.files]  # nothing hidden left
    assert len(spooler.files) > 1  # rotated at 4 KiB: the first attachment spans files
    assert_read_once(spool, {"FIRST": first, "SECOND": second})
    publishes = [r for r in read(str(spool), view="messages").to_pylist() if r["mqtt_type"] == "PUBLISH"]
    assert len(publishes) == sent
    assert {r["topic"] for r in publishes} == {"sas/cmi", "sas/other"}
    assert all(r["qos"] == 1 and not r["dup"] and r["problem"] is None for r in publishes)
    assert {r["client_id"] for r in publishes} == {spooler.settings.client}


def test_messages_published_while_the_spooler_is_stopped_arrive_when_it_restarts(tmp_path, broker):
    spool, address = tmp_path / "spool", f"127.0.0.1:{broker}"
    before, during, after = table("before", 200), table("during", 300), table("after", 50)
    with Spooler(settings(spool, broker)) as spooler:
        sent = publish(messages_of("BEFORE", before), address, "sas/cmi")
        wait_for(lambda: spooler.spooled == sent, 20, "the first attachment spooled")
    publish(messages_of("DURING", during), address, "sas/cmi")  # kept by the broker, in the session
    with Spooler(settings(spool, broker)) as restarted:
        publish(messages_of("AFTER", after), address, "sas/cmi")
        wait_for(lambda: spool_holds(spool, ("DURING", "AFTER")), 20, "the session's messages spooled")
    assert restarted.spooled == len(messages_of("DURING", during)) + len(messages_of("AFTER", after))
    assert_read_once(spool, {"BEFORE": before, "DURING": during, "AFTER": after})


def test_a_redelivery_after_a_crash_before_the_acknowledgement_is_not_spooled_again(tmp_path, broker, monkeypatch):
    """Spooled but never acknowledged (a spooler that died between fsync and PUBACK): the broker sends
    every message again with DUP on the next connection; the restarted spooler finds each in the
    spool files, acknowledges it and does not spool it again (a stream would read a copy in a later
    file twice)."""
    spool, address = tmp_path / "spool", f"127.0.0.1:{broker}"
    data = table("redelivered", 120)
    sent = len(messages_of("REDELIVERED", data))
    with monkeypatch.context() as patched:
        patched.setattr(mqtt.Client, "ack", lambda self, mid, qos: mqtt.MQTTErrorCode.MQTT_ERR_SUCCESS)
        with Spooler(settings(spool, broker)) as crashing:
            publish(messages_of("REDELIVERED", data), address, "sas/cmi")
            wait_for(lambda: crashing.spooled == sent, 20, "every message on disk, none acknowledged")
    with Spooler(settings(spool, broker)) as restarted:
        wait_for(lambda: restarted.spooled == sent, 20, "the broker's redelivery spooled")
    assert restarted.redelivered == sent  # every message came again, with DUP
    rows = [r for r in read(str(spool), view="messages").to_pylist() if r["mqtt_type"] == "PUBLISH"]
    assert len(rows) == sent and not any(r["source"] in restarted.files for r in rows)
    assert_read_once(spool, {"REDELIVERED": data})
    with Spooler(settings(spool, broker)) as again:  # acknowledged this time: nothing comes again
        pass
    assert again.redelivered == 0 and again.spooled == 0


def test_a_publish_is_the_same_message_whatever_delivery_brought_it():
    from cmi_datasource.transports.mqtt import packets
    from cmi_datasource.transports.mqtt.publish import mqtt_string
    from cmi_datasource.transports.mqtt.spool import publish_identity

    def publish_bytes(topic: str, packet_id: int, payload: bytes, dup: bool) -> bytes:  # MQTT 5, section 3.3
        body = mqtt_string(topic) + packet_id.to_bytes(2, "big") + b"\x00" + payload
        return packets.packet_bytes(packets.PUBLISH, body, dup=dup, qos=1, retain=False)

    first = publish_identity(publish_bytes("sas/cmi", 7, b"payload", dup=False))
    assert publish_identity(publish_bytes("sas/cmi", 4242, b"payload", dup=True)) == first
    assert publish_identity(publish_bytes("sas/cmi", 7, b"payloaD", dup=False)) != first
    assert publish_identity(publish_bytes("sas/cmX", 7, b"payload", dup=False)) != first


def test_an_identical_republish_is_read_once(tmp_path, broker):
    spool, address = tmp_path / "spool", f"127.0.0.1:{broker}"
    data = table("twice", 100)
    with Spooler(settings(spool, broker)) as spooler:
        sent = publish(messages_of("TWICE", data), address, "sas/cmi")
        sent += publish(messages_of("TWICE", data), address, "sas/cmi")
        wait_for(lambda: spooler.spooled == sent, 20, "both copies spooled")
    assert_read_once(spool, {"TWICE": data})


def run_cmi_spool(spool, port: int, rotate_seconds: float = 0.2) -> subprocess.Popen:
    """``cmi spool`` in a process of its own, once it says it is subscribed."""
    process = subprocess.Popen([sys.executable, "-m", "cmi_datasource.cli", "spool", str(spool), "--broker",
                                f"127.0.0.1:{port}", "--topic", "sas/#", "--rotate-seconds", str(rotate_seconds),
                                "--timeout", "10"], cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT),
                               stderr=subprocess.PIPE)
    assert process.stderr is not None
    said = process.stderr.readline()  # blocks until the line (or the end, if it failed)
    assert b"Ctrl-C stops" in said, said + process.stderr.read()
    return process


def hidden_bytes(spool) -> int:
    """The size of the spool file being written (0: none)."""
    return sum(os.path.getsize(spool / name) for name in os.listdir(spool) if name.startswith(".0"))


def test_cmi_spool_killed_mid_stream_and_restarted_loses_nothing(tmp_path, broker):
    spool, address = tmp_path / "spool", f"127.0.0.1:{broker}"
    expected = {f"PART{n}": table(f"part {n}", 600) for n in range(4)}
    spooler = run_cmi_spool(spool, broker, rotate_seconds=600)  # one file, being written when it is killed

    def publish_all() -> None:
        for member, data in expected.items():
            publish(messages_of(member, data), address, "sas/cmi")
    publisher = threading.Thread(target=publish_all)
    publisher.start()
    wait_for(lambda: hidden_bytes(spool) > 8000, 20, "messages spooled")
    spooler.send_signal(signal.SIGKILL)  # while messages flow: no chance to finish its file or acknowledge
    spooler.communicate(timeout=10)
    publisher.join(30)
    left = hidden_bytes(spool)
    assert left > 8000  # what the next spooler finds and moves into place first
    restarted = run_cmi_spool(spool, broker)
    try:
        wait_for(lambda: spool_holds(spool, expected), 30, "every attachment spooled after the restart")
    finally:
        restarted.send_signal(signal.SIGTERM)
        _, err = restarted.communicate(timeout=20)
    assert restarted.returncode == 0, err
    assert b"stopped: " in err
    names = sorted(name for name in os.listdir(spool) if name.endswith(".mqtt"))
    assert names[0].startswith("000000000001-") and not [name for name in names if name.startswith(".")]
    assert os.path.getsize(spool / names[0]) >= left - 200  # cut after its last whole packet at most
    assert_read_once(spool, expected)


def test_nothing_is_lost_across_a_broker_restart(tmp_path, persistent_broker):
    mosquitto = persistent_broker
    spool, address = tmp_path / "spool", f"127.0.0.1:{mosquitto.port}"
    expected = {name.upper(): table(name, 150) for name in ("before", "queued", "reconnected")}
    with Spooler(settings(spool, mosquitto.port)):
        publish(messages_of("BEFORE", expected["BEFORE"]), address, "sas/cmi")
        wait_for(lambda: spool_holds(spool, ("BEFORE",)), 20, "the first attachment spooled")
    publish(messages_of("QUEUED", expected["QUEUED"]), address, "sas/cmi")  # queued in the session...
    mosquitto.restart()  # ...saved by the broker as it stops, loaded as it starts
    with Spooler(settings(spool, mosquitto.port)):
        wait_for(lambda: spool_holds(spool, ("QUEUED",)), 20, "the queued attachment spooled")
        mosquitto.restart()  # under a running spooler: it reconnects, resuming its session
        publish(messages_of("RECONNECTED", expected["RECONNECTED"]), address, "sas/cmi", timeout=20)
        wait_for(lambda: spool_holds(spool, ("RECONNECTED",)), 40, "the spooler reconnected and spooling")
    assert_read_once(spool, expected)


# -- without a broker --------------------------------------------------------------------------------

def test_a_spool_file_a_killed_spooler_left_is_cut_after_its_last_whole_packet_and_published(tmp_path):
    data = table("torn", 30)
    stream = tmp_path / "whole.mqtt"
    with open(stream, "wb") as out:
        from cmi_datasource.transports.mqtt.transport import MqttStreamFormat
        MqttStreamFormat().write(out, messages_of("TORN", data), client_id="spooler")
    whole = stream.read_bytes()[:-len(DISCONNECT)]
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / ".000000000007-20250102T030405Z.mqtt").write_bytes(whole + whole[-40:-3])  # a packet cut short
    (spool / ".000000000008-20250102T030500Z.mqtt").write_bytes(connect_packet("spooler") + b"\x30\x05ab")
    folder = SpoolFolder(str(spool), "spooler")
    try:
        assert folder.published == [str(spool / "000000000007-20250102T030405Z.mqtt")]
        assert sorted(os.listdir(spool)) == [".spool.lock", "000000000007-20250102T030405Z.mqtt"]  # no PUBLISH: gone
        assert (spool / "000000000007-20250102T030405Z.mqtt").read_bytes() == whole + DISCONNECT
        folder.append(packets.packet_bytes(12, b""))  # a PINGREQ: any packet begins a new file
        assert folder.rotate() == str(spool / os.path.basename(folder.published[-1]))
        assert os.path.basename(folder.published[-1]).startswith("000000000009-")  # numbered after the others
        with pytest.raises(SpoolFolderError, match="another spooler"):
            SpoolFolder(str(spool), "another")
    finally:
        folder.close()
    assert read(str(spool), dataset="SPOOL.TORN").equals(data)


def test_the_spooler_options_come_from_the_options_table_and_a_batch_read_refuses_them(tmp_path):
    given = {"mqtt.broker": "localhost:1883", "mqtt.spool": str(tmp_path), "mqtt.rotateSeconds": "2.5",
             "MQTT.TOPIC": "sas/#"}
    s = SpoolSettings.from_options(given)
    assert (s.broker, s.topic, s.rotate_seconds, s.rotate_bytes) == ("localhost:1883", "sas/#", 2.5, 64 << 20)
    assert s.client == SpoolSettings.from_options(given).client  # the same session on every restart
    with pytest.raises(CmiOptionError, match="mqtt.rotateSeconds"):
        SpoolSettings.from_options(dict(given, **{"mqtt.rotateSeconds": "soon"}))
    with pytest.raises(CmiOptionError, match="mqtt.broker"):
        SpoolSettings.from_options({"mqtt.spool": str(tmp_path)})
    with pytest.raises(CmiOptionError, match="mqtt.topics"):
        SpoolSettings.from_options(dict(given, **{"mqtt.topics": "x"}))
    with pytest.raises(CmiOptionError, match="spark.readStream"):
        ReadOptions.parse({"path": str(tmp_path), "mqtt.broker": "localhost:1883"})
    assert ReadOptions.parse({"path": str(tmp_path), "mqtt.broker": "localhost:1883"}, streaming=True)


@pytest.mark.parametrize("arguments, code, says", [
    (["--broker", "nohost"], 2, "host:port"),
    (["--broker", "127.0.0.1:1", "--timeout", "3"], 4, "cannot reach the MQTT broker at 127.0.0.1:1"),
    (["--broker", "127.0.0.1:1", "--rotate-bytes", "10"], 2, "mqtt.rotateBytes"),
])
def test_cmi_spool_exit_codes(tmp_path, arguments, code, says):
    result = CliRunner().invoke(cli, ["spool", str(tmp_path / "spool")] + arguments)
    assert result.exit_code == code, result.output
    assert says in result.output


def test_cmi_spool_exits_3_when_its_folder_cannot_be_written(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    result = CliRunner().invoke(cli, ["spool", str(blocked / "spool"), "--broker", "127.0.0.1:1"])
    assert result.exit_code == 3, result.output
    assert "SpoolFolderError: cannot spool into" in result.output
