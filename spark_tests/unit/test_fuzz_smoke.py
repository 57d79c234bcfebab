"""The fuzz smoke CI runs: every parser's atheris harness of ``fuzz/`` for about two seconds, in
subprocesses, and none may find a bug (``make fuzz`` runs them for minutes; see fuzz/README.md);
then one whole-read harness (``fuzz/whole_read.py``), whose finds must replay: which bugs the
whole read has today is asserted by test_whole_read_oracle.py.

Not skipped when atheris is missing: the test then fails, saying how to install it, so that a
machine without it cannot pass CI by fuzzing nothing.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from fuzz.targets import TARGETS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMOKE_SECONDS = 2
PARSER_TARGETS = list(TARGETS)  # the whole-read targets are apart, in WHOLE_READ_TARGETS


def _smoke(tmp_path, targets):
    """fuzz/run.py on the targets' seeds for SMOKE_SECONDS each: (its results, the process)."""
    try:
        import atheris  # noqa: F401
    except ImportError:
        pytest.fail("atheris is not installed: the fuzz smoke needs it; install the test extras with "
                    "`.venv/bin/pip install '.[test]'` (make test and make fuzz do)")
    report = tmp_path / "fuzz.json"
    # Kernels as shipped (the unit tests have compiled them already); make fuzz checks bounds.
    command = [sys.executable, os.path.join(ROOT, "fuzz", "run.py"), "--seconds", str(SMOKE_SECONDS),
               "--jobs", str(min(os.cpu_count() or 1, 4)), "--results", "", "--json", str(report),
               "--no-boundscheck", "--quiet", "--corpus", str(tmp_path / "corpus"),  # the seeds alone
               "--crashes", str(tmp_path / "crashes"), "--targets", ",".join(targets)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(report.read_text()), done


@pytest.mark.slow  # about 45 s on 2 cores (pytest --durations): out of the fast stage
def test_every_fuzz_harness_runs_briefly_without_finding_a_bug(tmp_path):
    results, done = _smoke(tmp_path, PARSER_TARGETS)
    assert [r["target"] for r in results] == PARSER_TARGETS
    for r in results:
        assert r["inputs"] > 0, f"{r['target']} ran no input: {done.stdout[-2000:]}"
    found = {r["target"]: list(r["crashes"]) + [a["kind"] for a in r["aborts"]] for r in results
             if r["crashes"] or r["aborts"]}
    assert not found, f"fuzzing found bugs: {found}\n{done.stdout[-3000:]}"
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_the_whole_read_harness_runs_and_its_finds_replay(tmp_path):
    """The TIB/RV whole-read harness (its seeds read fast) runs inputs without stopping, and each
    bug it keeps gives the same finding when its input is read again."""
    from fuzz import whole_read
    [result], done = _smoke(tmp_path, ["whole_read_tibrv"])
    assert result["inputs"] > 0, done.stdout[-2000:]
    assert not result["aborts"], result["aborts"]
    for signature, found in result["crashes"].items():
        with open(found["file"], "rb") as f:
            data = f.read()
        with pytest.raises(whole_read.Finding) as again:
            whole_read.run_input(data, replay=False, formats=whole_read.TARGET_FORMATS["whole_read_tibrv"][0])
        assert again.value.signature == signature
