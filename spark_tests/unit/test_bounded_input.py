"""Hostile input in bounded memory, and typed errors from the libraries we call (issue 26, findings 3
and 4): a capture followed by hundreds of MiB of zeros or of one hex line, compressed; gzip, zstd,
bzip2 and xz streams cut or corrupted in the middle; special files; a pcap far larger than the
memory its reading takes. The bombs are built here, a piece at a time, by the compression
libraries themselves around the bundled samples (and pcaps by dpkt): none by our writer.

Peak memory is measured in a child process (its ``VmHWM``), against the bound issue 26 sets:
1.5 GiB. Before the bound, the 512 MiB bombs below took 2.5 GiB and more (3 GiB took 15.5).
"""
from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import os
import random
import struct
import subprocess
import sys
import threading

import dpkt
import pytest
import zstandard
from click.testing import CliRunner

from cmi_datasource import Capture, containers, transports
from cmi_datasource.cli import cli
from cmi_datasource.engine.options import ReadOptions
from cmi_datasource.errors import (CmiOptionError, CompressedStreamError, InputFileError, RecordTooLargeError,
                                   UnknownCaptureFormatError)
from cmi_datasource.transports.mq.errors import DumpSyntaxError
from cmi_datasource.transports.sapdb.table import sql_parts_table
from bench.bombs import compressed
from conftest import ROOT, SAMPLES

from tcp_frames import ACK, PSH, SYN, tcp_frame
from test_mqtt_stream import connect, publish311

NIGHTLY = os.path.join(SAMPLES, "nightly_batch.dmp")
MEMORY_BOUND = 3 << 29  # 1.5 GiB: issue 26's bound on each bomb
BOMB_BYTES = 512 << 20


def in_child(code: str):
    """(what ``code`` leaves in ``result``, the peak of its resident memory in bytes): run in a fresh interpreter."""
    # VmHWM: the peak of the child's own memory (ru_maxrss would start from the parent's, kept across exec).
    script = (code + "\nimport json\npeak = next(int(line.split()[1]) * 1024 for line in open('/proc/self/status') "
              "if line.startswith('VmHWM:'))\nprint(json.dumps({'result': result, 'peak': peak}))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "spark_tests")]))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return found["result"], found["peak"]


CLI_IN_CHILD = """
import contextlib, io, sys
from cmi_datasource.cli import main
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    try:
        main({args!r})
        code = 0
    except SystemExit as e:
        code = e.code
result = {{"code": code, "out": out.getvalue(), "err": err.getvalue()}}
"""


# -- finding 3: bombs ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["zstd", "gzip"])
def test_a_dump_followed_by_512_mib_of_zeros_is_read_in_bounded_memory(tmp_path, kind):
    with open(NIGHTLY, "rb") as f:
        sample = f.read()
    path = compressed(tmp_path / f"zeros.{kind}", sample, b"\0", BOMB_BYTES, kind)
    found, peak = in_child(CLI_IN_CHILD.format(args=["messages", path, "--json"]))
    assert found["code"] == 0, found["err"]
    messages = json.loads(found["out"])["messages"]
    # As with a short run of zeros: every message read, the last one (its data followed by zeros, no
    # line end) damaged, where the zeros start.
    assert len(messages) == 33 and [m["index"] for m in messages if m["problem"]] == [33]
    assert messages[-1]["problem"].startswith("line starts with b'\\x00") and f"file offset {len(sample)}" in \
        messages[-1]["problem"]
    assert peak < MEMORY_BOUND


def test_a_dump_followed_by_one_512_mib_hex_line_is_a_record_too_large(tmp_path):
    with open(NIGHTLY, "rb") as f:
        sample = f.read()
    path = compressed(tmp_path / "hexline.zst", sample + b"X ", b"0", BOMB_BYTES, "zstd")
    found, peak = in_child(f"""
from cmi_datasource import Capture
messages = Capture.open({path!r}, use_index_cache=False).messages
damaged = [m for m in messages if m.damage is not None]
result = [len(messages), [(m.index, m.file_offset, m.damage.kind.__name__, m.damage.location.file_offset)
                          for m in damaged]]
""")
    count, damaged = found
    last_start = sample.index(b"\nA ", sample.rindex(b"* Index 33")) + 1  # the last message: its X lines run on
    assert count == 33 and damaged == [[32, last_start, "RecordTooLargeError", last_start]]
    assert peak < MEMORY_BOUND


@pytest.mark.parametrize("sample, problem", [
    ("amqsbcg_browse.txt", "line starts with b'\\x00"),
    ("tibrv_capture.rv", "no RV message here"),
    ("sapdb_session.rte", "no record that starts here ends within"),
])
def test_other_captures_followed_by_512_mib_of_zeros_read_in_bounded_memory(tmp_path, sample, problem):
    with open(os.path.join(SAMPLES, sample), "rb") as f:
        data = f.read()
    path = compressed(tmp_path / f"{sample}.zst", data, b"\0", BOMB_BYTES, "zstd")
    found, peak = in_child(f"""
from cmi_datasource import Capture
messages = Capture.open({path!r}, use_index_cache=False).messages
result = [(m.file_offset, m.problem) for m in messages if m.problem]
""")
    [(offset, text)] = found
    assert text.startswith(problem) and offset <= len(data)
    assert peak < MEMORY_BOUND


def big_message_dump(tmp_path, name: str):
    """A dump of one message of 300 KB of data (600 KB of hex, as dmpmqmsg writes it, 25 bytes a
    line) and one of 1 byte: (path, the big payload)."""
    payload = bytes(range(256)) * 1200
    lines = b"".join(b"X " + payload[at:at + 25].hex().upper().encode() + b"\n" for at in range(0, len(payload), 25))
    path = tmp_path / name
    path.write_bytes(b"* QLOAD Version:8.0\n\nA MST 8\nA CCS 1208\n" + lines + b"\nA MST 8\nX 41\n")
    return path, payload


def test_max_record_bytes_bounds_one_message_and_can_be_raised(tmp_path):
    path, payload = big_message_dump(tmp_path, "big_message.dmp")
    try:
        ReadOptions.parse({"path": str(path), "maxRecordBytes": str(256 << 10)})
        assert containers.max_record_bytes() == 256 << 10
        messages = Capture.open(str(path), use_index_cache=False).messages
        assert messages[0].damage.kind is RecordTooLargeError and messages[0].file_offset == 21
        assert "maxRecordBytes" in messages[0].problem
        ReadOptions.parse({"path": str(path), "maxRecordBytes": str(1 << 20)})
        capture = Capture.open(str(path), use_index_cache=False)
        assert [capture.full(m).payload for m in capture.messages] == [payload, b"A"]
        with pytest.raises(CmiOptionError, match="maxRecordBytes must be a whole number"):
            ReadOptions.parse({"path": str(path), "maxRecordBytes": "lots"})
    finally:
        ReadOptions.parse({"path": str(path)})
    assert containers.max_record_bytes() == containers.DEFAULT_MAX_RECORD_BYTES


def test_an_index_cached_under_one_bound_is_not_used_under_another(tmp_path):
    """The cached index of a file read with a small maxRecordBytes holds its big message as damage:
    raising the bound must read the message, not the cached damage."""
    path, payload = big_message_dump(tmp_path, "cached.dmp")
    try:
        ReadOptions.parse({"path": str(path), "maxRecordBytes": str(256 << 10)})
        assert Capture.open(str(path)).messages[0].damage.kind is RecordTooLargeError
        ReadOptions.parse({"path": str(path), "maxRecordBytes": str(1 << 20)})
        capture = Capture.open(str(path))
        assert [capture.full(m).payload for m in capture.messages] == [payload, b"A"]
    finally:
        ReadOptions.parse({"path": str(path)})


CLIENT, BROKER = ("10.0.0.2", 50123), ("10.0.0.1", 1883)


def mqtt_pcap(path, payload_bytes: int, packet_payload: int = 30000, segment: int = 1460) -> int:
    """A pcap of one MQTT 3.1.1 connection: CONNECT, then PUBLISHes of ``packet_payload`` bytes up to
    ``payload_bytes``, cut into segments of ``segment`` bytes (each frame a dpkt-built one with its
    sequence number set: a checksum is not read). Returns the PUBLISHes written."""
    template = tcp_frame(CLIENT, BROKER, 0, ACK | PSH, bytes(segment))
    head, seq_at = len(template) - segment, 14 + 20 + 4
    body = (bytes(range(256)) * (packet_payload // 256 + 1))[:packet_payload]
    publish = publish311("bulk/data", body)
    with open(path, "wb") as f:
        writer = dpkt.pcap.Writer(f)
        frames = iter(range(1 << 40))

        def put(frame: bytes) -> None:
            writer.writepkt(frame, ts=1700000000 + next(frames) / 1000)
        put(tcp_frame(CLIENT, BROKER, 1000, SYN))
        put(tcp_frame(BROKER, CLIENT, 5000, SYN | ACK))
        seq, pending, sent = 1001, bytearray(connect(4, "bulk")), 0
        while sent < payload_bytes or pending:
            while len(pending) < segment and sent < payload_bytes:
                pending += publish
                sent += packet_payload
            piece = bytes(pending[:segment])
            del pending[:segment]
            if len(piece) == segment:
                put(template[:seq_at] + struct.pack(">I", seq) + template[seq_at + 4:head] + piece)
            else:
                put(tcp_frame(CLIENT, BROKER, seq, ACK | PSH, piece))
            seq += len(piece)
    return sent // packet_payload


def test_a_pcap_is_read_frame_by_frame_in_memory_that_does_not_follow_its_size(tmp_path):
    peaks, sizes = {}, {}
    for name, payload_bytes in (("small", 20 << 20), ("large", 320 << 20)):
        path = str(tmp_path / f"{name}.pcap")
        published = mqtt_pcap(path, payload_bytes)
        sizes[name] = os.path.getsize(path)
        found, peaks[name] = in_child(f"""
from cmi_datasource import Capture
messages = Capture.open({path!r}, use_index_cache=False).messages
result = [len(messages), sum(m.length for m in messages), [m.problem for m in messages if m.problem]]
""")
        assert found == [published + 1, published * 30000, []]  # the CONNECT and every PUBLISH, whole
    assert sizes["large"] > 330_000_000
    # Held whole, the large capture took 850 MB; read frame by frame it takes what the small one
    # takes, but for the messages of a capture kept for the next read when they are few (64 MiB).
    assert peaks["large"] < sizes["large"] * 3 // 4
    assert peaks["large"] - peaks["small"] < 96 << 20


# -- finding 4: typed errors ---------------------------------------------------------------------


def _damaged(data: bytes, how: str) -> bytes:
    if how == "cut":
        return data[:len(data) // 2]
    flipped = bytearray(data)
    for at in range(len(data) // 2, len(data) // 2 + 64):
        flipped[at] ^= 0x5A
    return bytes(flipped)


COMPRESSORS = {"gzip": gzip.compress, "bzip2": bz2.compress, "xz": lzma.compress,
               # with the frame checksum zstd can write: without one, a flipped byte may decompress
               "zstd": lambda data: zstandard.ZstdCompressor(write_checksum=True).compress(data)}


def random_dump(messages: int) -> bytes:
    """A dmpmqmsg dump of ``messages`` messages of 1000 random bytes (which compress no better than
    their hex), written here line by line as docs/spec/mq.md#dmpmqmsg-text-dumps describes the format."""
    rng = random.Random(26)
    out = [b"* QLOAD Version:8.0 Created:Sat Jan  1 00:00:00 2000\n\n"]
    for index in range(1, messages + 1):
        payload = rng.randbytes(1000)
        out.append(b"* Index %d\nA MST 8\nA CCS 1208\n" % index)
        out += [b"X " + payload[at:at + 25].hex().upper().encode() + b"\n" for at in range(0, len(payload), 25)]
        out.append(b"\n")
    return b"".join(out)


@pytest.mark.parametrize("how", ["cut", "corrupt"])
@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_a_compressed_capture_cut_or_corrupt_in_the_middle_is_a_typed_error_naming_file_and_offset(tmp_path, kind, how):
    sample = random_dump(300)
    path = tmp_path / f"damaged.{kind}"
    path.write_bytes(_damaged(COMPRESSORS[kind](sample), how))
    expected = CompressedStreamError
    if (kind, how) == ("bzip2", "corrupt"):  # a block's output comes before its CRC is checked: garbage
        expected = (CompressedStreamError, UnknownCaptureFormatError)
    with pytest.raises(expected) as e:
        Capture.open(str(path), use_index_cache=False)
    assert e.value.source == str(path) and 0 <= e.value.offset <= len(sample)
    if isinstance(e.value, CompressedStreamError):
        assert "cut short or damaged" in e.value.problem and kind in e.value.problem
    if kind != "bzip2":  # the bytes before the break read (bzip2's blocks of 900 KB are checked whole)
        assert e.value.offset >= 128 << 10


def test_a_zstd_capture_cut_at_a_block_is_no_longer_read_as_a_shorter_file(tmp_path):
    # zstandard's stream reader ends quietly where a cut file ends: the dump then read as whole.
    with open(NIGHTLY, "rb") as f:
        sample = f.read()
    whole = zstandard.ZstdCompressor().compress(sample)
    path = tmp_path / "cut.zst"
    path.write_bytes(whole[:-3])
    with pytest.raises(CompressedStreamError, match="ends inside a zstd frame"):
        Capture.open(str(path), use_index_cache=False)


def test_zstd_frames_one_after_another_are_all_read(tmp_path):
    with open(NIGHTLY, "rb") as f:
        sample = f.read()
    half = sample.index(b"* Index 17")
    path = tmp_path / "frames.zst"  # as pzstd writes them, a skippable frame first (its frames' sizes)
    skippable = b"\x50\x2a\x4d\x18" + (4).to_bytes(4, "little") + b"size"
    first = zstandard.ZstdCompressor(write_checksum=True, write_content_size=False).compress(sample[:half])
    path.write_bytes(skippable + first + zstandard.ZstdCompressor().compress(sample[half:]))
    assert len(Capture.open(str(path), use_index_cache=False).messages) == 33


def test_damage_near_the_start_is_a_typed_error_from_format_detection(tmp_path):
    path = tmp_path / "header.gz"
    data = bytearray(gzip.compress(open(NIGHTLY, "rb").read()))
    data[3] = 0xFF  # reserved flag bits: no gzip stream
    path.write_bytes(bytes(data))
    with pytest.raises(CompressedStreamError) as e:
        transports.detect_format(str(path))
    assert e.value.source == str(path) and e.value.offset == 0


def test_the_cli_reports_a_damaged_stream_with_its_class_file_and_offset(tmp_path):
    path = tmp_path / "cut.gz"
    data = gzip.compress(open(NIGHTLY, "rb").read())
    path.write_bytes(data[:len(data) // 2])
    for command in (["messages", str(path)], ["ls", str(path)],
                    ["extract", str(path), str(tmp_path / "out"), "--mode", "PERMISSIVE"],
                    ["extract", str(path), str(tmp_path / "out2"), "--mode", "DROPMALFORMED"]):
        result = CliRunner().invoke(cli, command)
        assert result.exit_code == 1, (command, result.output)
        assert "CompressedStreamError" in result.stderr and f"file: {path}" in result.stderr
        assert "file offset: " in result.stderr and "Traceback" not in result.stderr


def _pcap_of_mqtt(path) -> str:
    mqtt_pcap(path, 200_000)
    return str(path)


def test_the_pcap_readers_type_a_damaged_stream(tmp_path):
    raw = open(_pcap_of_mqtt(tmp_path / "plain.pcap"), "rb").read()
    path = tmp_path / "cut.pcap.zst"
    whole = zstandard.ZstdCompressor().compress(raw)
    path.write_bytes(whole[:len(whole) // 2])
    with pytest.raises(CompressedStreamError) as e:
        Capture.open(str(path), use_index_cache=False)
    assert e.value.source == str(path)
    with pytest.raises(CompressedStreamError):  # the sapdb view reads pcaps frame by frame too
        sql_parts_table(str(path))


def test_proc_self_mem_is_a_typed_error(tmp_path):
    with pytest.raises(InputFileError, match="failed to read") as e:
        Capture.open("/proc/self/mem", use_index_cache=False)
    assert e.value.source == "/proc/self/mem" and e.value.offset == 0
    result = CliRunner().invoke(cli, ["ls", "/proc/self/mem"])
    assert result.exit_code == 1 and "InputFileError" in result.stderr


@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "/dev/null"])
def test_a_fifo_or_a_device_is_refused_before_it_is_read(tmp_path, special):
    path = special
    if special == "fifo":
        path = str(tmp_path / "pipe")
        os.mkfifo(path)
    outcome = {}

    def open_it():  # a FIFO with no writer blocks its reader: never opened, the test does not hang
        try:
            Capture.open(path, use_index_cache=False)
        except InputFileError as e:
            outcome["error"] = e
    opening = threading.Thread(target=open_it, daemon=True)
    opening.start()
    opening.join(30)
    assert not opening.is_alive(), "the special file was opened and read"
    assert "not a regular file" in outcome["error"].problem and outcome["error"].source == path
    result = CliRunner().invoke(cli, ["messages", path])
    assert result.exit_code == 1 and "InputFileError" in result.stderr and "not a regular file" in result.stderr


class _FailingDisk(io.FileIO):
    """A file whose bytes past 1000 the disk cannot give (an I/O error)."""

    def readinto(self, view):
        if self.tell() > 1000:
            raise OSError(5, "Input/output error")
        return super().readinto(view[:1001 - self.tell()])

    def read(self, size=-1):
        buffer = bytearray(max(size, 0) if size is not None and size >= 0 else 1 << 20)
        return bytes(buffer[:self.readinto(memoryview(buffer))])


def test_a_read_that_fails_in_the_middle_is_a_typed_error(tmp_path, monkeypatch):
    from cmi_datasource import storage
    path = tmp_path / "q.dmp"
    path.write_bytes(open(NIGHTLY, "rb").read())
    monkeypatch.setattr(storage, "open", lambda name, mode, buffering=-1: _FailingDisk(name, mode), raising=False)
    with pytest.raises(InputFileError, match="Input/output error") as e:
        Capture.open(str(path), use_index_cache=False)
    assert e.value.source == str(path) and e.value.offset == 1001


def test_a_small_run_of_zeros_reads_as_the_large_one(tmp_path):
    # The bound changes nothing below it: the same message damaged, at the same offset, by the same text.
    with open(NIGHTLY, "rb") as f:
        sample = f.read()
    path = tmp_path / "zeros.dmp"
    path.write_bytes(sample + bytes(1 << 20))
    [damaged] = [m for m in Capture.open(str(path), use_index_cache=False).messages if m.damage]
    assert damaged.damage.kind is DumpSyntaxError and damaged.damage.location.file_offset == len(sample)
