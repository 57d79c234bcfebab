"""The README's examples run as written (and docs/without-spark.md's): a stale example fails here.

Every fenced block of those documents is run, or listed in ``SKIPPED`` with the reason, or is of a
kind that holds no command (``NOT_COMMANDS``). The blocks run in a temporary directory holding a
copy of ``sample_queues/``, so that their relative paths resolve as in a checkout and what they
write stays there:

- ``python`` blocks, in order, in one namespace per document and one fresh process: the README's
  with ``spark`` bound to a default ``SparkSession`` (no ``conf/``: what a ``pip install`` user has,
  as in the ``pyspark`` shell or a notebook), with ``PYSPARK_PYTHON`` set as the README says;
- ``bash`` blocks, each a script (``set -euo pipefail``);
- ``console`` blocks, each ``$ `` line a command, with the ``cmi`` of this environment on ``PATH``:
  exit status 0 unless ``EXIT_STATUS`` says otherwise.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from typing import List, NamedTuple

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCUMENTS = ("README.md", "docs/without-spark.md")
NOT_COMMANDS = {"text"}  # output shown, never typed
# (document, the block's first line): why it is not run. None today; a block that starts a server or
# a cluster, or writes outside its working directory, belongs here.
SKIPPED: dict = {}
# A console command whose documented exit status is not 0 (docs/cli.md: 1 means the capture is damaged).
EXIT_STATUS = {
    "cmi ls sample_queues/nightly_batch.dmp": {0, 1},  # FIN.RETURNS lost a message: the listing reports it
    "cmi messages sample_queues/nightly_batch.dmp --attachment FIN.RETURNS": {0, 1},  # the same damage
}
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)


class Block(NamedTuple):
    document: str
    line: int  # of the opening fence, from 1
    language: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.document}:{self.line}"


def blocks() -> List[Block]:
    found = []
    for document in DOCUMENTS:
        with open(os.path.join(ROOT, document), encoding="utf-8") as f:
            text = f.read()
        for fence in _FENCE.finditer(text):
            line = text.count("\n", 0, fence.start()) + 1
            found.append(Block(document, line, fence.group(1), fence.group(2)))
    return found


def runnable(language: str) -> List[Block]:
    return [b for b in blocks() if b.language == language
            and (b.document, b.text.splitlines()[0] if b.text else "") not in SKIPPED]


@pytest.fixture
def workdir(tmp_path):
    shutil.copytree(os.path.join(ROOT, "sample_queues"), tmp_path / "sample_queues")
    return tmp_path


def environment() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "SPARK_CONF_DIR"}  # a default session, no conf/
    python_dir = os.path.dirname(sys.executable)
    env.update(PYSPARK_PYTHON=sys.executable, PYTHONPATH=ROOT, PATH=python_dir + os.pathsep + env.get("PATH", ""))
    return env


def test_every_block_is_run_or_skipped_with_a_reason():
    kinds = {b.language for b in blocks()}
    assert kinds <= {"python", "bash", "console"} | NOT_COMMANDS, kinds
    assert runnable("python") and runnable("console")  # the extraction finds the examples


HARNESS = textwrap.dedent("""
    import json, sys, traceback
    blocks = json.load(open(sys.argv[1]))
    namespaces = {}
    for block in blocks:
        namespace = namespaces.get(block["document"])
        if namespace is None:
            namespace = namespaces[block["document"]] = {"__name__": "__main__"}
            if block["document"] == "README.md":  # as in the pyspark shell or a notebook
                from pyspark.sql import SparkSession
                namespace["spark"] = SparkSession.builder.getOrCreate()
        print(f"== {block['where']}", flush=True)
        try:
            exec(compile(block["text"], block["where"], "exec"), namespace)
        except BaseException:
            print(json.dumps({"failed": block["where"], "traceback": traceback.format_exc()}), flush=True)
            sys.exit(1)
""")


def test_the_python_examples_run(workdir):
    examples = [dict(b._asdict(), where=b.where) for b in runnable("python")]
    listing = workdir / "blocks.json"
    listing.write_text(json.dumps(examples))
    done = subprocess.run([sys.executable, "-c", HARNESS, str(listing)], cwd=workdir, env=environment(),
                          capture_output=True, text=True, timeout=600)
    failed = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"failed"')]
    assert not failed, f"{failed[0]['failed']} fails:\n{failed[0]['traceback']}"
    assert done.returncode == 0, done.stderr[-3000:]
    assert [line[3:] for line in done.stdout.splitlines() if line.startswith("== ")] == [e["where"] for e in examples]


def test_the_bash_examples_run(workdir):
    for block in runnable("bash"):
        done = subprocess.run(["bash", "-c", "set -euo pipefail\n" + block.text], cwd=workdir, env=environment(),
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{block.where} fails:\n{done.stderr}"


def console_commands() -> List[tuple]:
    return [(block.where, line[2:]) for block in runnable("console") for line in block.text.splitlines()
            if line.startswith("$ ")]


def test_the_console_examples_run(workdir):
    commands = console_commands()
    assert any(command.startswith("cmi ") for _, command in commands)
    for where, command in commands:
        done = subprocess.run(["bash", "-c", command], cwd=workdir, env=environment(), capture_output=True,
                              text=True, timeout=300)
        bare = command.split("#")[0].strip()
        assert done.returncode in EXIT_STATUS.get(bare, {0}), f"{where}: {bare} exits {done.returncode}:\n{done.stderr}"
        assert "Traceback" not in done.stderr, f"{where}: {bare}:\n{done.stderr}"
        assert done.stdout.strip(), f"{where}: {bare} prints nothing"
