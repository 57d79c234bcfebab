"""The Makefile's set-up commands as a newcomer runs them on a fresh clone (``make -n``, with the
virtual environment in a folder that does not exist yet): what each installs, and in which order."""
from __future__ import annotations

import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def planned(tmp_path, target: str) -> list:
    """The commands ``make TARGET`` would run on a fresh clone."""
    # As a newcomer runs it, not as a make that runs these tests (make test): no MAKEFLAGS or
    # MAKELEVEL inherited, which would make it print "Entering directory" lines among the commands.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    done = subprocess.run(["make", "--no-print-directory", "-n", target, f"VENV={tmp_path / 'fresh-venv'}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def installs(commands) -> list:
    return [c.split("pip install --quiet ", 1)[1] for c in commands if "pip install --quiet " in c
            and "--upgrade pip" not in c]


def test_make_demo_installs_the_package_alone(tmp_path):
    commands = planned(tmp_path, "demo")
    assert installs(commands) == ["."]
    assert commands[-1].endswith("scripts/demo.py")


def test_make_docs_installs_the_package_and_the_docs_extra_only(tmp_path):
    assert installs(planned(tmp_path, "docs")) == [".", '".[docs]"']


def test_make_test_checks_the_machine_before_installing_the_test_extras(tmp_path):
    commands = planned(tmp_path, "test")
    first_install = next(i for i, c in enumerate(commands) if "-m venv" in c)
    assert any("java -version" in c for c in commands[:first_install])
    assert "bash scripts/test_tools.sh" in commands[:first_install]
    assert installs(commands)[0] == '".[test]"'
    assert commands[-2:] == [f"{tmp_path / 'fresh-venv'}/bin/python -m pytest -q -m unit",
                             f"{tmp_path / 'fresh-venv'}/bin/python -m pytest -q -m \"not unit\""]
