"""scripts/test_tools.sh, which `make test` runs first: it installs the live tests' tools that are
missing from PATH with apt-get, as root or through sudo, and otherwise says what to install.

The machine is played by a PATH of recording stand-ins (id, sudo, apt-get): installing packages for
real is what the script is for, and CI's fresh machine runs it so (.ci/run)."""
from __future__ import annotations

import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "test_tools.sh")
BASH = "/bin/bash"


def machine(tmp_path, uid: int, sudo: bool, present=()) -> str:
    """A PATH with ``id`` answering ``uid``, ``apt-get`` (and ``sudo`` when given) logging their
    arguments to tmp_path/calls, and the tools in ``present`` as executables."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls"
    scripts = {"id": f"echo {uid}", "apt-get": f'echo "apt-get $*" >> {log}'}
    if sudo:
        scripts["sudo"] = f'echo "sudo $1" >> {log}; shift; [ "$1" = true ] || "$@"'
    scripts.update({tool: "exit 0" for tool in present})
    for name, body in scripts.items():
        path = bin_dir / name
        path.write_text(f"#!{BASH}\n{body}\n")
        path.chmod(0o755)
    return str(bin_dir)


def run(path: str):
    return subprocess.run([BASH, SCRIPT], env={"PATH": path}, capture_output=True, text=True, timeout=60)


def calls(tmp_path):
    log = tmp_path / "calls"
    return log.read_text().splitlines() if log.exists() else []


def test_nothing_to_do_when_every_tool_is_on_path(tmp_path):
    done = run(machine(tmp_path, uid=1000, sudo=False, present=("mosquitto", "mosquitto_pub", "tcpdump")))
    assert done.returncode == 0 and calls(tmp_path) == []


@pytest.mark.parametrize("uid, sudo", [(0, False), (1000, True)], ids=["root", "sudo"])
def test_installs_what_is_missing_with_apt_get(tmp_path, uid, sudo):
    done = run(machine(tmp_path, uid=uid, sudo=sudo, present=("mosquitto_pub",)))
    assert done.returncode == 0, done.stderr
    assert "Installing mosquitto tcpdump for the MQTT tests" in done.stdout
    expected = ["apt-get update -qq", "apt-get install -y -qq mosquitto tcpdump"]
    if sudo:  # `sudo -n true` first: may it run without a password?
        expected = ["sudo -n"] + [line for call in expected for line in ("sudo -n", call)]
    assert calls(tmp_path) == expected


def test_without_root_or_sudo_it_says_what_to_install(tmp_path):
    done = run(machine(tmp_path, uid=1000, sudo=False))
    assert done.returncode == 1 and calls(tmp_path) == []
    assert done.stderr.strip() == ("The MQTT tests need mosquitto mosquitto-clients tcpdump: install them "
                                   "(Debian/Ubuntu: sudo apt-get install -y mosquitto mosquitto-clients tcpdump) "
                                   "and run make test again")
