"""The atheris harness of one fuzz target (``fuzz/targets.py`` holds the table of them).

    .venv/bin/python fuzz/harness.py TARGET [libFuzzer options...] [corpus directories...]

``make fuzz`` (``fuzz/run.py``) starts one per target. Every input goes through
``targets.run_checked``: a ``CmiError`` is bad input handled as designed; any other exception
and a traced-memory peak above the bound are bugs. A bug does not stop the run: its input and
traceback are kept under ``$CMI_FUZZ_CRASHES`` (the smallest input per distinct bug) and
fuzzing goes on. A hang (libFuzzer's ``-timeout``) or a crash of the process itself (a numba
kernel's segfault) does stop it, leaving libFuzzer's artifact; ``run.py`` restarts it.
Counts go to ``$CMI_FUZZ_STATS`` (JSON) about once a second.

The package is imported under atheris' instrumentation for coverage feedback, except the
numba kernels: numba compiles them from the functions' original bytecode (see ``_patch_numba``).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def _patch_numba() -> None:
    """numba's ``njit`` given the original code of a function atheris instrumented: the inserted
    coverage calls are Python that numba cannot compile."""
    import numba

    compiled_sources = {}

    def original(code):
        tree = compiled_sources.get(code.co_filename)
        if tree is None:
            with open(code.co_filename, "rb") as f:
                tree = compiled_sources[code.co_filename] = compile(f.read(), code.co_filename, "exec",
                                                                    dont_inherit=True)
        pending = [tree]
        while pending:
            found = pending.pop()
            if found.co_qualname == code.co_qualname and found.co_firstlineno == code.co_firstlineno:
                return found
            pending.extend(c for c in found.co_consts if hasattr(c, "co_code"))
        return code

    njit = numba.njit

    def restoring(*args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            args[0].__code__ = original(args[0].__code__)
            return njit(args[0])
        decorate = njit(*args, **kwargs)

        def apply(function):
            function.__code__ = original(function.__code__)
            return decorate(function)
        return apply

    numba.njit = restoring


# The layers above the engine draw or hand over what the parsers made; none parses bytes.
_NOT_PARSERS = ("cmi_datasource.spark", "cmi_datasource.cli", "cmi_datasource.explore")


def _import_instrumented() -> None:
    import atheris
    import importlib
    import pkgutil
    _patch_numba()
    # fuzz.native_diff: its branches (which kernel, which kind of call) are the C kernels' coverage
    # atheris can see, the C itself being compiled without it.
    with atheris.instrument_imports(include=["cmi_datasource", "fuzz.native_diff"]):
        import cmi_datasource
        import fuzz.native_diff  # noqa: F401
        for module in pkgutil.walk_packages(cmi_datasource.__path__, "cmi_datasource."):
            if not module.name.startswith(_NOT_PARSERS):
                importlib.import_module(module.name)


class Harness:
    def __init__(self, name: str, stats_path: str, crashes_dir: str):
        from fuzz import targets
        self.targets = targets
        self.target = targets.ALL_TARGETS[name]
        self.stats_path = stats_path
        self.crashes_dir = crashes_dir
        self.inputs = 0
        self.started = None
        self.flushed = 0.0
        self.crashes = {}  # signature -> {"count", "size", "file", "summary"}

    def warm_up(self) -> None:
        """Every seed once before fuzzing: numba kernels loaded, codecs and lazy imports done, so
        that the memory bound measures inputs, not first calls."""
        if self.target.prepare is not None:
            self.target.prepare()
            return
        for seed in self.targets.seeds_of(self.target.name):
            try:
                self.target.run(seed)
            except Exception:
                pass

    def one_input(self, data: bytes) -> None:
        if self.started is None:
            self.started = time.monotonic()
        self.inputs += 1
        try:
            self.targets.run_checked(self.target, data)
        except Exception as e:  # CmiError is swallowed by run_checked: this is a bug
            self.record(e, data)
        now = time.monotonic()
        if now - self.flushed > 1.0:
            self.flush(now)

    def signature(self, e: BaseException) -> str:
        if getattr(e, "signature", None):  # the whole-read oracle names what it found
            return e.signature
        frames = traceback.extract_tb(e.__traceback__)
        ours = [f for f in frames if "cmi_datasource" in f.filename] or frames[-1:]
        where = f"{os.path.relpath(ours[-1].filename, ROOT)}:{ours[-1].lineno}" if ours else "?"
        if isinstance(e, self.targets.MemoryBoundExceeded):
            where = "memory bound"
        return f"{type(e).__name__} at {where}"

    def record(self, e: BaseException, data: bytes) -> None:
        sig = self.signature(e)
        known = self.crashes.get(sig)
        if known is None or len(data) < known["size"]:
            os.makedirs(self.crashes_dir, exist_ok=True)
            stem = os.path.join(self.crashes_dir, hashlib.sha1(sig.encode()).hexdigest()[:12])
            with open(stem + ".bin", "wb") as f:
                f.write(data)
            with open(stem + ".txt", "w") as f:
                f.write(f"target: {self.target.name}\nsignature: {sig}\ninput: {stem}.bin ({len(data)} bytes)\n\n")
                f.write("".join(traceback.format_exception(type(e), e, e.__traceback__)))
            summary = f"{type(e).__name__}: {str(e)[:200]}"
            self.crashes[sig] = {"count": (known or {}).get("count", 0), "size": len(data), "file": stem + ".bin",
                                 "summary": summary}
            if known is None:
                print(f"\n=== {self.target.name}: new bug: {sig}: {summary}\n    input kept in {stem}.bin",
                      file=sys.stderr, flush=True)
        self.crashes[sig]["count"] += 1
        self.flush(time.monotonic())

    def flush(self, now: float) -> None:
        self.flushed = now
        stats = {"target": self.target.name, "inputs": self.inputs,
                 "seconds": now - self.started if self.started is not None else 0.0, "crashes": self.crashes}
        tmp = self.stats_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(stats, f)
        os.replace(tmp, self.stats_path)


def main(argv) -> None:
    if len(argv) < 2 or argv[1].startswith("-"):
        sys.exit("usage: harness.py TARGET [libFuzzer options] [corpus dirs]")
    name = argv[1]
    import atheris
    _import_instrumented()
    from fuzz import targets
    if name not in targets.ALL_TARGETS:
        sys.exit(f"unknown target {name!r}; targets: {', '.join(targets.ALL_TARGETS)}")
    out = os.path.join(HERE, "out", name)
    harness = Harness(name, os.environ.get("CMI_FUZZ_STATS", os.path.join(out, "stats.json")),
                      os.environ.get("CMI_FUZZ_CRASHES", os.path.join(HERE, "crashes", name)))
    os.makedirs(os.path.dirname(harness.stats_path), exist_ok=True)
    harness.warm_up()
    if harness.target.traced:
        import tracemalloc
        tracemalloc.start(1)  # once for the run: run_checked measures each input's peak
    harness.flush(time.monotonic())
    if harness.target.mutate is not None:  # structure-aware mutations beside atheris' own
        atheris.Setup([argv[0]] + argv[2:], harness.one_input, custom_mutator=harness.target.mutate)
    else:
        atheris.Setup([argv[0]] + argv[2:], harness.one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
