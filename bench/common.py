"""Shared by the benchmark scripts: timing and the Python-worker memory sampler."""
from __future__ import annotations

import os
import threading
import time


def best_of(fn, repeat: int) -> float:
    """Fastest of ``repeat`` runs of ``fn`` after one warm-up run, in seconds."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


class PeakWorkerRss:
    """Largest RSS of any Spark Python worker process while the block runs (sampled every 50 ms).

    The largest single process, not a sum: forked workers share pages with the daemon, so a
    sum would count the same memory several times."""

    def __init__(self):
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def sample() -> float:
        largest = 0
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read()
                if b"pyspark.daemon" not in cmd and b"pyspark.worker" not in cmd:
                    continue
                with open(f"/proc/{pid}/status") as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            largest = max(largest, int(line.split()[1]))
            except OSError:
                continue
        return largest / 1024

    def _run(self):
        while not self._stop.is_set():
            self.peak_mb = max(self.peak_mb, self.sample())
            time.sleep(0.05)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
