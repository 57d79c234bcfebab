"""Shared by the benchmark scripts: timing, the memory sampler of the Spark processes, and the rows
and tables of the report (bench/results.md)."""
from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def best_of(fn, repeat: int, setup=None, warmup: bool = True, inputs: Sequence[str] = ()) -> float:
    """Fastest of ``repeat`` runs of ``fn``, after one warm-up run unless ``warmup`` is false, in
    seconds. With ``setup``, each run is ``fn(setup())`` and ``setup`` is not timed (a fresh copy
    of a file, an output directory of its own). ``inputs``: the files ``fn`` reads
    (``best_of_each``)."""
    return best_of_each({"": fn}, repeat, setup, warmup, {"": inputs})[""]


def best_of_each(fns: Dict[str, Callable[..., object]], repeat: int,
                 setup: Optional[Callable[[], object]] = None, warmup: bool = True,
                 inputs: Optional[Dict[str, Sequence[str]]] = None) -> Dict[str, float]:
    """``best_of`` for several things measured against each other: a warm-up of each, then
    ``repeat`` rounds that run each once, in turn. Each one's best then comes from the same
    stretch of time as the others': measured one after the other, a drift of the machine between
    them (Spark's JVM, the page cache, other work) would move their ratio.

    ``inputs``: the files (or folders of files) each one reads, read through the page cache,
    untimed, before each of its runs (``make_resident``), so that every side's timed read is warm."""
    def run(name: str) -> float:
        make_resident((inputs or {}).get(name, ()))
        args = () if setup is None else (setup(),)
        t0 = time.perf_counter()
        fns[name](*args)
        return time.perf_counter() - t0

    if warmup:
        for name in fns:
            run(name)
    best = {name: float("inf") for name in fns}
    for _ in range(repeat):
        for name in fns:
            best[name] = min(best[name], run(name))
    return best


def make_resident(paths: Iterable[str]) -> None:
    """Read the files at ``paths`` (files, or folders of files) through the page cache.

    Why, before each timed warm read: this machine's kernel pages out file pages that have gone
    unread for about a minute (a DAMON ``pageout`` scheme over unmapped pages: regions read at
    most once in its 5 s sampling window, 12 windows running), and a file read only every few
    seconds, as each side of ``best_of_each`` is, can count as unread. Between two warm reads,
    1-2% of a file was dropped, and read back from disk (330 MB/s here) inside the next timed run;
    the larger the file, the more: the 5M dump (1.4 GB) against its 270 MB of Parquet. Making
    every side's input resident before its run takes nothing out of what any side does when timed."""
    buffer = bytearray(8 << 20)
    for path in paths:
        names = ([os.path.join(folder, name) for folder, _, files in os.walk(path) for name in sorted(files)]
                 if os.path.isdir(path) else [path])
        for name in names:
            with open(name, "rb", buffering=0) as f:
                while f.readinto(buffer):
                    pass


def _processes() -> Dict[int, Tuple[int, int]]:
    """Every process readable now: pid -> (parent pid, RSS in KiB), from /proc/<pid>/stat."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # After the command name in parentheses (which may hold spaces): state, ppid, ... rss (24th field).
        fields = stat[stat.rindex(b")") + 2:].split()
        found[int(pid)] = (int(fields[1]), int(fields[21]) * PAGE_KIB)
    return found


def _descendants(processes: Dict[int, Tuple[int, int]], root: int) -> Iterator[int]:
    children = {}
    for pid, (parent, _) in processes.items():
        children.setdefault(parent, []).append(pid)
    todo = list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        yield pid
        todo.extend(children.get(pid, ()))


def _command_line(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


class PeakRss:
    """Peak RSS of this process's Spark processes while the block runs (sampled every 50 ms), in MB:

    - ``worker_mb``: the largest Spark Python worker. The largest single process, not a sum:
      forked workers share pages with the daemon, so a sum would count the same memory several times;
    - ``driver_mb``: the driver, this Python process and its Spark JVM together.

    Only this process's descendants count, not the Spark sessions of other users of the machine."""

    def __init__(self):
        self.worker_mb = 0.0
        self.driver_mb = 0.0
        self._kind = {}  # pid -> "jvm", "worker" or None: a process's command line does not change
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _kind_of(self, pid: int):
        if pid not in self._kind:
            command = _command_line(pid)
            self._kind[pid] = ("jvm" if b"org.apache.spark.deploy.SparkSubmit" in command else
                               "worker" if b"pyspark.daemon" in command or b"pyspark.worker" in command else None)
        return self._kind[pid]

    def sample(self) -> Tuple[float, float]:
        """(largest Python worker, driver) RSS now, in MB."""
        processes = _processes()
        me = os.getpid()
        worker = 0
        driver = processes.get(me, (0, 0))[1]
        for pid in _descendants(processes, me):
            kind = self._kind_of(pid)
            if kind == "worker":
                worker = max(worker, processes[pid][1])
            elif kind == "jvm":
                driver += processes[pid][1]
        return worker / 1024, driver / 1024

    def _run(self):
        while not self._stop.is_set():
            worker, driver = self.sample()
            self.worker_mb = max(self.worker_mb, worker)
            self.driver_mb = max(self.driver_mb, driver)
            time.sleep(0.05)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


@dataclass
class Target:
    """One row of the Targets table: met when ``ratio`` <= ``limit``. A target with an absolute
    limit (seconds, MB) has the measure divided by that limit as its ratio, and 1 as its limit.
    A measure without a limit (``limit`` None, e.g. issue 29's stream against batch) shows its
    ratio and is neither met nor missed."""
    name: str
    limit: Optional[float]
    basis: str  # what the ratio divides
    measured: str  # the measures behind the ratio, or why there is none
    ratio: Optional[float] = None

    def line(self) -> str:
        if self.ratio is None:
            limit = "—" if self.limit is None else f"<= {self.limit:g} ({self.basis})"
            return f"| {self.name} | {limit} | {self.measured} | — | — |"
        if self.limit is None:
            return f"| {self.name} | none ({self.basis}) | {self.measured} | {self.ratio:.2f} | — |"
        met = "yes" if self.ratio <= self.limit else "**no**"
        return f"| {self.name} | <= {self.limit:g} ({self.basis}) | {self.measured} | {self.ratio:.2f} | {met} |"


TARGETS_HEADER = ["| target | limit | measured | ratio | met |", "|---|---|---|---|---|"]


@dataclass
class Outcome:
    """What a section of bench.py measured: its rows of the Targets table and its own table."""
    targets: List[Target]
    details: List[str] = field(default_factory=list)  # markdown: a heading, a table, notes


def table(title: str, header: List[str], rows: List[List[str]], *notes: str) -> List[str]:
    return (["", f"## {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(row) + " |" for row in rows] + [line for note in notes for line in ("", note)])


def failed(section: str, error: BaseException) -> Outcome:
    """The Targets row of a section that raised: the run goes on with the next section."""
    message = re.sub(r"\s+", " ", f"{type(error).__name__}: {error}").replace("|", "/")[:300]
    return Outcome([Target(f"{section} (section failed)", None, "", message)])
