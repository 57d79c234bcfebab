"""The fuzz targets: one table, name -> (function taking bytes, seeds), shared by the atheris
harness (``fuzz/harness.py``), ``make fuzz`` (``fuzz/run.py``) and the hypothesis tests
(``spark_tests/unit/test_fuzz_parsers.py``).

A target's function feeds its bytes to one parser through the project's own entry points.
Only ``CmiError`` may escape it; anything else (IndexError, struct.error, UnicodeError, ...)
is a bug, and so is a peak of traced memory above ``memory_bound(len(data))``: a declared
length must never drive an allocation (``run_checked``).

Seeds come from ``sample_queues/`` at run time: whole files for the file-level targets,
payloads extracted with the project's API (``Capture.open``) for the payload-level ones, and
re-framed in the other capture formats (binary MQGET, amqsbcg, pcap) by the project's writers.
"""
from __future__ import annotations

import functools
import os
import struct
import tempfile
import tracemalloc
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(ROOT, "sample_queues")

# Memory: a target may hold this many times its input, plus a constant (tables, codecs, caches).
MEMORY_FACTOR = 64
MEMORY_CONSTANT = 16 << 20

# Payload-level targets take several messages in one input: a small descriptor, then the
# payloads separated by this line (unlikely inside real payloads, easy for a mutator to keep).
MESSAGE_SEPARATOR = b"\n--cmi-fuzz-message--\n"
# encoding, ccsid (big-endian ints), then a flags byte: bit 0 8-byte longs, bit 1 strings not
# NUL-terminated, bit 2 text file / temporal types off, bit 3 SAS times as times of day (not
# intervals), bits 4-7 batch rows - 1.
PAYLOAD_HEAD = struct.Struct(">iiB")

SOURCE = "fuzz.input"


class MemoryBoundExceeded(Exception):
    """A target's traced memory peak passed ``memory_bound`` of its input's size (a bug)."""


def memory_bound(size: int, constant: int = MEMORY_CONSTANT) -> int:
    return MEMORY_FACTOR * size + constant


@dataclass(frozen=True)
class Target:
    name: str
    run: Callable[[bytes], None]
    seeds: Callable[[], List[bytes]]
    description: str
    memory_constant: int = MEMORY_CONSTANT  # the bound's constant part (see memory_bound)
    # False: the target bounds its memory itself (the whole-read targets read in a child
    # process under RLIMIT_AS), so its input is run without tracemalloc.
    traced: bool = True
    timeout: Optional[int] = None  # libFuzzer's -timeout for one input, when not run.py's --timeout
    prepare: Optional[Callable[[], None]] = None  # the harness's warm-up instead of running every seed
    # atheris' custom mutator (data, max_size, seed) -> bytes, when the target mutates its own way
    mutate: Optional[Callable[[bytes, int, int], bytes]] = None


# -- helpers ---------------------------------------------------------------------------------------

_TEMP = {"dir": None}


def temp_file(data: bytes, name: str = "capture") -> str:
    """``data`` written to a file of this process's temporary directory (overwritten each call)."""
    if _TEMP["dir"] is None:
        _TEMP["dir"] = tempfile.mkdtemp(prefix="cmi-fuzz-")
    path = os.path.join(_TEMP["dir"], name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def sample_bytes(*suffixes: str) -> List[bytes]:
    out = []
    for name in sorted(os.listdir(SAMPLES)):
        if not suffixes or name.endswith(suffixes):
            with open(os.path.join(SAMPLES, name), "rb") as f:
                out.append(f.read())
    return out


def sample_paths(*suffixes: str) -> List[str]:
    return [os.path.join(SAMPLES, n) for n in sorted(os.listdir(SAMPLES)) if not suffixes or n.endswith(suffixes)]


@functools.lru_cache(maxsize=None)
def _mq_pairs() -> Tuple[Tuple[object, bytes], ...]:
    """(MQMD, raw payload) of every message of the dmpmqmsg samples, MQ headers not removed."""
    from cmi_datasource.transports.mq import dmpmqmsg
    from cmi_datasource.transports.mq.message import mqmd_of
    pairs = []
    for data in sample_bytes(".dmp"):
        for m in dmpmqmsg.parse_dump(data, SOURCE):
            if mqmd_of(m) is not None:
                pairs.append((mqmd_of(m), m.payload))
    return tuple(pairs)


@functools.lru_cache(maxsize=None)
def _sample_captures():
    from cmi_datasource import Capture
    return [Capture.open(p, use_index_cache=False) for p in sample_paths(".dmp", ".rv", ".mqtt", ".txt")]


def payload_input(encoding: int, ccsid: int, payloads: Sequence[bytes], flags: int = 0) -> bytes:
    return PAYLOAD_HEAD.pack(encoding, ccsid, flags) + MESSAGE_SEPARATOR.join(payloads)


def parse_payload_input(data: bytes):
    """(encoding, ccsid, flags, payloads) of a payload-level input, or None when too short."""
    if len(data) < PAYLOAD_HEAD.size:
        return None
    encoding, ccsid, flags = PAYLOAD_HEAD.unpack_from(data)
    return encoding, ccsid, flags, data[PAYLOAD_HEAD.size:].split(MESSAGE_SEPARATOR)


def _messages(encoding: int, ccsid: int, payloads: Sequence[bytes], msg_type: int = 100001):
    from cmi_datasource.messages import Descriptor, Origin, PhysicalMessage
    out, at = [], 0
    for i, p in enumerate(payloads):
        out.append(PhysicalMessage(Descriptor(msg_type, bytes(24), encoding, ccsid), p,
                                   Origin(SOURCE, i, at, at + len(p))))
        at += len(p) + len(MESSAGE_SEPARATOR)
    return out


def _wire(encoding: int, flags: int):
    from cmi_datasource.cmi.wire import WireFormat
    from cmi_datasource.encoding import integer_order
    return WireFormat(integer_order(encoding), 8 if flags & 1 else 4, not flags & 2)


def _consume(iterable: Iterable) -> list:
    return list(iterable)


# -- MQ capture formats ----------------------------------------------------------------------------


def _parse_format(name: str, data: bytes) -> list:
    from cmi_datasource.transports import capture_format
    fmt = capture_format(name)
    messages = list(fmt.parse(data, SOURCE))
    for m in messages:
        fmt.transport.message_row(m)
    joined, _ = fmt.transport.logical_messages(messages)
    for m in joined:
        fmt.transport.message_row(m)
    return messages


def _bulk_spans(name: str, data: bytes, raw_parse) -> None:
    """A partition's fast path (``payload_pieces``) over the spans the parse found: the payloads
    it decodes must be the parse's, byte for byte."""
    from cmi_datasource.errors import CmiError
    from cmi_datasource.transports import capture_format
    try:
        raw = list(raw_parse(data, SOURCE))
    except CmiError:
        return
    if not raw:
        return
    path = temp_file(data, name)
    spans = [(path,) + m.span[1:] for m in raw]
    heads = [4] * len(spans)
    got: List[bytes] = []
    for piece in capture_format(name).payload_pieces(spans, heads, room=8):
        for i in range(len(piece.spans)):
            got.append(bytes(piece.head_of(i)) + bytes(piece.data_of(i)))
    want = [m.payload for m in raw]
    if got != want:
        bad = next((i for i, (g, w) in enumerate(zip(got, want)) if g != w), min(len(got), len(want)))
        raise AssertionError(f"{name} bulk decode differs from the parse at message {bad + 1} "
                             f"({len(got)} payloads decoded, {len(want)} parsed)")


def _parsed_dump(data: bytes, walk: bool) -> Tuple[list, Optional[tuple]]:
    """The messages ``parse_dump`` gives and its error (type, text, location), or None."""
    from cmi_datasource.errors import CmiError
    from cmi_datasource.transports.mq import dmpmqmsg
    found: list = []
    try:
        found.extend(dmpmqmsg.parse_dump(data, SOURCE, walk=walk))
    except CmiError as e:
        return found, (type(e), str(e), e.location)
    return found, None


def dmpmqmsg_target(data: bytes) -> None:
    from cmi_datasource.transports.mq import dmpmqmsg
    _parse_format("dmpmqmsg", data)
    _bulk_spans("dmpmqmsg", data, dmpmqmsg.parse_dump)
    # The C walker over plain records against the line parser alone: the same messages and errors.
    if _parsed_dump(data, walk=True) != _parsed_dump(data, walk=False):
        raise AssertionError("dmpmqmsg: the C walker over plain records and the line parser disagree")


def amqsbcg_target(data: bytes) -> None:
    from cmi_datasource.transports.mq import amqsbcg
    _parse_format("amqsbcg", data)
    _bulk_spans("amqsbcg", data, amqsbcg.parse_browse)


def mqget_target(data: bytes) -> None:
    from cmi_datasource.transports.mq import mqget
    _parse_format("mqget", data)
    _bulk_spans("mqget", data, mqget.parse_capture)


def dmpmqmsg_seeds() -> List[bytes]:
    return sample_bytes(".dmp")


def amqsbcg_seeds() -> List[bytes]:
    import io
    from cmi_datasource.transports.mq.amqsbcg import write_browse
    seeds = sample_bytes(".txt")
    pairs = _mq_pairs()
    for size in (None, 64):  # whole messages, and cut by a small browse buffer
        out = io.BytesIO()
        write_browse(out, pairs[:8], buffer_bytes=size)
        seeds.append(out.getvalue())
    return seeds


def mqget_seeds() -> List[bytes]:
    import io
    from cmi_datasource.layout import BIG, LITTLE
    from cmi_datasource.transports.mq.mqget import write_capture
    pairs = _mq_pairs()
    seeds = []
    for order, codec, chosen in ((LITTLE, "latin-1", pairs[:10]), (BIG, "cp037", pairs[10:20]),
                                 (LITTLE, "latin-1", pairs[20:])):
        out = io.BytesIO()
        write_capture(out, chosen, order, codec)
        seeds.append(out.getvalue())
    return seeds


# -- the MQ header chain and segments ---------------------------------------------------------------


def mq_headers_target(data: bytes) -> None:
    """MQGET records (MQMD + length + data) whose data starts with MQ headers: each message's
    header chain walked (``envelope.unwrap``), segments joined, the messages view's columns."""
    from cmi_datasource.transports.mq import mqget
    from cmi_datasource.transports.mq.envelope import unwrap
    from cmi_datasource.transports.mq.segments import join_segments
    from cmi_datasource.transports.mq.transport import TRANSPORT
    messages = []
    for m in mqget.parse_capture(data, SOURCE):
        messages.append(unwrap(m))
        TRANSPORT.message_row(messages[-1])
    joined, _ = join_segments(messages)
    for m in joined:
        TRANSPORT.message_row(m)


def mq_headers_seeds() -> List[bytes]:
    import dataclasses
    import io
    from cmi_datasource.layout import LITTLE
    from cmi_datasource.transports.mq.headers import MQDLH, MQH_COMMON, MQMDE, MQRFH2, MQXQH
    from cmi_datasource.transports.mq.mqget import write_capture
    from cmi_datasource.transports.mq.mqmd import MQMF_LAST_SEGMENT, MQMF_SEGMENT, descriptor_to_bytes
    pairs = _mq_pairs()
    mqmd, payload = pairs[2]
    fmt = mqmd.format.encode("latin-1")

    def mde(following: bytes, **values) -> bytes:
        return MQMDE.pack({"format": following, **values}, LITTLE)

    def rfh2(following: bytes) -> bytes:
        folders = b"".join(struct.pack("<i", len(f)) + f for f in (b"<mcd><Msd>jms_text</Msd></mcd>  ",
                                                                   b"<usr><a>1</a></usr>"))
        return MQRFH2.pack({"struc_length": MQRFH2.size + len(folders), "format": following,
                            "ccsid": 1208, "encoding": 546}, LITTLE) + folders

    def xqh(inner) -> bytes:
        return MQXQH.pack({"remote_q_name": b"REMOTE.Q".ljust(48), "remote_q_mgr_name": b"QM2".ljust(48)},
                          LITTLE) + descriptor_to_bytes(dataclasses.replace(inner, version=1), LITTLE, "latin-1")

    def dlh(following: bytes) -> bytes:
        return MQDLH.pack({"reason": 2085, "dest_q_name": b"GONE.Q".ljust(48), "dest_q_mgr_name": b"QM".ljust(48),
                           "format": following}, LITTLE)

    def other(following: bytes) -> bytes:
        return MQH_COMMON.pack({"struc_id": b"CIH ", "struc_length": MQH_COMMON.size + 8, "format": following},
                               LITTLE) + bytes(8)

    chains = [
        ("MQHMDE  ", mde(fmt) + payload),
        ("MQHRF2  ", rfh2(fmt) + payload),
        ("MQXMIT  ", xqh(dataclasses.replace(mqmd, format="MQHRF2  ")) + rfh2(fmt) + payload),
        ("MQDEAD  ", dlh(b"MQHMDE  ") + mde(fmt, msg_flags=MQMF_LAST_SEGMENT | MQMF_SEGMENT) + payload),
        ("MQHCIH  ", other(fmt) + payload),
    ]
    seeds = []
    for outer_format, data in chains:
        out = io.BytesIO()
        write_capture(out, [(dataclasses.replace(mqmd, version=2, format=outer_format), data)])
        seeds.append(out.getvalue())
    # One message in three segments, captured out of order.
    group = bytes(range(24))
    pieces = [(0, payload[:10], MQMF_SEGMENT), (10, payload[10:20], MQMF_SEGMENT),
              (20, payload[20:], MQMF_SEGMENT | MQMF_LAST_SEGMENT)]
    out = io.BytesIO()
    write_capture(out, [(dataclasses.replace(mqmd, version=2, group_id=group, offset=o, msg_flags=f), p)
                        for o, p, f in reversed(pieces)])
    seeds.append(out.getvalue())
    return seeds


# -- CMI records -----------------------------------------------------------------------------------


def cmi_records_target(data: bytes) -> None:
    """The attachment header (``parse_header``, every wire convention), then every record table
    read through ``FieldReader`` until the bytes run out."""
    from cmi_datasource.charsets import CharsetPolicy
    from cmi_datasource.cmi.header import parse_header
    from cmi_datasource.cmi.records import (ATTACHMENT_ENTRY, DATASET_DEFINITION, FILE_PROLOGUE, HEADER,
                                            VARIABLE_DEFINITION, read_record)
    from cmi_datasource.cmi.wire import FieldReader
    from cmi_datasource.errors import CmiError, Location
    parsed = parse_payload_input(data)
    if parsed is None:
        return
    encoding, ccsid, flags, payloads = parsed
    from cmi_datasource.encoding import integer_order
    try:
        codepage = CharsetPolicy().code_page_for(ccsid)
    except LookupError:
        codepage = CharsetPolicy().code_page_for(1208)
    wire = _wire(encoding, flags)
    for payload in payloads:
        try:
            parse_header(payload, integer_order(encoding), codepage, Location(SOURCE))
        except CmiError:
            pass
        for table in (HEADER, ATTACHMENT_ENTRY, DATASET_DEFINITION, VARIABLE_DEFINITION, FILE_PROLOGUE):
            reader = FieldReader(payload, wire, Location(SOURCE).at_payload)
            try:
                while reader.remaining:
                    read_record(reader, table)
            except CmiError:
                pass


def cmi_records_seeds() -> List[bytes]:
    seeds = []
    for capture in _sample_captures():
        for att in capture.attachments:
            header = capture.full(att.header_message)
            d = header.descriptor
            seeds.append(payload_input(d.encoding, d.ccsid, [header.payload]))
            if att.complete:
                messages = [capture.full(m) for m in att.ordered_messages()[:2]]
                seeds.append(payload_input(d.encoding, d.ccsid, [m.payload[4:] for m in messages]))
    return _unique(seeds)


# -- SAS dataset and external file payloads ----------------------------------------------------------


def sas_dataset_target(data: bytes) -> None:
    """The sequenced messages of a dataset attachment: ``read_layout``, then every observation
    decoded into Arrow batches."""
    from cmi_datasource.charsets import CharsetPolicy
    from cmi_datasource.cmi.assembly import message_code_page
    from cmi_datasource.payload.sas_dataset import (TIME_AS_INTERVAL, TIME_AS_TIME_OF_DAY, TemporalTypes,
                                                    arrow_schema, chunks_of_parts, observation_batches,
                                                    read_layout)
    parsed = parse_payload_input(data)
    if parsed is None:
        return
    encoding, ccsid, flags, payloads = parsed
    charsets = CharsetPolicy()
    messages = _messages(encoding, ccsid, payloads)
    try:
        wire = _wire(encoding, flags)
    except ValueError:
        from cmi_datasource.cmi.wire import WireFormat
        wire = WireFormat()
    layout, stream = read_layout(messages, wire, lambda m: message_code_page(m, charsets))
    temporal = TemporalTypes(not flags & 4, TIME_AS_TIME_OF_DAY if flags & 8 else TIME_AS_INTERVAL)
    arrow_schema(layout, temporal)
    if stream is None:
        return
    obslen = layout.definition.obs_length
    batch_rows = (flags >> 4) + 1
    codepage = message_code_page(messages[0], charsets)
    chunks = chunks_of_parts(stream.parts(), obslen, batch_rows * obslen)
    _consume(observation_batches(layout, chunks, stream.locate, codepage, batch_rows, temporal))


def external_file_target(data: bytes) -> None:
    from cmi_datasource.charsets import CharsetPolicy
    from cmi_datasource.cmi.assembly import message_code_page
    from cmi_datasource.payload.external_file import read_external_file
    parsed = parse_payload_input(data)
    if parsed is None:
        return
    encoding, ccsid, flags, payloads = parsed
    messages = _messages(encoding, ccsid, payloads)
    try:
        wire = _wire(encoding, flags)
    except ValueError:
        from cmi_datasource.cmi.wire import WireFormat
        wire = WireFormat()
    f = read_external_file(messages, wire, bool(flags & 4))
    _ = f.content  # joining the records must raise only typed errors
    f.text(message_code_page(messages[0], CharsetPolicy()), messages[0].location())


def _attachment_seeds(dataset: bool) -> List[bytes]:
    from cmi_datasource.cmi.header import ATTACHMENT_DATASET, ATTACHMENT_TEXT_FILE
    seeds = []
    for capture in _sample_captures():
        for att in capture.attachments:
            if not att.complete or (att.entry.attachment_type == ATTACHMENT_DATASET) != dataset:
                continue
            messages = [capture.full(m) for m in att.ordered_messages()]
            d = messages[0].descriptor
            flags = (8 if att.header.wire.long_size == 8 else 0) | (0 if att.header.wire.terminated else 2)
            if not dataset and att.entry.attachment_type == ATTACHMENT_TEXT_FILE:
                flags |= 4
            if dataset:
                flags |= 0x30  # four rows a batch
            seeds.append(payload_input(d.encoding, d.ccsid, [m.payload for m in messages], flags))
    return _unique(seeds)


def _unique(seeds: List[bytes]) -> List[bytes]:
    return list(dict.fromkeys(seeds))


# -- TIB/RV, MQTT, SAP DB ---------------------------------------------------------------------------


def _reread_each(fmt, data: bytes, messages, rereading_parse=None) -> None:
    """Each message parsed again alone from its span, as a partition re-reads it, and rebuilt
    with the hint planning kept."""
    from cmi_datasource.transports.base import parse_span
    parse = rereading_parse or fmt.parse
    for m in messages:
        found = parse_span(parse, data[m.file_offset:m.file_end], m.span)
        if m.reread_hint is not None:
            fmt.transport.rebuild([found], m.reread_hint)


def tibrv_target(data: bytes) -> None:
    from cmi_datasource.transports import capture_format
    fmt = capture_format("tibrv")
    messages = _parse_format("tibrv", data)
    for m in messages:
        fmt.transport.message_values(m)
    _reread_each(fmt, data, messages)


def mqtt_target(data: bytes) -> None:
    import functools as ft
    from cmi_datasource.transports import capture_format
    fmt = capture_format("mqtt")
    messages = _parse_format("mqtt", data)
    _reread_each(fmt, data, messages, ft.partial(fmt._parse, rereading=True))


def pcap_target(data: bytes) -> None:
    """A pcap or pcapng file: its MQTT connections (messages) and its SAP DB ones (the sapdb view)."""
    from cmi_datasource.transports.mqtt.pcap import read_pcap
    from cmi_datasource.transports.mqtt.transport import TRANSPORT
    from cmi_datasource.transports.sapdb.table import sql_parts_table
    path = temp_file(data, "capture.pcap")
    for m in read_pcap(path):
        TRANSPORT.message_row(m)
    sql_parts_table(path, {})


def sapdb_target(data: bytes) -> None:
    """An RTE stream: its messages, and the sapdb view of every SQL part."""
    from cmi_datasource.transports.sapdb.table import sql_parts_table
    _parse_format("sapdb", data)
    sql_parts_table(temp_file(data, "capture.rte"), {"format": "sapdb"})


def pcap_seeds() -> List[bytes]:
    """The MQTT and SAP DB samples as TCP connections in pcap and pcapng files."""
    import io
    import socket

    import dpkt

    from cmi_datasource.errors import Location
    from cmi_datasource.transports.sapdb.rte import read_rte_packets

    def frame(src, dst, seq, flags, payload=b""):
        tcp = dpkt.tcp.TCP(sport=src[1], dport=dst[1], seq=seq, ack=1, flags=flags, data=payload)
        ip = dpkt.ip.IP(src=socket.inet_aton(src[0]), dst=socket.inet_aton(dst[0]), p=dpkt.ip.IP_PROTO_TCP, data=tcp)
        return bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip))

    def conversation(sends, server_port, size=400):
        client, server = ("10.0.0.1", 40000), ("10.0.0.2", server_port)
        seq = {client: 1001, server: 5001}
        frames = [frame(client, server, 1000, dpkt.tcp.TH_SYN),
                  frame(server, client, 5000, dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK)]
        for from_client, payload in sends:
            a, b = (client, server) if from_client else (server, client)
            for at in range(0, len(payload), size):
                frames.append(frame(a, b, seq[a], dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH, payload[at:at + size]))
                seq[a] += len(payload[at:at + size])
        return frames

    def pcap(frames, ng=False):
        out = io.BytesIO()
        writer = (dpkt.pcapng.Writer if ng else dpkt.pcap.Writer)(out)
        for n, f in enumerate(frames):
            writer.writepkt(f, ts=1700000000 + n / 1000)
        return out.getvalue()

    [mqtt] = sample_bytes(".mqtt")
    [rte] = sample_bytes(".rte")
    sapdb_sends = [(p.direction == "request", rte[p.start:p.end]) for p in read_rte_packets(rte, Location())]
    return [pcap(conversation([(True, mqtt)], 1883)), pcap(conversation(sapdb_sends, 7210)),
            pcap(conversation(sapdb_sends, 7210), ng=True)]


# -- the whole capture ------------------------------------------------------------------------------


def capture_target(data: bytes) -> None:
    """A capture file opened as the data source opens one (format recognised by its first bytes),
    then every view as a table: assembly, layouts, observations, files, messages."""
    from cmi_datasource import Capture, read
    from cmi_datasource.containers import COMPRESSIONS
    from cmi_datasource.errors import CmiError
    if any(data.startswith(c.magic) for c in COMPRESSIONS):
        return  # a compressed file's size says nothing of what it holds: the memory bound cannot apply
    capture = Capture.open(temp_file(data, "capture"), use_index_cache=False)
    for view in ("attachments", "variables", "files", "messages"):
        try:
            read(capture, view=view)
        except CmiError:
            pass
    read(capture)


def capture_seeds() -> List[bytes]:
    return sample_bytes() + mqget_seeds()[:1] + pcap_seeds()[:1]


# -- whole reads in every mode under the differential oracle (whole_read.py) ------------------------


def _whole_read(name: str, description: str) -> Target:
    from fuzz import whole_read
    formats, compressed = whole_read.TARGET_FORMATS[name]
    # An input may take the child's time limit, then as long again replayed here for coverage.
    return Target(name, functools.partial(whole_read.whole_read_target, formats=formats),
                  functools.partial(whole_read.target_seeds, formats, compressed), description, traced=False,
                  timeout=int(3 * whole_read.TIME_LIMIT), prepare=whole_read.prepare,
                  mutate=functools.partial(whole_read.mutate, formats=formats, compressed=compressed))


# -- the table ---------------------------------------------------------------------------------------

TARGETS: Dict[str, Target] = {t.name: t for t in (
    Target("dmpmqmsg", dmpmqmsg_target, dmpmqmsg_seeds,
           "dmpmqmsg/qload text dumps, and the partitions' bulk hex decode"),
    Target("amqsbcg", amqsbcg_target, amqsbcg_seeds, "amqsbcg browse output, and its bulk decode"),
    Target("mqget", mqget_target, mqget_seeds, "binary MQGET captures"),
    Target("mq_headers", mq_headers_target, mq_headers_seeds,
           "MQ header chains (MQXQH, MQMDE, MQDLH, MQRFH2, MQH*) and segments"),
    Target("cmi_records", cmi_records_target, cmi_records_seeds,
           "CMI attachment headers and record tables (FieldReader)"),
    Target("sas_dataset", sas_dataset_target, functools.partial(_attachment_seeds, True),
           "SAS dataset attachments: layout and observations"),
    Target("external_file", external_file_target, functools.partial(_attachment_seeds, False),
           "external file attachments"),
    Target("rv", tibrv_target, lambda: sample_bytes(".rv"), "TIB/Rendezvous captures"),
    Target("mqtt", mqtt_target, lambda: sample_bytes(".mqtt"), "raw MQTT streams"),
    Target("pcap", pcap_target, pcap_seeds, "pcap/pcapng captures: MQTT and SAP DB over TCP"),
    Target("sapdb", sapdb_target, lambda: sample_bytes(".rte"), "SAP DB RTE streams and the sapdb view"),
    # Reading a dmpmqmsg or amqsbcg file asks for 64 MiB at a time (READ_CHUNK_BYTES), whatever its size.
    Target("capture", capture_target, capture_seeds, "whole capture files: Capture.open and every view",
           MEMORY_CONSTANT + (64 << 20)),
)}
# The whole reads under the differential oracle: a table of their own, as they find bugs of the
# read modes rather than of one parser (test_fuzz_parsers.py runs TARGETS; make fuzz runs both).
WHOLE_READ_TARGETS: Dict[str, Target] = {t.name: t for t in (
    _whole_read("whole_read_mq", "whole reads of MQ captures (dmpmqmsg, amqsbcg, MQGET) in every mode, "
                "differential oracle"),
    _whole_read("whole_read_tibrv", "whole reads of TIB/RV captures in every mode, differential oracle"),
    _whole_read("whole_read_mqtt", "whole reads of MQTT captures in every mode, differential oracle"),
    _whole_read("whole_read_compressed", "whole reads of gzip and zstd captures (flipped, cut, bombs) in every "
                "mode, differential oracle"),
)}


def _native_kernels() -> Target:
    from fuzz import native_diff
    # Inflated hex texts outgrow any bound of the input's size: the memory check is not this target's.
    return Target("native_kernels", native_diff.native_kernels_target, native_diff.native_kernels_seeds,
                  "the C kernels against their numba references, within and outside their bounds", traced=False,
                  prepare=native_diff.prepare)


# The C kernels against numba (native_diff.py, issue 30): a differential oracle on kernels, not a parser.
NATIVE_TARGETS: Dict[str, Target] = {"native_kernels": _native_kernels()}
ALL_TARGETS: Dict[str, Target] = {**TARGETS, **WHOLE_READ_TARGETS, **NATIVE_TARGETS}



def run_checked(target: Target, data: bytes) -> None:
    """``target.run(data)``: a CmiError is the expected outcome of bad input and is swallowed;
    any other exception propagates (a bug), and so does MemoryBoundExceeded when the traced peak
    passed ``memory_bound(len(data))``. Traces memory for the call when tracemalloc is not
    running already (the harness keeps it running)."""
    from cmi_datasource.errors import CmiError
    if not target.traced:
        try:
            target.run(data)
        except CmiError:
            pass
        return
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start(1)
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        try:
            target.run(data)
        except CmiError:
            pass
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        if started:
            tracemalloc.stop()
    bound = memory_bound(len(data), target.memory_constant)
    if peak > bound:
        raise MemoryBoundExceeded(f"{target.name}: traced memory peaked at {peak} bytes for an input of "
                                  f"{len(data)} bytes (bound {bound})")


def seeds_of(name: str) -> List[bytes]:
    return [s for s in ALL_TARGETS[name].seeds() if s]
