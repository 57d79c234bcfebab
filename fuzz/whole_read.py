"""Whole-read fuzz targets: a capture read as Spark reads it, in all three modes, under a
differential oracle (issue 26).

Each input is a capture (or a recipe for one, below). It is written to a file and read through
the engine's views as the ``cmi`` command reads it (``cli/reading.py``: the view's schema, its
plan, then every partition's batches, each partition pickled as Spark ships it): the dataset
view (and, when the capture holds several data sets, each one by ``option("attachment")``),
the files, messages and attachments views, each in FAILFAST, PERMISSIVE and DROPMALFORMED.
The reads run in a child process with a memory limit (``RLIMIT_AS``, ``MEMORY_LIMIT`` above
what the fuzzer holds) and a time limit (``TIME_LIMIT``), so a read that blows up is a find,
not a stuck fuzzer. The oracle (``check``) then asks, per input:

- only ``CmiError`` subclasses escape a read;
- FAILFAST either raises or returns what the other modes return: PERMISSIVE the same rows and no
  ``_corrupt_record`` row, DROPMALFORMED the same rows;
- DROPMALFORMED returns PERMISSIVE's rows without its ``_corrupt_record`` rows;
- every partition returns the rows it planned, each batch in the view's schema;
- trusted rows sit each at its own row number, in order (the plan says which observations a
  partition returns): for a message-level mutation of a seed they are the clean read's rows at
  those numbers, and a FAILFAST read returns every row of the clean read;
- no returned row is also reported lost, and the rows returned plus the rows the reports say
  are lost (``LostRows``: its count) equal the data set's declared count
  when every report gives a count.

An input is either ``b"R"`` + a variant byte + a capture (atheris mutates its bytes freely), or
``b"P"`` + a seed's name + ``b"\\n"`` + a variant byte + 4-byte operations: a recipe that
mutates a seed message by message (``OPERATIONS``: drop, garble a hex line, duplicate, swap,
a huge count or sequence number, truncate, compress, flip a byte, a decompression bomb).
atheris' byte mutations of a recipe make new recipes, and a kept recipe is a few bytes
whatever capture it makes. The variant byte's bit 0 reads with ``minPartitions`` 3 and
``batchRows`` 4 (rows must not depend on how a read is cut).

    PYTHONPATH=. .venv/bin/python -m fuzz.whole_read fuzz/crashes/whole_read_mq/ID.bin   # replay a find
    PYTHONPATH=. .venv/bin/python -m fuzz.whole_read --write out.dmp fuzz/crashes/.../ID.bin  # its capture
"""
from __future__ import annotations

import functools
import gzip
import hashlib
import os
import pickle
import random
import re
import resource
import select
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(ROOT, "sample_queues")

TIME_LIMIT = 10.0  # seconds the reads of one input may take (they take about 50 ms)
MEMORY_LIMIT = 2 << 30  # address space the reads of one input may add to what the fuzzer holds
MODES = ("failfast", "permissive", "dropmalformed")
LISTING_VIEWS = ("files", "messages", "attachments")
MAX_KEYED_READS = 4  # data sets read one by one (option attachment) when a capture holds several

PROGRAM, RAW = b"P", b"R"
OPERATION_SIZE = 4
HUGE = (10 ** 6, 2 ** 31 - 1, 2 ** 32 - 1, 65536)
BOMB_RUN = 64 << 20  # decompressed bytes of one run of a bomb
SUBORDINATE = 100001
TEXT_FORMATS = ("dmpmqmsg", "amqsbcg")
# The whole-read targets (fuzz/targets.py): the capture formats of their seeds, and whether they
# start from compressed seeds (and build bombs).
TARGET_FORMATS: Dict[str, Tuple[Tuple[str, ...], bool]] = {
    "whole_read_mq": (("dmpmqmsg", "amqsbcg", "mqget"), False),
    "whole_read_tibrv": (("tibrv",), False),
    "whole_read_mqtt": (("mqtt",), False),
    "whole_read_compressed": (("dmpmqmsg", "amqsbcg", "mqget", "tibrv", "mqtt"), True),
}


class Finding(Exception):
    """What the oracle, or the child's limits, found wrong with one input: a bug."""

    def __init__(self, signature: str, detail: str):
        super().__init__(f"{signature}: {detail}")
        self.signature = signature


# -- seeds --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seed:
    name: str
    data: bytes
    format: str  # the capture format that wrote it


def _detect(path: str) -> str:
    """The capture format the engine recognises at ``path`` (through any compression)."""
    from cmi_datasource.transports import detect_format
    try:
        return detect_format(path).name
    except Exception:  # noqa: BLE001 - only names a find (the reads report what detecting raises)
        return "unknown"


def _sample_seeds() -> List[Seed]:
    seeds = []
    for name in sorted(os.listdir(SAMPLES)):
        if name.endswith((".dmp", ".txt", ".rv", ".mqtt")):
            path = os.path.join(SAMPLES, name)
            with open(path, "rb") as f:
                seeds.append(Seed(name, f.read(), _detect(path)))
    return seeds


def _written(name: str, fmt: str, datasets, files=(), **options) -> Seed:
    """A capture written by the project's writer: small messages give an attachment many
    observation messages."""
    import io
    from cmi_datasource.engine.write import WriteOptions, write_attachments_dump
    out = io.BytesIO()
    header = {"queue_manager": "QM1", "queue": "SAS.CMI.QUEUE"} if fmt == "dmpmqmsg" else {}
    write_attachments_dump(out, datasets, files, WriteOptions(deterministic_seed=name, **options), format=fmt,
                           **header)
    return Seed(name, out.getvalue(), fmt)


def _orders(rows: int = 20):
    """Rows of 22 bytes (two numbers and a 6-byte string)."""
    import pyarrow as pa
    return pa.table({"ORDER": pa.array([float(1000 + i) for i in range(rows)]),
                     "ITEM": pa.array([["bolt", "nut", "washer", "gear"][i % 4] for i in range(rows)]),
                     "QTY": pa.array([float((i * 7) % 13) for i in range(rows)])})


ORDERS_OBSERVATION_BYTES = 22


def _written_seeds() -> List[Seed]:
    """Attachments of 2, 3 and many observation messages, observations straddling messages or
    not, both byte orders, every transport's writer."""
    from cmi_datasource.engine.write import DatasetToWrite, FileToWrite
    orders = [DatasetToWrite(_orders(), "WORK", "ORDERS", description="orders")]

    def fitting(observations: int) -> int:  # a message of whole observations
        return 4 + observations * ORDERS_OBSERVATION_BYTES
    seeds = [
        _written("orders_2obs.dmp", "dmpmqmsg", orders, max_message_bytes=256),
        _written("orders_3obs.dmp", "dmpmqmsg", orders, max_message_bytes=160),
        _written("orders_3obs_aligned.dmp", "dmpmqmsg", orders, max_message_bytes=fitting(7)),
        _written("orders_many_obs.dmp", "dmpmqmsg", orders, max_message_bytes=50),
        _written("orders_many_obs_aligned.dmp", "dmpmqmsg", orders, max_message_bytes=fitting(2)),
        _written("orders_3obs_be.dmp", "dmpmqmsg", orders, max_message_bytes=160, encoding=273, ccsid=819),
        _written("orders_2obs_be_aligned.dmp", "dmpmqmsg", orders, max_message_bytes=fitting(10), encoding=273),
        _written("orders_3obs.amqsbcg.txt", "amqsbcg", orders, max_message_bytes=160),
        _written("orders_3obs.mqget", "mqget", orders, max_message_bytes=160),
        _written("orders_3obs.mqtt", "mqtt", orders, max_message_bytes=160),
        _written("orders_3obs.rv", "tibrv", orders, [FileToWrite("note.txt", text="a note\n")],
                 max_message_bytes=160, encoding=273),
    ]
    # The writer sends up to 1 MiB of rows an ATO message; another sender may send fewer.
    from cmi_datasource.transports.tibrv import writer
    kept = writer.OBSERVATION_FIELD_BYTES
    writer.OBSERVATION_FIELD_BYTES = 4 * 3 * 31  # three rows of ORDERS a message
    try:
        seeds.append(_written("orders_small_ato.rv", "tibrv", orders, encoding=273))
    finally:
        writer.OBSERVATION_FIELD_BYTES = kept
    return seeds


def _independent_seeds() -> List[Seed]:
    """Dumps written by ``spark_tests/independent_encoder.py``, which shares no code with the
    project: little-endian sequence numbers, 8-byte longs, big-endian, padded observations."""
    sys.path.insert(0, ROOT)
    from spark_tests.independent_encoder import Encoder, Var, dump_text
    variables = [Var("ID"), Var("NAME", "char", 7), Var("AMOUNT", "num", 8, "COMMA", 10, 2)]
    rows = [(i, f"n{i:03d}", i * 1.25) for i in range(15)]
    obslen = 8 + 7 + 8
    seeds = []
    for name, encoder, payload, padding in (
            ("indep_le_seq.dmp", Encoder(seq_big_endian=False), 4 + 3 * obslen, 0),
            ("indep_long8_straddling.dmp", Encoder(long_size=8), 50, 0),
            ("indep_be_padded.dmp", Encoder(encoding=273, ccsid=819), 4 + 4 * (obslen + 3), 3)):
        key = hashlib.sha1(name.encode()).digest()[:16]
        attachment = encoder.dataset_attachment(key, "WORK", "INDEP", variables, rows, max_payload=payload,
                                                obs_padding=padding)
        messages = encoder.transmission(b"\x11" * 16 + bytes(8), b"\x22" * 16 + bytes(8), b"independent",
                                        [attachment])
        seeds.append(Seed(name, dump_text(messages).encode("latin-1"), "dmpmqmsg"))
    return seeds


@functools.lru_cache(maxsize=None)
def all_seeds() -> Dict[str, Seed]:
    return {s.name: s for s in _sample_seeds() + _written_seeds() + _independent_seeds()}


# -- message blocks -----------------------------------------------------------------------------------


@dataclass
class Record:
    """One message of a capture as its bytes, with what the parse saw of it."""

    data: bytes
    msg_type: Optional[int]
    correl_id: Optional[bytes]
    encoding: Optional[int]
    payload: bytes
    after: bytes = b""  # what separates it from the next record (blank lines in a text dump)


@dataclass
class Blocks:
    """A capture cut at its messages: the head, each record and what follows it, the tail."""

    format: str
    head: bytes
    records: List[Record]
    tail: bytes

    def join(self) -> bytes:
        if not self.records:
            return self.head + self.tail
        body = b"".join(r.data + r.after for r in self.records[:-1]) + self.records[-1].data
        return _renumbered(self.format, self.head + body + self.tail)


def split_messages(data: bytes, fmt_name: str) -> Blocks:
    """The capture cut into its messages' records by the format's own parse (where each record
    starts and ends); a dmpmqmsg record takes its ``* Index`` line along."""
    from cmi_datasource.transports import capture_format
    messages = list(capture_format(fmt_name).parse(data, "seed"))
    if not messages:
        return Blocks(fmt_name, data, [], b"")
    starts = []
    for m in messages:
        start = m.file_offset
        if fmt_name == "dmpmqmsg":
            found = data.rfind(b"* Index", 0, start)
            if found >= 0 and not data[found:start].strip(b"\n").count(b"\n"):
                start = found
        starts.append(start)
    ends = [m.file_end for m in messages]
    gaps = [data[e:s] for e, s in zip(ends, starts[1:])]
    usual = max(set(gaps), key=gaps.count) if gaps else b""
    records = []
    for m, start, end, after in zip(messages, starts, ends, gaps + [usual]):
        d = m.descriptor
        records.append(Record(data[start:end], d.msg_type if d else None, d.correl_id if d else None,
                              d.encoding if d else None, m.payload, after))
    return Blocks(fmt_name, data[:starts[0]], records, data[ends[-1]:])


def _renumbered(fmt_name: str, data: bytes) -> bytes:
    """Messages numbered 1, 2, ... again, as the tool numbers what it dumps."""
    pattern = {"dmpmqmsg": rb"(?m)^(\* Index )\d+", "amqsbcg": rb"(?m)^( MQGET of message number )\d+"}.get(fmt_name)
    if pattern is None:
        return data
    counter = iter(range(1, 1 << 30))
    return re.sub(pattern, lambda m: m.group(1) + str(next(counter)).encode(), data)


# -- operations ----------------------------------------------------------------------------------------


@dataclass
class Mutation:
    """A capture being mutated: its messages, then its bytes, then its container."""

    blocks: Blocks
    plain_ops: List[Tuple[str, int, int, int]] = field(default_factory=list)
    compression: Optional[str] = None
    container_ops: List[Tuple[str, int, int, int]] = field(default_factory=list)
    applied: List[str] = field(default_factory=list)  # the operations that changed something


def _drop(c: Mutation, x: int, y: int, z: int) -> bool:
    records = c.blocks.records
    if len(records) < 2:
        return False
    del records[x % len(records)]
    return True


def _duplicate(c: Mutation, x: int, y: int, z: int) -> bool:
    records = c.blocks.records
    if not records:
        return False
    i = x % len(records)
    copy = Record(**vars(records[i]))
    records.insert(i + 1 if not z & 1 else y % (len(records) + 1), copy)
    return True


def _swap(c: Mutation, x: int, y: int, z: int) -> bool:
    records = c.blocks.records
    if len(records) < 2:
        return False
    i, j = x % len(records), y % len(records)
    if i == j:
        j = (i + 1) % len(records)
    records[i], records[j] = records[j], records[i]
    return True


# A text dump's lines of payload hex digits (group 1: the digits; amqsbcg groups them by four).
DATA_LINES = {"dmpmqmsg": re.compile(rb"(?m)^X ([0-9A-Fa-f]+)$"),
              "amqsbcg": re.compile(rb"(?m)^[0-9A-F]{8}:  ((?:[0-9A-F]{2,4} ?)+)")}


def _garble(c: Mutation, x: int, y: int, z: int) -> bool:
    """One hex digit of one data line of a message made no hex digit: the message is damaged."""
    if c.blocks.format not in TEXT_FORMATS:
        return False
    records = c.blocks.records
    pattern = DATA_LINES[c.blocks.format]
    candidates = [(i, m) for i, r in enumerate(records) for m in pattern.finditer(r.data)]
    if not candidates:
        return False
    wanted = [(i, m) for i, m in candidates if i == x % len(records)] or candidates
    i, m = wanted[y % len(wanted)]
    digits = [k for k in range(m.start(1), m.end(1)) if records[i].data[k:k + 1] != b" "]
    at = digits[z % len(digits)]
    data = records[i].data
    records[i].data = data[:at] + b"G" + data[at + 1:]
    return True


def _count_messages(records: Sequence[Record]) -> List[int]:
    return [i for i, r in enumerate(records) if r.msg_type == SUBORDINATE and len(r.payload) == 4
            and (r.correl_id is None or not any(r.correl_id[16:]))]


def _sequenced(records: Sequence[Record]) -> List[int]:
    return [i for i, r in enumerate(records) if r.correl_id is not None and any(r.correl_id[16:20])
            and not any(r.correl_id[20:])]


def _set_payload_end(c: Mutation, record: Record, new: bytes) -> bool:
    """The last bytes of a message's payload replaced, in the record's own notation (its last
    data line's hex digits in a text dump)."""
    digits = new.hex().upper().encode()
    data = record.data
    if c.blocks.format in TEXT_FORMATS:
        lines = list(DATA_LINES[c.blocks.format].finditer(data))
        if not lines:
            return False
        start, end = lines[-1].span(1)
        at = [k for k in range(start, end) if data[k:k + 1] != b" "]  # amqsbcg groups digits by four
        if len(at) < len(digits):
            return False
        changed = bytearray(data)
        for k, digit in zip(at[-len(digits):], digits):
            changed[k] = digit
        record.data = bytes(changed)
        return True
    if not data.endswith(record.payload[-len(new):]):
        return False
    record.data = data[:len(data) - len(new)] + new
    return True


def _huge_count(c: Mutation, x: int, y: int, z: int) -> bool:
    """A count message saying the attachment has 10^6 (or 2^31 - 1 ...) sequenced messages."""
    from cmi_datasource.encoding import integer_order
    found = _count_messages(c.blocks.records)
    if not found:
        return False
    record = c.blocks.records[found[x % len(found)]]
    order = "little" if integer_order(record.encoding or 0) == "<" else "big"
    return _set_payload_end(c, record, HUGE[y % len(HUGE)].to_bytes(4, order))


def _huge_sequence(c: Mutation, x: int, y: int, z: int) -> bool:
    """A sequenced message's CorrelId given the sequence number 10^6 (or 2^31 - 1 ...)."""
    found = _sequenced(c.blocks.records)
    if not found:
        return False
    record = c.blocks.records[found[x % len(found)]]
    old = record.correl_id
    number = old[16:20]
    order = "little" if number[0] and not number[3] else "big"  # the order the capture writes it in
    new = old[:16] + HUGE[y % len(HUGE)].to_bytes(4, order) + old[20:]
    data = record.data
    if c.blocks.format in TEXT_FORMATS:
        old_text, new_text = old.hex().upper().encode(), new.hex().upper().encode()
        if old_text not in data:
            return False
        record.data = data.replace(old_text, new_text, 1)
    else:
        if old not in data:
            return False
        record.data = data.replace(old, new, 1)
    record.correl_id = new
    return True


def _later(kind: str) -> Callable[[Mutation, int, int, int], bool]:
    """An operation on the bytes after the messages are joined (or on the compressed stream)."""
    def defer(c: Mutation, x: int, y: int, z: int) -> bool:
        (c.container_ops if c.compression or kind == "bomb" else c.plain_ops).append((kind, x, y, z))
        if kind == "bomb" and not c.compression:
            c.compression = "zstd"
        return True
    return defer


def _compress(name: str) -> Callable[[Mutation, int, int, int], bool]:
    def choose(c: Mutation, x: int, y: int, z: int) -> bool:
        c.compression = name
        return True
    return choose


# name, function, whether the clean read of the seed still tells which rows are right
OPERATIONS: Tuple[Tuple[str, Callable[[Mutation, int, int, int], bool], bool], ...] = (
    ("drop", _drop, True),
    ("garble", _garble, True),
    ("duplicate", _duplicate, True),
    ("swap", _swap, True),
    ("huge_count", _huge_count, True),
    ("huge_sequence", _huge_sequence, True),
    ("truncate", _later("truncate"), True),  # a prefix of the capture: its rows are a prefix
    ("gzip", _compress("gzip"), True),
    ("zstd", _compress("zstd"), True),
    ("flip", _later("flip"), False),  # any byte: rows may legitimately change
    ("bomb", _later("bomb"), True),  # up to 4 GiB of filler after the last message, compressed
)
OPERATION_CODES = {name: code for code, (name, _, _) in enumerate(OPERATIONS)}


def _truncated(data: bytes, x: int, y: int) -> bytes:
    return data[:len(data) * ((x << 8) | y) // 65536]


def _flipped(data: bytes, x: int, y: int, z: int) -> bytes:
    if not data:
        return data
    at = ((x << 8) | y) * len(data) // 65536
    return data[:at] + bytes([data[at] ^ (1 << (z % 8))]) + data[at + 1:]


BOMB_FILLERS = (b"\n", b"\0")  # blank lines; bytes no format reads


@functools.lru_cache(maxsize=4)
def _bomb_run(compression: str, filler: bytes) -> bytes:
    """BOMB_RUN filler bytes, compressed: bombs concatenate runs (gzip members, zstd frames)."""
    return _compressed(compression, filler * BOMB_RUN)


def _compressed(name: str, data: bytes) -> bytes:
    if name == "gzip":
        return gzip.compress(data, compresslevel=6, mtime=0)
    import zstandard
    return zstandard.ZstdCompressor(level=3).compress(data)


@dataclass(frozen=True)
class Input:
    """A decoded fuzz input: the capture to read and what the oracle may assume of it."""

    data: bytes
    variant: int
    seed: Optional[Seed]  # the seed a recipe mutated (None: raw bytes)
    message_level: bool  # whether the clean read of the seed tells which rows are right
    operations: Tuple[str, ...]  # what the recipe did

    @property
    def description(self) -> str:
        if self.seed is None:
            return "raw bytes"
        return f"{self.seed.name}: {', '.join(self.operations) or 'unchanged'}"


def program(seed_name: str, operations: Sequence[Tuple[str, int, int, int]] = (), variant: int = 0) -> bytes:
    """The input bytes of a recipe: the seed, then each (operation name, x, y, z)."""
    ops = b"".join(bytes([OPERATION_CODES[name], x & 255, y & 255, z & 255]) for name, x, y, z in operations)
    return PROGRAM + seed_name.encode() + b"\n" + bytes([variant]) + ops


def raw(capture: bytes, variant: int = 0) -> bytes:
    return RAW + bytes([variant]) + capture


def decode(data: bytes, formats: Optional[Sequence[str]] = None) -> Input:
    """What an input asks to read (raw bytes, or a recipe applied to its seed). A recipe whose
    seed name a mutation changed gets a seed of ``formats`` (default any) by the name's hash."""
    if not data.startswith(PROGRAM):
        return Input(data[2:], data[1] if len(data) > 1 else 0, None, False, ())
    name, _, rest = data[1:].partition(b"\n")
    seed = all_seeds().get(name.decode("latin-1"))
    if seed is None:
        pool = [s for s in all_seeds().values() if formats is None or s.format in formats]
        seed = pool[int.from_bytes(hashlib.sha1(name).digest()[:4], "big") % len(pool)]
    variant = rest[0] if rest else 0
    c = Mutation(split_messages(seed.data, seed.format))
    message_level = True
    for at in range(1, len(rest) - OPERATION_SIZE + 1, OPERATION_SIZE):
        code, x, y, z = rest[at:at + OPERATION_SIZE]
        name, operation, keeps_rows = OPERATIONS[code % len(OPERATIONS)]
        if operation(c, x, y, z):
            c.applied.append(name)
            message_level = message_level and keeps_rows
    capture = c.blocks.join() if c.blocks.records else seed.data
    for kind, x, y, z in c.plain_ops:
        capture = _truncated(capture, x, y) if kind == "truncate" else _flipped(capture, x, y, z)
    if c.compression:
        capture = _compressed(c.compression, capture)
        for kind, x, y, z in c.container_ops:
            if kind == "truncate":
                capture = _truncated(capture, x, y)
            elif kind == "flip":
                capture = _flipped(capture, x, y, z)
            else:
                capture += _bomb_run(c.compression, BOMB_FILLERS[y % len(BOMB_FILLERS)]) * (1 + x % 64)
    return Input(capture, variant, seed, message_level, tuple(c.applied))


# -- the whole read -----------------------------------------------------------------------------------


@dataclass
class Read:
    """One view read in one mode: its rows (each as text, the corrupt record's column left out)
    or its error, and where each row comes from."""

    view: str
    mode: str
    attachment: Optional[str] = None
    error: Optional[str] = None  # "TypeName: first line"
    typed: bool = True  # the error is a CmiError
    where: str = ""  # the innermost frame of the package in the error's traceback
    rows: List[str] = field(default_factory=list)
    places: List[Optional[Tuple[str, int]]] = field(default_factory=list)  # (attachment, row); None: unknown
    corrupt: List[Optional[str]] = field(default_factory=list)  # the _corrupt_record of each row
    lost: Dict[str, tuple] = field(default_factory=dict)  # report text -> (attachment, first, count)
    problems: List[Tuple[str, str]] = field(default_factory=list)  # (check, detail)
    declared: Dict[str, int] = field(default_factory=dict)  # attachment -> declared observations
    names: Dict[str, str] = field(default_factory=dict)  # attachment -> its data set's name

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def trusted(self) -> List[str]:
        return [r for r, c in zip(self.rows, self.corrupt) if c is None]

    def name(self) -> str:
        return f"{self.view}{'[' + self.attachment[:8] + ']' if self.attachment else ''}/{self.mode}"


_REPORTED: Dict[str, object] = {}  # LostRows.text() -> the LostRows, while reading


def _record_lost_rows() -> None:
    """LostRows remember the text they give, so that a report row's counts are read from the
    LostRows itself, not parsed back from its text."""
    from cmi_datasource.engine.recovery import LostRows
    if getattr(LostRows.text, "_recorded", False):
        return
    text = LostRows.text

    def recorded(self) -> str:
        found = text(self)
        _REPORTED[found] = self
        return found
    recorded._recorded = True
    LostRows.text = recorded


def _innermost(e: BaseException) -> str:
    frames = traceback.extract_tb(e.__traceback__)
    ours = [f for f in frames if "cmi_datasource" in f.filename] or frames[-1:]
    return f"{os.path.relpath(ours[-1].filename, ROOT)}:{ours[-1].lineno}" if ours else "?"


def _canonical(row: dict, corrupt_column: str) -> str:
    return repr(tuple(v for k, v in row.items() if k != corrupt_column))


def whole_read(path: str, view_name: str, mode: str, attachment: Optional[str] = None,
               variant: int = 0) -> Read:
    """A view read as ``cmi`` (and Spark) read it: schema, plan, every partition's batches, each
    partition pickled and unpickled on its way as Spark ships it to an executor."""
    from cmi_datasource.cli.reading import load_of
    from cmi_datasource.engine import reading
    from cmi_datasource.engine.plan import DatasetSlice, SlicePack
    from cmi_datasource.errors import CmiError
    result = Read(view_name, mode, attachment)
    _REPORTED.clear()
    options = {"view": view_name, "mode": mode, "attachment": attachment}
    if variant & 1:
        options.update(minPartitions="3", batchRows="4")
    try:
        load = load_of([path], {}, **options)
        plan = reading.plan(load)
        schema = plan.schema
        corrupt_column = load.options.corrupt_column if load.options.corrupt_column in schema.names else None
        for part in plan.parts:
            part = pickle.loads(pickle.dumps(part))
            slices = part.slices if isinstance(part, SlicePack) else (part,) if isinstance(part, DatasetSlice) else ()
            planned = [(s.key_hex, r) for s in slices for r in range(s.first_row, s.last_row)]
            result.names.update((s.key_hex, s.name) for s in slices)
            got = 0
            for batch in reading.read_part(load, part):
                if not batch.schema.equals(schema):
                    result.problems.append(("batch schema differs from the view's",
                                            f"{result.name()}: {batch.schema} against {schema}"))
                for row in batch.to_pylist():
                    result.rows.append(_canonical(row, corrupt_column))
                    result.corrupt.append(row.get(corrupt_column) if corrupt_column else None)
                got += batch.num_rows
            if slices and mode != "dropmalformed":
                if got != len(planned):
                    result.problems.append(("partition rows differ from its plan", f"{result.name()}: "
                                            f"{got} rows returned for the {len(planned)} planned"))
                    planned = [None] * got
                result.places.extend(planned)
            else:
                result.places.extend([None] * got)
    except CmiError as e:
        result.error, result.where = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}", _innermost(e)
    except Exception as e:  # noqa: BLE001 - any other exception is what the oracle looks for
        result.error, result.typed = f"{type(e).__name__}: {str(e)[:300]}", False
        result.where = _innermost(e)
    for text in result.corrupt:
        if text is not None and text in _REPORTED:
            lost = _REPORTED[text]
            result.lost[text] = (lost.error.location.attachment, lost.first, lost.count)
    return result


def _datasets(path: str) -> Dict[str, Optional[int]]:
    """Each dataset attachment and its declared observations (None: unknown), as the
    attachments view lists them."""
    from cmi_datasource.cli.reading import load_of
    from cmi_datasource.engine import reading
    from cmi_datasource.errors import CmiError
    try:
        rows = reading.table(load_of([path], {}, view="attachments")).to_pylist()
    except CmiError:
        return {}
    found: Dict[str, Optional[int]] = {}
    for row in rows:
        if row["kind"] == "dataset":
            declared = row["observations"] if row["observations"] is not None and row["observations"] >= 0 else None
            found.setdefault(row["attachment"], declared)
    return found


def read_everything(path: str, variant: int = 0, modes: Sequence[str] = MODES) -> List[Read]:
    """Every view of the capture in every mode (the dataset view also per data set when several);
    the listing views in ``modes`` only (a replay for coverage reads them once)."""
    _record_lost_rows()
    reads = [whole_read(path, "dataset", mode, None, variant) for mode in MODES]
    for view_name in LISTING_VIEWS:
        reads += [whole_read(path, view_name, mode, None, variant) for mode in modes]
    listing = next(r for r in reads if r.view == "attachments" and r.mode == modes[0])
    datasets = _datasets(path) if listing.ok else {}
    if len(datasets) > 1:
        for key in list(datasets)[:MAX_KEYED_READS]:
            reads += [whole_read(path, "dataset", mode, key, variant) for mode in MODES]
    declared = {key: n for key, n in datasets.items() if n is not None}
    for r in reads:
        r.declared = declared
    return reads


def observation_records(seed: Seed) -> List[int]:
    """Which of the seed's records (``split_messages``) carry observations (record type 3)."""
    from cmi_datasource.encoding import integer_order
    found = []
    for i, r in enumerate(split_messages(seed.data, seed.format).records):
        if r.msg_type != SUBORDINATE or len(r.payload) <= 4 or r.correl_id is None:
            continue
        order = "little" if integer_order(r.encoding or 0) == "<" else "big"
        if int.from_bytes(r.payload[:4], order) == 3 and (any(r.correl_id[16:20]) or not any(r.correl_id)):
            found.append(i)
    return found


# -- the oracle ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Clean:
    """The clean read of a seed: each attachment's trusted rows by row number, and whether its
    FAILFAST read returned them all."""

    rows: Dict[str, Dict[int, str]]
    complete: Dict[str, int]  # attachment -> observations, when FAILFAST read it whole
    by_name: Dict[str, str]  # data set name -> attachment, for names the seed holds once

    def key_of(self, r: Read, key: str) -> Optional[str]:
        """The seed's attachment a mutated capture's attachment is: the same key or, as TIB/RV
        keys are made from the messages' order, the same data set name."""
        return key if key in self.rows else self.by_name.get(r.names.get(key))


def clean_reference(reads: Sequence[Read]) -> Clean:
    rows: Dict[str, Dict[int, str]] = {}
    complete: Dict[str, int] = {}
    names: Dict[str, set] = {}
    for r in reads:
        if r.view != "dataset" or not r.ok or r.mode == "dropmalformed":
            continue
        keyed: Dict[str, Dict[int, str]] = {}
        for row, place, corrupt in zip(r.rows, r.places, r.corrupt):
            if place is not None and corrupt is None:
                keyed.setdefault(place[0], {})[place[1]] = row
        for key, found in keyed.items():
            rows.setdefault(key, {}).update(found)
            names.setdefault(r.names[key], set()).add(key)
            if r.mode == "failfast":
                complete[key] = len(found)
    return Clean(rows, complete, {name: keys.pop() for name, keys in names.items() if len(keys) == 1})


def check(reads: Sequence[Read], clean: Optional[Clean]) -> List[Tuple[str, str]]:
    """The oracle's (check, detail) violations of one input's reads; ``clean`` when the input
    is a message-level mutation of a seed whose clean read tells which rows are right."""
    found: List[Tuple[str, str]] = []
    for r in reads:
        if not r.typed:
            kind = "memory limit exceeded" if r.error.startswith("MemoryError") else f"untyped {r.error.split(':')[0]}"
            found.append((f"{kind} at {r.where} ({r.view}/{r.mode})", r.error))
        found.extend(r.problems)
    groups: Dict[Tuple[str, Optional[str]], Dict[str, Read]] = {}
    for r in reads:
        groups.setdefault((r.view, r.attachment), {})[r.mode] = r
    for (view_name, _attachment), by_mode in groups.items():
        found.extend(_modes_agree(by_mode))
        if view_name == "dataset":
            permissive, failfast = by_mode.get("permissive"), by_mode.get("failfast")
            for r in (permissive, failfast):
                if r is not None and r.ok and r.typed:
                    found.extend(_places_in_order(r))
                    if clean is not None:
                        found.extend(_against_clean(r, clean))
            if permissive is not None and permissive.ok:
                found.extend(_counts_add_up(permissive, clean))
    return found


def _modes_agree(by_mode: Dict[str, Read]) -> List[Tuple[str, str]]:
    f, p, d = (by_mode.get(m) for m in MODES)
    if f is None or p is None or d is None or not (f.typed and p.typed and d.typed):
        return []
    out = []
    name = f.name().rsplit("/", 1)[0]
    if f.ok:
        if not p.ok or p.rows != f.rows or any(c is not None for c in p.corrupt):
            out.append((f"FAILFAST succeeded, PERMISSIVE differs ({name})",
                        f"FAILFAST {len(f.rows)} rows; PERMISSIVE " + (p.error or f"{len(p.rows)} rows, "
                        f"{sum(c is not None for c in p.corrupt)} corrupt: {_first(p.corrupt)}")))
        if not d.ok or d.rows != f.rows:
            out.append((f"FAILFAST succeeded, DROPMALFORMED differs ({name})",
                        f"FAILFAST {len(f.rows)} rows; DROPMALFORMED " + (d.error or f"{len(d.rows)} rows")))
    if p.ok and d.ok and d.rows != p.trusted:
        out.append((f"DROPMALFORMED is not PERMISSIVE without its corrupt rows ({name})",
                    f"PERMISSIVE {len(p.trusted)} trusted rows, DROPMALFORMED {len(d.rows)}"))
    if not p.ok and d.ok:
        out.append((f"PERMISSIVE raised, DROPMALFORMED did not ({name})", p.error))
    if p.ok and not d.ok and p.trusted:
        out.append((f"DROPMALFORMED raised though PERMISSIVE trusts rows ({name})", d.error))
    return out


def _first(values) -> Optional[str]:
    return next((v for v in values if v is not None), None)


def _places_in_order(r: Read) -> List[Tuple[str, str]]:
    last: Dict[str, int] = {}
    for place, corrupt in zip(r.places, r.corrupt):
        if place is None or corrupt is not None:
            continue
        key, row = place
        if row <= last.get(key, -1):
            return [(f"rows out of order or repeated ({r.name()})",
                     f"attachment {key}: row {row} after row {last[key]}")]
        last[key] = row
    return []


def _against_clean(r: Read, clean: Clean) -> List[Tuple[str, str]]:
    """Per attachment, the trusted rows are the clean read's rows, in order (none made up, none
    moved), each at the row number its partition's plan gives it; a FAILFAST read returns them all."""
    out = []
    trusted: Dict[str, List[Tuple[int, str]]] = {}
    for row, place, corrupt in zip(r.rows, r.places, r.corrupt):
        key = clean.key_of(r, place[0]) if place is not None and corrupt is None else None
        if key is not None:
            trusted.setdefault(key, []).append((place[1], row))
    for key, rows in trusted.items():
        truth = sorted(clean.rows[key].items())
        at, renumbered = 0, None
        for claimed, row in rows:
            if clean.rows[key].get(claimed) == row and claimed >= (truth[at][0] if at < len(truth) else claimed + 1):
                number = claimed  # the row at its own number (rows may repeat: prefer it)
            else:
                number = next((n for n, want in truth[at:] if want == row), None)
            if number is None:
                where = clean.rows[key].get(claimed)
                out.append((f"trusted row that the clean read does not have ({r.name()})",
                            f"attachment {key}, returned as row {claimed + 1}: {row[:160]} is no row of the clean "
                            f"read after the rows before it; its row {claimed + 1}: {(where or 'none')[:160]}"))
                break
            if number != claimed and renumbered is None:
                renumbered = (f"trusted row numbered as another row ({r.name()})",
                              f"attachment {key}: the clean read's row {number + 1} is returned as row {claimed + 1}")
            at = next(i for i, (n, _) in enumerate(truth) if n == number) + 1
        else:
            if renumbered is not None:
                out.append(renumbered)
        if r.mode == "failfast" and key in clean.complete and [row for _, row in rows] != [v for _, v in truth]:
            out.append((f"FAILFAST returned other rows than the clean read ({r.name()})",
                        f"attachment {key}: {len(rows)} rows, the clean read {clean.complete[key]}"))
    return out


def _counts_add_up(p: Read, clean: Optional[Clean]) -> List[Tuple[str, str]]:
    """No returned row is also reported lost, and the rows returned plus the rows the reports
    say are lost equal the declared count (when every report gives a count)."""
    out = []
    returned: Dict[str, List[int]] = {}
    for place, corrupt in zip(p.places, p.corrupt):
        if place is not None and corrupt is None:
            returned.setdefault(place[0], []).append(place[1])
    reported: Dict[str, List[tuple]] = {}
    countable = True  # every report names its attachment (and was made by LostRows)
    for text in (c for c in p.corrupt if c is not None):
        lost = p.lost.get(text)
        if lost is None or lost[0] is None:
            countable = False
        else:
            reported.setdefault(lost[0], []).append(lost)
    for key, losses in reported.items():
        rows = set(returned.get(key, []))
        for _, first, count in losses:
            also = rows.intersection(range(first, first + count)) if None not in (first, count) else ()
            if also:
                out.append((f"returned row also reported lost ({p.name()})",
                            f"attachment {key}: row {sorted(also)[0] + 1} returned, observations {first + 1} "
                            f"to {first + count} reported lost"))
    if not countable:
        return out
    for key in set(returned) | set(reported):
        seed_key = clean.key_of(p, key) if clean is not None else None
        declared = clean.complete[seed_key] if seed_key is not None and seed_key in clean.complete \
            else p.declared.get(key)
        losses = reported.get(key, [])
        counts = [count for _, _, count in losses]
        if declared is None or None in counts:
            continue
        lost_rows = sum(counts)
        got = len(returned.get(key, []))
        if got + lost_rows != declared:
            out.append((f"returned plus reported rows differ from the declared count ({p.name()})",
                        f"attachment {key}: {got} returned + {lost_rows} reported lost != {declared} declared; "
                        f"reports: {[c for c in p.corrupt if c][:3]}"))
    return out


# -- the child process ---------------------------------------------------------------------------------


def _address_space() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * resource.getpagesize()


def in_child(work: Callable[[], object], seconds: float = TIME_LIMIT, memory: int = MEMORY_LIMIT):
    """``work()`` in a forked child whose address space may grow by ``memory`` bytes and which
    is killed after ``seconds``: ("ok", result), ("time", seconds), ("signal", number) or
    ("exit", detail)."""
    limit = _address_space() + memory
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 0
        try:
            os.close(r)
            # libFuzzer's handlers (a crash, its -timeout alarm) belong to the fuzzer, not to the child.
            for number in (signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGFPE, signal.SIGILL,
                           signal.SIGALRM, signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2):
                signal.signal(number, signal.SIG_DFL)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            try:
                outcome = ("ok", work())
            except MemoryError:
                outcome = ("exit", "MemoryError outside the reads")
            except BaseException as e:  # noqa: BLE001
                outcome = ("exit", "".join(traceback.format_exception(type(e), e, e.__traceback__))[-2000:])
            payload = pickle.dumps(outcome)
            with os.fdopen(w, "wb") as out:
                out.write(payload)
        except BaseException:  # noqa: BLE001
            code = 3
        finally:
            os._exit(code)
    os.close(w)
    chunks, deadline = [], time.monotonic() + seconds
    timed_out = False
    with os.fdopen(r, "rb") as pipe:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([pipe], [], [], left)
            if ready:
                chunk = os.read(pipe.fileno(), 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if timed_out:
        return ("time", seconds)
    if os.WIFSIGNALED(status):
        return ("signal", os.WTERMSIG(status))
    try:
        return pickle.loads(b"".join(chunks))
    except Exception:  # noqa: BLE001
        return ("exit", f"the child exited with status {os.WEXITSTATUS(status)} and no result")


# -- the target ----------------------------------------------------------------------------------------

_TEMP: Dict[str, object] = {"dir": None, "count": 0}


def _capture_file(data: bytes) -> str:
    """``data`` in a new file (a new name each time: a capture is cached by its file's identity)."""
    if _TEMP["dir"] is None:
        _TEMP["dir"] = tempfile.mkdtemp(prefix="cmi-fuzz-read-")
    _TEMP["count"] += 1
    path = os.path.join(_TEMP["dir"], f"capture-{_TEMP['count']}")
    with open(path, "wb") as f:
        f.write(data)
    return path


@functools.lru_cache(maxsize=None)
def clean_of(seed_name: str) -> Clean:
    """The clean read of a seed (read in this process, once)."""
    path = _capture_file(all_seeds()[seed_name].data)
    try:
        return clean_reference(read_everything(path))
    finally:
        os.remove(path)


def _format_label(found: Input, path: str) -> str:
    from cmi_datasource.containers import COMPRESSIONS
    compression = next((c.name for c in COMPRESSIONS if found.data.startswith(c.magic)), None)
    fmt = found.seed.format if found.seed is not None else _detect(path)
    return fmt + (f"+{compression}" if compression else "")


# A kind of input that blew a limit (time or memory) once is given SHORT_TIME_LIMIT from then on,
# and running past it is no find: fuzzing goes on instead of spending the limit on every variant
# of a blow-up already found (each find of a time limit is a read that took TIME_LIMIT).
SHORT_TIME_LIMIT = 1.0
_BLEW_UP: Dict[str, int] = {}
SLOW_INPUT_SECONDS = 2.0  # an input slower than this is named in the harness log
# Reads that took the child longer are not replayed for coverage: instrumented, they take many
# times as long here, where no limit can stop them (a count of 65536 messages: 1.5 s, then 20 s).
REPLAYED_SECONDS = 1.0


def run_input(data: bytes, replay: bool = True, formats: Optional[Sequence[str]] = None) -> None:
    """One fuzz input: decoded, read whole in a child under the limits and checked by the oracle;
    raises ``Finding`` for the first violation. ``replay``: read again in this process, so that
    atheris sees the code the reads ran (a child's coverage is lost with it)."""
    started = time.monotonic()
    found = decode(data, formats)
    clean = clean_of(found.seed.name) if found.seed is not None and found.message_level else None
    path = _capture_file(found.data)
    kind = _operations_label(found)
    try:
        seconds = SHORT_TIME_LIMIT if _BLEW_UP.get(kind) else TIME_LIMIT
        child_started = time.monotonic()
        outcome = in_child(lambda: check(read_everything(path, found.variant), clean), seconds)
        child_seconds = time.monotonic() - child_started
        label = f"{_format_label(found, path)}; {found.description}"
        if outcome[0] == "time" and seconds < TIME_LIMIT:
            return  # a kind already found to blow up: not found again under the short limit
        if outcome[0] == "time":
            _BLEW_UP[kind] = _BLEW_UP.get(kind, 0) + 1
            raise Finding(f"time limit exceeded ({kind})", f"{label}: the reads took more than {seconds:g} s")
        if outcome[0] == "signal":
            raise Finding(f"the reads died of signal {outcome[1]} ({kind})", label)
        if outcome[0] == "exit":
            raise Finding("the reads' child failed", f"{label}: {outcome[1]}")
        violations = outcome[1]
        if violations:
            if any(check.startswith("memory limit") for check, _ in violations):
                _BLEW_UP[kind] = _BLEW_UP.get(kind, 0) + 1
            signature, detail = violations[0]
            more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
            raise Finding(f"{signature} [{_format_label(found, path)}]", f"{label}: {detail}{more}")
        if replay and child_seconds < REPLAYED_SECONDS:
            read_everything(path, found.variant, modes=MODES[:1])
    finally:
        os.remove(path)
        took = time.monotonic() - started
        if took > SLOW_INPUT_SECONDS:
            print(f"whole_read: slow input, {took:.1f} s: {found.description} ({len(found.data)} bytes)",
                  file=sys.stderr, flush=True)


# Operations that make a read heavy by design: a blow-up is named by the first of them present.
_HEAVY = ("huge_count", "huge_sequence", "bomb")


def _operations_label(found: Input) -> str:
    if found.seed is None:
        return "raw bytes"
    done = set(found.operations) - {"gzip", "zstd"}
    heavy = [op for op in _HEAVY if op in done]
    return heavy[0] if heavy else "+".join(sorted(done)) or "unchanged"


def prepare() -> None:
    """Before fuzzing: the seeds made and each one's clean read done (in this process)."""
    for name in all_seeds():
        clean_of(name)


def whole_read_target(data: bytes, formats: Optional[Sequence[str]] = None) -> None:
    run_input(data, os.environ.get("CMI_FUZZ_REPLAY", "1") != "0", formats)


# -- seeds of the targets ------------------------------------------------------------------------------


def _starting_recipes(names: Sequence[str]) -> List[bytes]:
    """Each seed as it is, with its first observation message dropped and with its first two
    swapped; garbled and duplicated on every third seed (the structural mutator brings every
    operation to every message). The heavy operations go on one seed only: on code where they
    blow up, each costs the time limit."""
    out = []
    for n, name in enumerate(names):
        observations = _observations_of(name) or (5,)
        first, second = observations[0], observations[min(1, len(observations) - 1)]
        out += [program(name), program(name, [("drop", first, 0, 0)]), program(name, [("swap", first, second, 0)])]
        if n % 3 == 0:
            out += [program(name, [("garble", first, n, n)]), program(name, [("duplicate", second, 0, 0)])]
    if names:
        out += [program(names[0], [("huge_count", 0, 0, 0)]), program(names[0], [("huge_sequence", 1, 1, 0)])]
    return out


def target_seeds(formats: Sequence[str], compressed: bool = False) -> List[bytes]:
    """A target's starting corpus: the samples of its formats as raw bytes and recipes on every
    seed of them; ``compressed``: the samples gzip and zstd compressed, recipes that compress,
    cut, flip and bomb."""
    seeds = [s for s in all_seeds().values() if s.format in formats]
    samples = [s for s in seeds if s.name in os.listdir(SAMPLES) and len(s.data) < (32 << 10)]
    if not compressed:
        return [raw(s.data) for s in samples] + _starting_recipes([s.name for s in seeds])
    out = [raw(_compressed(kind, s.data)) for s in samples for kind in ("gzip", "zstd")]
    for n, s in enumerate(seeds):
        kind = ("gzip", "zstd")[n % 2]
        out += [program(s.name, [(kind, 0, 0, 0)]), program(s.name, [("drop", 5 + n, 0, 0), (kind, 0, 0, 0)]),
                program(s.name, [(kind, 0, 0, 0), ("truncate", 128 + n, 0, 0)]),
                program(s.name, [(kind, 0, 0, 0), ("flip", 64 + 8 * n, 0, n)])]
    out.append(program(seeds[0].name, [("zstd", 0, 0, 0), ("bomb", 63, 0, 0)]))
    out.append(program(seeds[0].name, [("gzip", 0, 0, 0), ("bomb", 15, 0, 0)]))
    return out


# -- structure-aware mutation -------------------------------------------------------------------------

MAX_OPERATIONS = 8
# How often the structural mutator picks each operation (bombs: in the compressed target only).
WEIGHTS = {"drop": 4, "garble": 3, "duplicate": 3, "swap": 3, "huge_count": 1, "huge_sequence": 1, "truncate": 1,
           "gzip": 1, "zstd": 1, "flip": 1, "bomb": 0}
_AIMED = ("drop", "garble", "duplicate", "swap", "huge_sequence")  # operations on one message


@functools.lru_cache(maxsize=None)
def _observations_of(name: str) -> Tuple[int, ...]:
    return tuple(observation_records(all_seeds()[name]))


def _new_operation(rng: random.Random, seed: Seed, compressed: bool) -> Tuple[int, int, int, int]:
    weights = dict(WEIGHTS, bomb=1 if compressed else 0)
    name = rng.choices(list(weights), list(weights.values()))[0]
    x, y, z = rng.randrange(256), rng.randrange(256), rng.randrange(256)
    observations = _observations_of(seed.name)
    if name in _AIMED and observations and rng.random() < 0.7:  # mostly at observation messages
        at = rng.randrange(len(observations))
        x = observations[at]
        if name == "swap":
            y = observations[min(at + 1, len(observations) - 1)] if rng.random() < 0.7 else y
    return OPERATION_CODES[name], x, y, z


def mutate(data: bytes, max_size: int, seed: int, formats: Optional[Sequence[str]] = None,
           compressed: bool = False) -> bytes:
    """atheris' custom mutator: a recipe changed by one operation (added, replaced or removed),
    moved to another seed or variant, aiming mostly at observation messages; otherwise (and for
    raw captures) atheris' own byte mutations."""
    import atheris
    rng = random.Random(seed)
    if not data.startswith(PROGRAM) or rng.random() < 0.3:
        return atheris.Mutate(data, max_size)
    found = decode(data, formats)
    name, _, rest = data[1:].partition(b"\n")
    variant = rest[0] if rest else 0
    ops = [tuple(rest[at:at + OPERATION_SIZE]) for at in range(1, len(rest) - OPERATION_SIZE + 1, OPERATION_SIZE)]
    seed_used = found.seed
    action = rng.random()
    if action < 0.45 and len(ops) < MAX_OPERATIONS:
        ops.insert(rng.randrange(len(ops) + 1), _new_operation(rng, seed_used, compressed))
    elif action < 0.65 and ops:
        ops[rng.randrange(len(ops))] = _new_operation(rng, seed_used, compressed)
    elif action < 0.75 and ops:
        del ops[rng.randrange(len(ops))]
    elif action < 0.9:
        pool = [s for s in all_seeds().values() if formats is None or s.format in formats]
        seed_used = rng.choice(pool)
    else:
        variant ^= 1
    out = PROGRAM + seed_used.name.encode() + b"\n" + bytes([variant]) + b"".join(bytes(op) for op in ops)
    return out[:max_size]


def main(argv: Sequence[str]) -> int:
    import argparse
    parser = argparse.ArgumentParser(description="Replay whole-read fuzz inputs and print what the oracle finds.")
    parser.add_argument("inputs", nargs="+")
    parser.add_argument("--target", choices=sorted(TARGET_FORMATS),
                        help="the target that kept the inputs (its seeds stand in for a mutated seed name); "
                             "default: the directory the input is in, as fuzz/crashes/<target>/")
    parser.add_argument("--write", help="write the (first) input's capture here instead")
    args = parser.parse_args(argv)
    status = 0
    for name in args.inputs:
        target = args.target or os.path.basename(os.path.dirname(os.path.abspath(name)))
        formats = TARGET_FORMATS[target][0] if target in TARGET_FORMATS else None
        with open(name, "rb") as f:
            data = f.read()
        found = decode(data, formats)
        if args.write:
            with open(args.write, "wb") as out:
                out.write(found.data)
            print(f"{found.description} -> {args.write}")
            return 0
        started = time.monotonic()
        _BLEW_UP.clear()  # each input replayed under the full limits
        try:
            run_input(data, replay=False, formats=formats)
            print(f"{name}: no finding ({found.description}; the reads took {time.monotonic() - started:.1f} s)")
        except Finding as e:
            print(f"{name}: {e}")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
