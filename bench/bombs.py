"""Issue 26's decompression bombs (finding 3), built and read through the CLI and through Spark.

    .venv/bin/python bench/bombs.py [--gib 3] [--dir DIR] [--no-spark]

The bombs, each the bundled ``nightly_batch.dmp`` (74 KB, 33 messages) followed by:

- ``zeros.zst``: GIB GiB of NUL bytes, Zstandard (99 KB for 3 GiB);
- ``zeros.gz``: the same, gzip;
- ``hexline.zst``: one X line of GIB GiB of hex digits, no line end, Zstandard.

Each must end within 60 s, under 1.5 GiB, with a typed error or a correct result. Every CLI
command runs in a fresh process (``cmi ls``, ``messages``, ``extract`` in each mode) and reports
its wall time, its peak memory (VmHWM) and exit code; through Spark (``local[2]``, one session),
each view is read (``messages``, ``attachments``, the damaged data set in PERMISSIVE and
DROPMALFORMED) and the peak memory of the largest Python worker is sampled (``PeakRss``). The
bombs are built a piece at a time by the compression libraries, never held whole.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "sample_queues", "nightly_batch.dmp")
PIECE = 16 << 20
BOUND_MB = 1536
TIME_LIMIT_S = 60


def compressed(path, head: bytes, tail_byte: bytes, tail_bytes: int, kind: str) -> str:
    """``head`` then ``tail_bytes`` of ``tail_byte``, compressed by ``kind``'s own library (zstd or
    gzip) a piece at a time: never held whole."""
    import zstandard
    piece = tail_byte * PIECE
    with open(path, "wb") as raw:
        out = (zstandard.ZstdCompressor(level=3).stream_writer(raw) if kind == "zstd"
               else gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1))
        with out:
            out.write(head)
            for at in range(0, tail_bytes, PIECE):
                out.write(piece[:min(PIECE, tail_bytes - at)])
    return str(path)


def build(directory: str, gib: float) -> dict:
    """The bombs in ``directory`` (kept there: built once): name -> path."""
    with open(SAMPLE, "rb") as f:
        sample = f.read()
    made = {}
    for name, head, byte, kind in (("zeros.zst", sample, b"\0", "zstd"), ("zeros.gz", sample, b"\0", "gzip"),
                                   ("hexline.zst", sample + b"X ", b"0", "zstd")):
        path = made[name] = os.path.join(directory, name)
        if not os.path.exists(path):
            compressed(path, head, byte, int(gib * (1 << 30)), kind)
    return made


CLI = """
import contextlib, io, json, sys, time
t0 = time.perf_counter()
from cmi_datasource.cli import main
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    try:
        main(%r)
        code = 0
    except SystemExit as e:
        code = e.code
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"code": code, "seconds": time.perf_counter() - t0, "peak_mb": peak / 1024,
                  "out": out.getvalue()[-2000:], "err": err.getvalue()[-2000:]}))
"""


def cli_runs(path: str, scratch: str):
    """(command, outcome) of each CLI command on ``path``, each in a fresh process."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = os.path.join(scratch, "extracted")
    for args in (["ls", path], ["messages", path], ["extract", path, out + "-permissive", "--mode", "PERMISSIVE"],
                 ["extract", path, out + "-dropmalformed", "--mode", "DROPMALFORMED"],
                 ["extract", path, out + "-failfast"]):
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", CLI % (args,)], env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if done.returncode != 0:
            yield args, {"code": "crash", "seconds": wall, "peak_mb": 0, "err": done.stderr[-2000:]}
            continue
        found = json.loads(done.stdout.strip().splitlines()[-1])
        found["seconds"] = wall
        yield args, found


def outcome_of(found: dict) -> str:
    """What a command ended with, in a few words: its summary line, or the error class and problem."""
    if found["code"] == 0:
        lines = [line for line in found["out"].splitlines() if line.strip()]
        return lines[-1][:90] if lines else "(no output)"
    text = found["err"].strip().splitlines()
    return (text[0][:110] if text else "") + f" (exit {found['code']})"


def spark_runs(path: str):
    """(what was read, seconds, largest Python worker MB, outcome) of each Spark read of ``path``."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_CONF_DIR", os.path.join(ROOT, "conf"))
    sys.path.insert(0, ROOT)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from pyspark.sql import SparkSession

    from cmi_datasource.spark.errors import unwrap
    from common import PeakRss
    spark = SparkSession.builder.master("local[2]").appName("cmi-bombs").config("spark.ui.enabled", "false") \
        .getOrCreate()
    try:
        for label, options in (("messages", {"view": "messages"}), ("attachments", {"view": "attachments"}),
                               ("FIN.RETURNS PERMISSIVE", {"dataset": "FIN.RETURNS", "mode": "PERMISSIVE"}),
                               ("FIN.RETURNS DROPMALFORMED", {"dataset": "FIN.RETURNS", "mode": "DROPMALFORMED"}),
                               ("FIN.DAILY_SALES", {"dataset": "FIN.DAILY_SALES"})):
            t0 = time.perf_counter()
            with PeakRss() as peak:
                try:
                    frame = spark.read.format("cmi").options(**options).load(path)
                    rows = frame.collect()
                    problems = [r["problem"] for r in rows if "problem" in r and r["problem"]]
                    corrupt = [r["_corrupt_record"] for r in rows if "_corrupt_record" in r and r["_corrupt_record"]]
                    outcome = f"{len(rows)} rows" + (f"; problem: {problems[-1][:70]}" if problems else "") + \
                        (f"; _corrupt_record: {corrupt[-1][:70]}" if corrupt else "")
                except Exception as e:  # noqa: BLE001 -- what the reader is shown, typed
                    typed = unwrap(e)
                    outcome = (f"{type(typed).__name__}: {typed.problem if hasattr(typed, 'problem') else typed}"[:110]
                               if typed else f"untyped {type(e).__name__}: {str(e)[:90]}")
            yield label, time.perf_counter() - t0, peak.worker_mb, outcome
    finally:
        spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gib", type=float, default=3.0, help="GiB of zeros or hex digits after the dump")
    parser.add_argument("--dir", help="where the bombs are built (and kept); a temporary directory by default")
    parser.add_argument("--no-spark", action="store_true", help="the CLI only")
    args = parser.parse_args()
    directory = args.dir or tempfile.mkdtemp(prefix="cmi-bombs-")
    os.makedirs(directory, exist_ok=True)
    bombs = build(directory, args.gib)
    print(f"| bomb ({args.gib:g} GiB) | how | s | peak MB | outcome |\n|---|---|---:|---:|---|")
    failures = []
    for name, path in bombs.items():
        scratch = tempfile.mkdtemp(prefix="cmi-bombs-out-")
        for command, found in cli_runs(path, scratch):
            how = "cmi " + " ".join(a for a in command if a != path and not a.startswith(scratch))
            print(f"| {name} ({os.path.getsize(path) // 1024} KB) | `{how}` | {found['seconds']:.1f} | "
                  f"{found['peak_mb']:.0f} | {outcome_of(found)} |", flush=True)
            if found["code"] == "crash" or found["seconds"] > TIME_LIMIT_S or found["peak_mb"] > BOUND_MB:
                failures.append((name, how))
        if not args.no_spark:
            for label, seconds, worker_mb, outcome in spark_runs(path):
                print(f"| {name} | Spark {label} | {seconds:.1f} | {worker_mb:.0f} (worker) | {outcome} |", flush=True)
                if seconds > TIME_LIMIT_S or worker_mb > BOUND_MB or outcome.startswith("untyped"):
                    failures.append((name, label))
    print("\nwithin 60 s and 1.5 GiB, typed:", "all" if not failures else f"NOT {failures}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
