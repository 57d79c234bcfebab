"""Spooling a live MQTT broker into a folder of raw MQTT stream files, losing nothing across restarts.

A ``Spooler`` subscribes to a topic filter with MQTT 5, QoS 1, a fixed client id and a persistent
session (clean start off, a session expiry), and acknowledges each PUBLISH only once its packet is
on disk: appended to the spool file being written, flushed and fsynced. The broker keeps every
message it has not had a PUBACK for, in the session, and sends it again, so a spooler stopped,
killed or cut off from the broker loses nothing: what it had not acknowledged comes back (with DUP
set) when it reconnects with the same client id.

The spool is a folder of raw MQTT stream files (format ``mqtt``, ``cmi_datasource.read(folder)``
reads them, as will the folder stream): each starts with a CONNECT naming the client id and MQTT 5
(the version its PUBLISH packets are read in), then the PUBLISH packets as the broker delivered
them (topic, packet id, DUP, RETAIN and MQTT 5 properties, the payload byte for byte; a topic
alias is resolved), then a DISCONNECT. The file being written is hidden (``.`` in front of its
name: readers skip it) and renamed into place, whole, when it rotates: after ``rotate_seconds``
from its first message, or at ``rotate_bytes``, and when the spooler stops. Names sort in the order
written (``000000000001-20250102T030405Z.mqtt``: a sequence number, then the UTC time it was
begun). A spooler started on a folder a killed one left behind publishes the hidden file first,
cut after its last whole packet (a packet cut short was never acknowledged: it comes again).

A message spooled but not acknowledged when the spooler died (or lost the broker) comes again with
DUP set. The spooler keeps the identities (``publish_identity``) of the last ``RECENT_PUBLISHES``
messages it spooled, read back from the newest spool files when it starts: a DUP delivery of one
of them is acknowledged and not spooled again, so a redelivery never lands in a later spool file
than its original (where a stream, reading files in micro-batches, would read it twice). A copy
spooled anyway (one older than that) is the same CorrelId and payload, which CMI assembly drops
as an exact duplicate within one read (docs/damage-and-read-modes.md#duplicates-and-incomplete-attachments).
One spooler at a time writes a folder (a lock file, ``.spool.lock``).
"""
from __future__ import annotations

import copy
import fcntl
import hashlib
import os
import re
import struct
import threading
import time
from dataclasses import dataclass
from typing import Any, BinaryIO, Dict, List, Mapping, Optional, Tuple

from ...errors import CmiError, CmiOptionError, not_one_of
from ...option_table import READ, Option, named, nonblank, seconds, whole_number
from . import packets
from .publish import (DISCONNECT, MqttBrokerError, broker_address, connect_packet, connected_client, mqtt_string,
                      parse_broker)

SUFFIX = ".mqtt"
LOCK_NAME = ".spool.lock"
# A spool file's name: its sequence number (12 digits, so names sort in order), the UTC time it
# was begun; hidden (a "." in front) while it is being written.
NAME = re.compile(r"^(\.?)(\d{12})-(\d{8}T\d{6}Z)\.mqtt$")
TOPIC_ALIAS = "TopicAlias"
GRANTED_QOS_1 = 1  # the SUBACK reason code granting QoS 1: QoS 0 (code 0) would not keep what the spooler misses
RECONNECT_DELAY_MAX = 30  # seconds between attempts to reach a broker gone away, at most
# The identities of the messages spooled last that a DUP delivery is checked against: twice the
# largest MQTT 5 Receive Maximum (65535), the most messages a broker has unacknowledged in flight
# to one connection; the unacknowledged messages of the connection before come again first.
RECENT_PUBLISHES = 2 * 65535


class SpoolFolderError(CmiError):
    """The spool folder cannot be written (the disk is full, say), or another spooler writes it."""


def _source(name: str, parse, doc: str, default=None, shown=None) -> Option:
    return Option(name, READ, parse, doc, default, shown, transport="mqtt", stream_only=True)


# The spooler's settings, as read options of the live-broker stream source (``spark.readStream``
# with ``mqtt.broker``): ``cmi spool`` and ``SpoolSettings.from_options`` take the same names.
BROKER = _source("mqtt.broker", broker_address, "With `spark.readStream`: spool the live MQTT broker at `host:port` "
                 "into the folder `mqtt.spool` and read that folder as a stream "
                 "([spooling a live broker](capture-formats.md#spooling-a-live-broker); `cmi spool` runs the "
                 "spooler alone). MQTT 5, QoS 1, a persistent session: a message is acknowledged only once it is "
                 "on disk. A batch read refuses it: read the spool folder as a path.")
SPOOL = _source("mqtt.spool", nonblank, "With `mqtt.broker`: the spool folder, where the raw MQTT stream files go "
                "(one spooler at a time per folder).")
TOPIC = _source("mqtt.topic", nonblank, "With `mqtt.broker`: the topic filter subscribed to (`+` and `#` wildcards).",
                "sas/cmi")
CLIENT_ID = _source("mqtt.clientId", nonblank, "With `mqtt.broker`: the client identifier, the broker's name for the "
                    "persistent session: keep it across restarts.", "", "`cmi-spool-` and a hash of the spool folder")
ROTATE_SECONDS = _source("mqtt.rotateSeconds", seconds, "With `mqtt.broker`: a spool file is closed and moved into "
                         "place this many seconds after its first message (how long a message may wait to be read).",
                         10.0, "10")
ROTATE_BYTES = _source("mqtt.rotateBytes", whole_number(1024), "With `mqtt.broker`: a spool file is closed and moved "
                       "into place once it holds this many bytes.", 64 << 20, "67108864 (64 MiB)")
SESSION_EXPIRY = _source("mqtt.sessionExpiry", whole_number(1, 0xFFFFFFFF), "With `mqtt.broker`: seconds the broker "
                         "keeps the session, and the messages for it, while the spooler is away (4294967295: for "
                         "ever).", 7 * 24 * 3600, "604800 (7 days)")
TIMEOUT = _source("mqtt.timeout", seconds, "With `mqtt.broker`: seconds to wait for the broker to answer the "
                  "connection and the subscription.", 30.0, "30")
# Each option and the SpoolSettings field it gives.
SPOOL_SETTINGS = ((BROKER, "broker"), (SPOOL, "folder"), (TOPIC, "topic"), (CLIENT_ID, "client_id"),
                  (ROTATE_SECONDS, "rotate_seconds"), (ROTATE_BYTES, "rotate_bytes"),
                  (SESSION_EXPIRY, "session_expiry"), (TIMEOUT, "timeout"))
SPOOL_OPTIONS = tuple(option for option, _ in SPOOL_SETTINGS)


@dataclass(frozen=True)
class SpoolSettings:
    """What a spooler does; ``from_options`` reads them from options named as in the options table."""

    folder: str
    broker: str  # host:port
    topic: str = TOPIC.default  # a topic filter: + and # wildcards
    client_id: str = CLIENT_ID.default  # "": derived from the folder (``default_client_id``), the same on restarts
    rotate_seconds: float = ROTATE_SECONDS.default
    rotate_bytes: int = ROTATE_BYTES.default
    session_expiry: int = SESSION_EXPIRY.default
    timeout: float = TIMEOUT.default

    def __post_init__(self) -> None:
        parse_broker(self.broker)
        if not self.folder:
            raise CmiOptionError(f"option {SPOOL.name} must name the spool folder")

    @property
    def client(self) -> str:
        return self.client_id or default_client_id(self.folder)

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> "SpoolSettings":
        """The settings ``options`` give (``mqtt.broker``, ``mqtt.spool``, ``mqtt.topic``, ...: the
        names of ``SPOOL_OPTIONS``, in any case); another name is an error listing them."""
        given = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
        for key in given:
            if named(SPOOL_OPTIONS, key) is None:
                raise not_one_of("spooler option", key, [o.name for o in SPOOL_OPTIONS])
        for option in (BROKER, SPOOL):
            if option.key not in given:
                raise CmiOptionError(f"option {option.name} is needed to spool: {option.doc}")
        return cls(**{field: option.value(given) for option, field in SPOOL_SETTINGS})


def default_client_id(folder: str) -> str:
    """The client id of a folder's spooler when none is given: the same for the same folder, so a
    restarted spooler resumes its session."""
    return "cmi-spool-" + hashlib.sha256(os.path.realpath(folder).encode()).hexdigest()[:16]


def publish_packet(message) -> bytes:
    """A paho ``MQTTMessage`` as the PUBLISH packet bytes the raw stream reader reads: topic, packet
    id, its MQTT 5 properties (a topic alias left out, the topic given in full) and the payload."""
    properties = message.properties
    if properties is not None and hasattr(properties, TOPIC_ALIAS):
        properties = copy.copy(properties)
        delattr(properties, TOPIC_ALIAS)
    body = mqtt_string(message.topic)
    if message.qos:
        body += struct.pack(">H", message.mid)
    body += properties.pack() if properties is not None else b"\x00"
    return packets.packet_bytes(packets.PUBLISH, body + bytes(message.payload), dup=bool(message.dup),
                                qos=message.qos, retain=bool(message.retain))


# What a broker changes each time it delivers a message (MQTT 5, 3.3.2.3.3 and 3.3.2.3.4): the
# expiry it counts down, the alias it may give the topic.
_PER_DELIVERY = ("MessageExpiryInterval", TOPIC_ALIAS)


def publish_identity(packet: bytes) -> bytes:
    """What one PUBLISH is, whatever delivery brought it: a digest of its MQTT 5 packet without
    what belongs to the delivery: the DUP flag, the packet id and ``_PER_DELIVERY``'s properties."""
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties

    framed = packets.frame_packet(packet, 0)
    topic_end = framed.body_start + 2 + struct.unpack_from(">H", packet, framed.body_start)[0]
    body_from = topic_end + (2 if framed.qos else 0)
    digest = hashlib.blake2b(bytes([packet[0] & ~0x08 & 0xFF]), digest_size=16)
    digest.update(memoryview(packet)[framed.body_start:topic_end])
    properties = Properties(PacketTypes.PUBLISH)
    try:
        _, length = properties.unpack(packet[body_from:framed.end])
    except Exception:  # noqa: BLE001 - not our spooler's (paho's parser raises several kinds): taken as it is
        digest.update(memoryview(packet)[body_from:framed.end])
        return digest.digest()
    for name in _PER_DELIVERY:
        if hasattr(properties, name):
            delattr(properties, name)
    digest.update(properties.pack())
    digest.update(memoryview(packet)[body_from + length:framed.end])
    return digest.digest()


class SpoolFolder:
    """The files of one spool folder, written by one spooler (it holds the folder's lock):
    ``append`` packets to the hidden file being written, ``sync`` them to disk, ``rotate`` the
    file into place. Not thread-safe: the ``Spooler`` serialises its calls."""

    def __init__(self, folder: str, client_id: str):
        self.folder, self.client_id = folder, client_id
        try:
            os.makedirs(folder, exist_ok=True)
            self._lock = open(os.path.join(folder, LOCK_NAME), "a")
        except OSError as e:
            raise SpoolFolderError(f"cannot spool into {folder}: {e.strerror or e}") from None
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock.close()
            raise SpoolFolderError(f"another spooler is writing {folder} (it holds {LOCK_NAME})") from None
        self._out: Optional[BinaryIO] = None
        self._hidden = ""
        self.begun = 0.0  # time.monotonic() when the file being written got its first packet
        self.written = 0  # bytes in the file being written
        self.published: List[str] = []  # the files this spooler moved into place, in order
        self._next = max((int(m.group(2)) for m in map(NAME.match, os.listdir(folder)) if m), default=0) + 1
        self._recover()

    def _recover(self) -> None:
        """Publish what a spooler that died left in its hidden file: the whole packets (those it may
        have acknowledged); a file holding no PUBLISH is removed."""
        for name in sorted(os.listdir(self.folder)):
            match = NAME.match(name)
            if not match or not match.group(1):
                continue
            path = os.path.join(self.folder, name)
            with open(path, "r+b") as f:
                data = f.read()
                from .streams import framed, whole_packets
                end = whole_packets(data)
                if not any(p.type == packets.PUBLISH for p in framed(data[:end])):
                    os.remove(path)
                    continue
                f.truncate(end)
                f.seek(end)
                f.write(DISCONNECT)
                f.flush()
                os.fsync(f.fileno())
            self._publish(path)

    @property
    def writing(self) -> bool:
        return self._out is not None

    def last_publishes(self, most: int) -> List[bytes]:
        """The identities of the last ``most`` PUBLISH packets of the spool files in place, oldest first."""
        from .streams import framed
        found: List[bytes] = []
        names = sorted((n for n in os.listdir(self.folder) if (m := NAME.match(n)) and not m.group(1)), reverse=True)
        for name in names:
            with open(os.path.join(self.folder, name), "rb") as f:
                data = f.read()
            ids = [publish_identity(data[p.start:p.end]) for p in framed(data) if p.type == packets.PUBLISH]
            found[:0] = ids
            if len(found) >= most:
                break
        return found[-most:] if most else []

    def append(self, packet: bytes) -> None:
        if self._out is None:
            self._begin()
        assert self._out is not None
        self._out.write(packet)
        self.written += len(packet)

    def _begin(self) -> None:
        name = f".{self._next:012d}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}{SUFFIX}"
        self._next += 1
        self._hidden = os.path.join(self.folder, name)
        self._out = open(self._hidden, "xb")
        _sync_directory(self.folder)  # the file is found after a crash: what it holds was acknowledged
        self._out.write(connect_packet(self.client_id))
        self.begun, self.written = time.monotonic(), 0

    def sync(self) -> None:
        """Everything appended is on disk when this returns."""
        if self._out is not None:
            self._out.flush()
            os.fsync(self._out.fileno())

    def rotate(self) -> Optional[str]:
        """The file being written, ended (DISCONNECT), synced and moved into place under its
        name without the dot; None when nothing is being written."""
        if self._out is None:
            return None
        self._out.write(DISCONNECT)
        self.sync()
        self._out.close()
        self._out = None
        return self._publish(self._hidden)

    def _publish(self, hidden: str) -> str:
        final = os.path.join(self.folder, os.path.basename(hidden)[1:])
        os.rename(hidden, final)
        _sync_directory(self.folder)
        self.published.append(final)
        return final

    def close(self) -> None:
        """Rotate what is being written and let go of the folder."""
        try:
            self.rotate()
        finally:
            self._lock.close()


def _sync_directory(folder: str) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Spooler:
    """Spools a broker's messages into a folder (module docstring). ``start()`` connects, subscribes
    and returns once the subscription holds; ``stop()`` syncs, acknowledges, moves the last file
    into place and disconnects, leaving the session at the broker to collect what comes next.
    ``run(stop_event)`` does both around ``wait(stop_event)``. A context manager.

    Each PUBLISH is appended by paho's network thread (``_received``); a thread of its own
    (``_commit_loop``) syncs what was appended, then acknowledges those messages in the order
    they came (as MQTT requires): messages arriving during one fsync share the next (a group
    commit), so the broker's window of unacknowledged messages keeps the disk busy."""

    def __init__(self, settings: SpoolSettings):
        self.settings = settings
        self.spooled = 0  # messages acknowledged after they were on disk
        self._state = threading.Condition()
        self._pending: List[Tuple[int, int]] = []  # (connection, packet id) appended, not yet synced
        self._connection = 0  # counts connections: a packet id acknowledges on the connection it came on
        self._stopping = False
        self._error: Optional[BaseException] = None
        self._folder: Optional[SpoolFolder] = None
        self._client: Any = None
        self._committer: Optional[threading.Thread] = None
        self._subscribed = threading.Event()
        self._refused: Optional[str] = None
        self._published: List[str] = []
        self._recent: Dict[bytes, None] = {}  # identities of the messages spooled last, oldest first
        self.redelivered = 0  # DUP deliveries of messages already spooled: acknowledged, not spooled again

    @property
    def files(self) -> List[str]:
        """The spool files this spooler moved into place, in order."""
        return list(self._folder.published if self._folder is not None else self._published)

    def __enter__(self) -> "Spooler":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> "Spooler":
        s = self.settings
        self._folder = SpoolFolder(s.folder, s.client)
        try:
            self._recent = dict.fromkeys(self._folder.last_publishes(RECENT_PUBLISHES))
        except OSError as e:
            self._folder.close()
            raise SpoolFolderError(f"cannot read the spool files in {s.folder}: {e.strerror or e}") from None
        try:
            # The callbacks are in place before the connection: a resumed session's messages come at once.
            self._client = connected_client(s.broker, s.client, s.timeout, on_connect=self._connected,
                                            clean_start=False, session_expiry=s.session_expiry, manual_ack=True,
                                            setup=self._set_up)
        except BaseException:
            self._folder.close()
            raise
        self._committer = threading.Thread(target=self._commit_loop, name="cmi-spool-commit", daemon=True)
        self._committer.start()
        if not self._subscribed.wait(s.timeout) or self._refused:
            self.stop()
            raise MqttBrokerError(f"the MQTT broker at {s.broker} did not grant the subscription to {s.topic!r} "
                           f"with QoS 1: {self._refused or 'no answer in time'}")
        return self

    def run(self, stop: threading.Event) -> None:
        """Spool until ``stop`` is set (or spooling fails: the error is raised, after stopping)."""
        with self:
            self.wait(stop)

    def wait(self, stop: threading.Event) -> None:
        """Return once ``stop`` is set or spooling failed (``stop()`` raises the error)."""
        while not stop.wait(0.2) and self._error is None:
            pass

    def stop(self) -> None:
        with self._state:
            self._stopping = True
            self._state.notify_all()
        if self._committer is not None:
            self._committer.join()
        if self._client is not None:
            self._client.disconnect()
            self._client.loop_stop()
            self._client = None
        if self._folder is not None:
            folder, self._folder = self._folder, None
            self._published = folder.published
            try:
                folder.close()
            except OSError as e:
                self._error = self._error or e
        if self._error is not None:
            error, self._error = self._error, None
            if isinstance(error, OSError):
                raise SpoolFolderError(f"cannot spool into {self.settings.folder}: {error}") from error
            raise error

    def _set_up(self, client) -> None:
        client.on_message = self._received
        client.on_subscribe = self._subscription_answered
        client.reconnect_delay_set(1, RECONNECT_DELAY_MAX)

    # -- in paho's network thread -----------------------------------------------------------------

    def _connected(self, client, session_present: bool) -> None:
        from paho.mqtt.subscribeoptions import SubscribeOptions

        with self._state:
            self._connection += 1
        # Retained messages only when the subscription is new: a resumed session has had them.
        client.subscribe(self.settings.topic, options=SubscribeOptions(qos=1, retainHandling=1))

    def _subscription_answered(self, client, userdata, mid, reason_codes, properties) -> None:
        refused = [str(code) for code in reason_codes if code.value != GRANTED_QOS_1]
        if refused and not self._subscribed.is_set():
            self._refused = ", ".join(refused)
        self._subscribed.set()

    def _received(self, client, userdata, message) -> None:
        with self._state:
            if self._stopping:
                return  # not acknowledged: the broker keeps it for the next session
            try:
                packet = publish_packet(message)
                identity = publish_identity(packet)
                if message.dup and identity in self._recent:
                    self.redelivered += 1  # on disk already: acknowledged with the next sync, not spooled again
                else:
                    assert self._folder is not None
                    self._folder.append(packet)
                    self._remember(identity)
            except BaseException as e:  # a full disk, say: nothing more is acknowledged
                self._error, self._stopping = e, True
                self._state.notify_all()
                return
            if message.qos:
                self._pending.append((self._connection, message.mid))
            self._state.notify_all()

    def _remember(self, identity: bytes) -> None:
        self._recent.pop(identity, None)
        self._recent[identity] = None
        if len(self._recent) > RECENT_PUBLISHES:
            del self._recent[next(iter(self._recent))]

    # -- in the commit thread -----------------------------------------------------------------------

    def _commit_loop(self) -> None:
        folder = self._folder
        assert folder is not None
        rotate_seconds = self.settings.rotate_seconds
        while True:
            with self._state:
                while not (self._pending or self._stopping or self._rotation_due(folder)):
                    wait = rotate_seconds - (time.monotonic() - folder.begun) if folder.writing else None
                    self._state.wait(wait)
                if self._error is not None:
                    return
                try:
                    folder.sync()
                    if self._stopping or self._rotation_due(folder):
                        folder.rotate()
                except BaseException as e:
                    self._error, self._stopping = e, True
                    return
                pending, self._pending = self._pending, []
                connection, stopping = self._connection, self._stopping
            # On disk: acknowledged, in the order received. A packet id of an earlier connection is not
            # acknowledged: the broker sends that message again on this one (DUP: not spooled again).
            for came_on, mid in pending:
                if came_on == connection:
                    self._client.ack(mid, 1)
                    self.spooled += 1
            if stopping:
                return

    def _rotation_due(self, folder: SpoolFolder) -> bool:
        return folder.writing and (time.monotonic() - folder.begun >= self.settings.rotate_seconds
                                   or folder.written >= self.settings.rotate_bytes)


def spool(settings: SpoolSettings, stop: threading.Event) -> Spooler:
    """Spool as ``settings`` say until ``stop`` is set; returns the spooler (its ``spooled`` count, its ``files``)."""
    spooler = Spooler(settings)
    spooler.run(stop)
    return spooler
