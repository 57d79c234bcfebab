"""``cmi spool``: a live MQTT broker spooled into a folder of raw MQTT stream files until stopped
(``transports/mqtt/spool.py``); the folder reads as a capture (``cmi ls FOLDER``) and as a stream."""
from __future__ import annotations

import signal
import threading
from typing import Optional

import click

from ..transports.mqtt.publish import MqttBrokerError
from ..transports.mqtt.spool import (BROKER, CLIENT_ID, ROTATE_BYTES, ROTATE_SECONDS, SESSION_EXPIRY, SPOOL, TIMEOUT,
                                     TOPIC, Spooler, SpoolFolderError, SpoolSettings)
from .commands import _examples, cli
from .exits import BROKER as BROKER_EXIT, OUTPUT, Failure

STOPPED_BY = (signal.SIGINT, signal.SIGTERM)


def _parameter(option) -> str:
    """The name click gives the option's value (an identifier: ``mqtt.rotateSeconds`` -> ``mqtt_rotateseconds``)."""
    return option.key.replace(".", "_")


def _setting(option, flag: str, metavar: str):
    meaning = option.doc.replace("With `mqtt.broker`: ", "").replace("`", "")
    return click.option(flag, _parameter(option), metavar=metavar,
                        help=f"{meaning[0].upper()}{meaning[1:]} (option {option.name}; "
                             f"default: {option.default_text().replace('`', '')})")


@cli.command("spool", short_help="Spool a live MQTT broker into a folder, losing nothing.", epilog=_examples(
    "cmi spool spool/ --broker localhost:1883 --topic 'sas/#'",
    "cmi spool /data/spool --broker mq.example.com:1883 --client-id nightly-spool --rotate-seconds 60",
    "cmi ls spool/"))
@click.argument("folder", metavar="FOLDER")
@click.option("--broker", _parameter(BROKER), required=True, metavar="HOST:PORT",
              help="The MQTT broker to subscribe to (option mqtt.broker).")
@_setting(TOPIC, "--topic", "FILTER")
@_setting(CLIENT_ID, "--client-id", "ID")
@_setting(ROTATE_SECONDS, "--rotate-seconds", "SECONDS")
@_setting(ROTATE_BYTES, "--rotate-bytes", "BYTES")
@_setting(SESSION_EXPIRY, "--session-expiry", "SECONDS")
@_setting(TIMEOUT, "--timeout", "SECONDS")
def spool_command(folder: str, **settings: Optional[str]) -> None:
    """Subscribe to a live MQTT broker (MQTT 5, QoS 1, a persistent session) and append every
    message to raw MQTT stream files in FOLDER, acknowledging each only once it is on disk, until
    Ctrl-C or SIGTERM: a message published while the spooler or the broker was down arrives when
    both are back, none is lost. Keep the client id across restarts (the default is derived from
    FOLDER): the broker keeps the session under it.

    The file being written is hidden (.000000000002-...mqtt) and moved into place, whole, after
    --rotate-seconds from its first message or at --rotate-bytes; names sort in the order written.
    Read the folder as any capture: cmi ls FOLDER, spark.read.format("cmi").load(FOLDER).

    Exit codes: 0 stopped; 2 a bad option; 3 FOLDER cannot be written (or another spooler writes
    it); 4 the broker cannot be reached, refuses the connection or the subscription."""
    given = {key.replace("_", "."): value for key, value in settings.items() if value is not None}
    spooler = Spooler(SpoolSettings.from_options(dict(given, **{SPOOL.key: folder})))
    stop = threading.Event()
    previous = {number: signal.signal(number, lambda *_: stop.set()) for number in STOPPED_BY}
    try:
        with spooler:  # subscribed when this line shows
            s = spooler.settings
            click.echo(f"spooling {s.topic!r} from {s.broker} into {folder} as client {s.client} (Ctrl-C stops)",
                       err=True)
            spooler.wait(stop)
    except MqttBrokerError as e:
        raise Failure(f"{type(e).__name__}: {e}", BROKER_EXIT) from None
    except SpoolFolderError as e:
        raise Failure(f"{type(e).__name__}: {e}", OUTPUT) from None
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    click.echo(f"stopped: {spooler.spooled} messages spooled into {len(spooler.files)} files", err=True)
