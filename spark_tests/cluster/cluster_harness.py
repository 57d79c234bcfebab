"""A Spark standalone cluster on loopback for the tests, and the package as a wheel for its executors.

Everything here is started by the tests and stopped by them, failures included:

- ``build_wheel``: the project's wheel, built offline from a copy of the checkout (the checkout
  gets no ``build/`` or ``egg-info`` from it, and stale files there cannot leak into the wheel).
- ``executor_venv``: what a cluster node's Python is: a venv holding the main venv's packages
  (pyspark, numpy, numba, ...: symlinked, nothing is downloaded) except ``cmi_datasource`` and
  ``pyspark_cmi``, which come from the wheel (with the C kernels it compiles), installed with pip.
  Its site-packages are writable, so numba caches the kernels it compiles in ``__pycache__`` beside
  the installed modules.
- ``StandaloneCluster``: a master and workers started with Spark's own launcher
  (``bin/spark-class ...Master`` / ``...Worker``) of the pip-installed pyspark, on free 127.0.0.1
  ports, each worker with its own work dir, ``SPARK_LOCAL_DIRS``, ``TMPDIR`` (so its executors'
  Python workers write their temporary files there) and disk cache (``CMI_DATASOURCE_CACHE``: the
  nodes share this machine's home, where the cache would otherwise be).

Every process gets the environment variable ``CMI_CLUSTER_TEST=<token>``, which their children
(executors, Python daemons, which start process groups of their own) inherit: ``stop`` kills the
launched process groups, then any process left carrying the token.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parents[2]
MARKER = "CMI_CLUSTER_TEST"
CAPTURE_DATASET = "LIB.SALES"  # the dataset of the capture the cluster test reads
# Names of the main venv's site-packages an executor must not see: the package comes from the wheel.
HIDDEN_FROM_EXECUTORS = ("cmi_datasource", "pyspark_cmi", "__pycache__")
# Environment variables of the test run that would make a child import the checkout, or pick a
# Python or a Spark configuration other than the one it is given.
SCRUBBED = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON",
            "PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR", "SPARK_LOCAL_DIRS", "SPARK_WORKER_DIR", "TMPDIR",
            "NUMBA_CACHE_DIR", "VIRTUAL_ENV")


def spark_home() -> Path:
    import pyspark
    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(**extra: str) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    env.update(extra)
    return env


def tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


# ----------------------------------------------------------------------------------------------
# The wheel and the executors' Python


def build_wheel(out_dir: Path) -> Path:
    """The project's wheel, built by its own backend (setuptools, from the venv: offline, no build
    isolation) from a copy of the checkout's sources."""
    import setuptools
    if int(setuptools.__version__.split(".")[0]) < 77:
        raise RuntimeError(f"setuptools {setuptools.__version__} in {sys.prefix} cannot build this project "
                           "(pyproject's SPDX license needs setuptools>=77, as its build-system says): "
                           "the test extras must install setuptools>=77")
    src = out_dir / "src"
    src.mkdir(parents=True)
    for name in ("pyproject.toml", "setup.py", "README.md", "pyspark_cmi.py"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "cmi_datasource", src / "cmi_datasource",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc", "*.so"))
    dist = out_dir / "dist"
    run = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-index",
                          "--no-build-isolation", "--wheel-dir", str(dist), str(src)],
                         env=clean_env(), cwd=out_dir, capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        raise RuntimeError(f"building the wheel failed:\n{run.stdout}\n{run.stderr}")
    wheels = sorted(dist.glob("cmi_datasource-*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"expected one wheel in {dist}, found {wheels}")
    return wheels[0]


def site_packages(prefix: Path) -> Path:
    return prefix / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"


IMPORT_LOG = "cmi-imports.log"
# Test instrumentation of the nodes' Python (a .pth runs it at start-up): each import of
# cmi_datasource appends where it came from to $TMPDIR/cmi-imports.log. It sees every Python
# worker, those reading for a discovered data source included, without touching the package.
IMPORT_PROBE = f'''"""Logs each import of cmi_datasource (cluster test instrumentation)."""
import importlib.machinery, json, os, sys, tempfile


class _CmiImportProbe:
    def find_spec(self, name, path=None, target=None):
        if name != "cmi_datasource":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        line = json.dumps({{"pid": os.getpid(), "origin": spec and spec.origin, "cwd": os.getcwd(),
                           "pythonpath": os.environ.get("PYTHONPATH", ""), "executable": sys.executable}})
        with open(os.path.join(tempfile.gettempdir(), "{IMPORT_LOG}"), "a") as f:
            f.write(line + "\\n")
        return spec


sys.meta_path.insert(0, _CmiImportProbe())
'''


def executor_venv(prefix: Path, wheel: Path) -> Path:
    """A venv whose Python sees every package of the main venv except this project's, which it
    gets by ``pip install`` of ``wheel``; returns its Python. Its imports of cmi_datasource are
    logged (``IMPORT_PROBE``)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True, env=clean_env(),
                   timeout=120)
    main_site = Path(next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()
                          and Path(p).resolve().is_relative_to(Path(sys.prefix).resolve())))
    target = site_packages(prefix)
    for entry in main_site.iterdir():
        if entry.name.startswith(HIDDEN_FROM_EXECUTORS) or (target / entry.name).exists():
            continue
        (target / entry.name).symlink_to(entry)
    (target / "_cmi_import_probe.py").write_text(IMPORT_PROBE)
    (target / "_cmi_import_probe.pth").write_text("import _cmi_import_probe\n")
    python = prefix / "bin" / "python"
    run = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
                          "--no-deps", "--no-index", "--disable-pip-version-check", str(wheel)],
                         env=clean_env(), capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        raise RuntimeError(f"installing the wheel into {prefix} failed:\n{run.stdout}\n{run.stderr}")
    return python


# ----------------------------------------------------------------------------------------------
# The cluster


@dataclass
class Worker:
    name: str
    directory: Path
    ui_port: int

    @property
    def work_dir(self) -> Path:  # executors' working directories: <work_dir>/<app id>/<executor id>
        return self.directory / "work"

    @property
    def tmp_dir(self) -> Path:  # TMPDIR of the worker, its executors and their Python workers
        return self.directory / "tmp"

    @property
    def local_dir(self) -> Path:  # SPARK_LOCAL_DIRS: shuffle and block files
        return self.directory / "local"

    @property
    def cache_dir(self) -> Path:  # CMI_DATASOURCE_CACHE: message indexes and plans (made by the cache)
        return self.directory / "cmi-cache"


@dataclass
class StandaloneCluster:
    base: Path
    workers: List[Worker] = field(default_factory=list)
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    master_port: int = 0
    master_ui_port: int = 0
    processes: List[subprocess.Popen] = field(default_factory=list)
    logs: Dict[str, Path] = field(default_factory=dict)

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    @property
    def master_ui(self) -> str:
        return f"http://127.0.0.1:{self.master_ui_port}"

    def env(self, **extra: str) -> Dict[str, str]:
        """The environment of every process of the cluster: no PYTHONPATH (nothing imports the
        checkout), Spark's default logging into the log files, small daemons."""
        conf_dir = self.base / "daemon-conf"
        conf_dir.mkdir(exist_ok=True)
        return clean_env(**{"SPARK_HOME": str(spark_home()), "SPARK_CONF_DIR": str(conf_dir),
                            "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_DAEMON_MEMORY": "384m", MARKER: self.token,
                            **extra})

    def _launch(self, name: str, args: List[str], env: Dict[str, str]) -> None:
        log = self.base / f"{name}.log"
        self.logs[name] = log
        with open(log, "wb") as out:
            self.processes.append(subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), *args], stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, env=env, cwd=self.base, start_new_session=True))

    def start(self, workers: int = 2, cores: int = 1, memory: str = "1g", timeout: float = 90) -> "StandaloneCluster":
        self.base.mkdir(parents=True, exist_ok=True)
        self.master_port, self.master_ui_port = free_port(), free_port()
        self._launch("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                "--port", str(self.master_port), "--webui-port", str(self.master_ui_port)],
                     self.env())
        for i in range(workers):
            w = Worker(f"worker-{i}", self.base / f"worker-{i}", free_port())
            for d in (w.work_dir, w.tmp_dir, w.local_dir):
                d.mkdir(parents=True)
            self.workers.append(w)
            # A worker retries registering with a master not yet listening: both start at once.
            self._launch(w.name, ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                  "--cores", str(cores), "--memory", memory, "--webui-port", str(w.ui_port),
                                  "--work-dir", str(w.work_dir), self.master_url],
                         self.env(TMPDIR=str(w.tmp_dir), SPARK_LOCAL_DIRS=str(w.local_dir),
                                  CMI_DATASOURCE_CACHE=str(w.cache_dir)))
        self.wait_for(lambda s: s is not None and s.get("aliveworkers", 0) >= workers, timeout,
                      f"{workers} workers alive at the master")
        return self

    def state(self) -> Optional[dict]:
        """The master's state (its web UI's /json/), or None while it does not answer."""
        return self.get_json(f"{self.master_ui}/json/")

    @staticmethod
    def get_json(url: str) -> Optional[dict]:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return json.load(r)
        except (OSError, ValueError):
            return None

    def wait_for(self, condition, timeout: float, what: str) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            state = self.state()
            if condition(state):
                return state
            dead = [name for name, p in zip(self.logs, self.processes) if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                raise RuntimeError(f"no {what} after {timeout:.0f} s" + (f"; exited: {dead}" if dead else "")
                                   + f"; master state: {state}\n" + self.log_tails())

            time.sleep(0.3)

    def log_tails(self, lines: int = 30) -> str:
        return "\n".join(f"--- {name} ({path}) ---\n{tail(path, lines)}" for name, path in self.logs.items())

    def stop(self) -> None:
        """Every process the cluster started, however it is doing: TERM to the launched process
        groups (a worker kills its executors on the way out), KILL to what is left of them, then
        KILL to any process still carrying this cluster's token (a Python daemon's own group)."""
        for p in self.processes:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 15
        for p in self.processes:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        kill_marked(self.token)


def marked_processes(token: str) -> List[int]:
    """Processes whose environment holds ``CMI_CLUSTER_TEST=<token>``: what a cluster or a driver
    of the tests started, and their children."""
    needle = f"{MARKER}={token}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def kill_marked(token: str) -> None:
    for pid in marked_processes(token):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + 5
    while marked_processes(token) and time.monotonic() < deadline:
        time.sleep(0.1)


def imports_logged(tmp_dir: Path) -> List[dict]:
    """The imports of cmi_datasource the nodes' Python logged under ``tmp_dir`` (its TMPDIR)."""
    log = Path(tmp_dir) / IMPORT_LOG
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def run_driver(script: Path, config: dict, env: Dict[str, str], log: Path, timeout: float) -> dict:
    """Run ``script`` (a Spark driver program) in a child Python process with ``config`` as its
    JSON argument; returns the JSON it wrote. A SparkContext is one per process: the test
    process may hold the suite's local session already."""
    config_path = log.with_suffix(".config.json")
    result_path = log.with_suffix(".result.json")
    config_path.write_text(json.dumps(dict(config, result=str(result_path))))
    with open(log, "wb") as out:
        p = subprocess.Popen([sys.executable, str(script), str(config_path)], stdin=subprocess.DEVNULL,
                             stdout=out, stderr=subprocess.STDOUT, env=env, cwd=log.parent, start_new_session=True)
        try:
            code = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    if code != 0 or not result_path.exists():
        why = f"hung (stopped after {timeout:.0f} s)" if code is None else f"exited with {code}"
        raise RuntimeError(f"the driver {why}:\n{tail(log, 80)}")
    return json.loads(result_path.read_text())
