"""Helpers the tests share: CMI traffic as IBM MQ would carry it, built in memory; the processes a
process started (to kill a driver as a crash would)."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import List, Sequence, Tuple

import pyarrow as pa

from cmi_datasource.cmi.assembly import Attachment, assemble
from cmi_datasource.engine.capture import Capture
from cmi_datasource.engine.plan import DatasetSlice, dataset_slices, whole_run
from cmi_datasource.engine.write import DatasetToWrite, WriteOptions, build_messages
from cmi_datasource.messages import PhysicalMessage
from cmi_datasource.transports.mq.message import mq_message
from cmi_datasource.transports.mq.mqmd import MQMD
from cmi_datasource.transports.mq.dmpmqmsg import write_dump
from cmi_datasource.transports.mq.transport import mq_pairs

MEMORY_SOURCE = "memory.dmp"


def build_mq_messages(*args, **kwargs) -> List[Tuple[MQMD, bytes]]:
    """``engine.write.build_messages`` as the (MQMD, payload) pairs an MQ capture holds."""
    return mq_pairs(build_messages(*args, **kwargs))


def physical(messages: Sequence[Tuple[MQMD, bytes]], source: str = MEMORY_SOURCE) -> List[PhysicalMessage]:
    """(MQMD, payload) pairs -> PhysicalMessage objects as a dump of them would give."""
    out, at = [], 0
    for i, (d, p) in enumerate(messages):
        out.append(mq_message(d, p, source, i, at, at + 100 + 2 * len(p)))
        at += 101 + 2 * len(p)
    return out


def capture_of(messages: Sequence[PhysicalMessage]) -> Capture:
    """A capture of messages held in memory, as if read from one dmpmqmsg dump."""
    messages = list(messages)
    return Capture([MEMORY_SOURCE], messages, assemble(messages),
                   formats={source: "dmpmqmsg" for source in {m.source for m in messages} | {MEMORY_SOURCE}})


def slices_of(capture: Capture, att: Attachment, target_bytes: int) -> List[DatasetSlice]:
    """The slices a read plans for a complete, undamaged dataset attachment, of about
    ``target_bytes`` of observations each."""
    return dataset_slices(capture, att, whole_run(capture, att), target_bytes)


# 1000-byte messages of 31-byte observations (see conftest's ``big_dump``): records straddle
# nearly every message.
STRADDLING_ROWS = 20_000
STRADDLING_TABLE = pa.table({
    "ID": pa.array([float(i) for i in range(STRADDLING_ROWS)]),
    "CODE": pa.array([f"c{i % 97:03d}-{'ü' * (i % 3)}" for i in range(STRADDLING_ROWS)]),
    "X": pa.array([i * 0.5 for i in range(STRADDLING_ROWS)]),
})


def latin1_dump_at(path) -> str:
    """A data set written in Latin-1 (CCSID 819) over several messages, as a dmpmqmsg dump at
    ``path``: read as UTF-8 (option ccsid 1208) its values fail, in a task."""
    table = pa.table({"S": pa.array(["café"] * 50 + ["naïve"] * 50)})
    messages = build_mq_messages([DatasetToWrite(table, "LIB", "LATIN")],
                                 options=WriteOptions(ccsid=819, max_message_bytes=512))
    with open(path, "wb") as f:
        write_dump(f, messages)
    return str(path)


def descendants(pid: int) -> list:
    """The processes started by ``pid``, its children's children included (Linux /proc)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def wait_for(condition, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def kill_tree(process: subprocess.Popen) -> None:
    """SIGKILL ``process`` and every process it started at once, as in a crash, and reap it."""
    for pid in [process.pid] + descendants(process.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.communicate()
