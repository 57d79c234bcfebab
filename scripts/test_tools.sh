#!/usr/bin/env bash
# What the test suite needs beyond Python and Java: a real MQTT broker and a real packet capture
# (Debian's mosquitto, mosquitto-clients and tcpdump). Installed with apt-get when missing, as root
# or through sudo; otherwise says what to install and stops, so that `make test` never fails later
# with a less helpful message. Called by `make test` (and so by .ci/run).
#
# The tools are looked for on PATH, as the tests look for them: the Makefile puts /usr/sbin, where
# Debian installs mosquitto, on PATH (a non-root user's PATH lacks it).
set -euo pipefail
missing=()
command -v mosquitto >/dev/null 2>&1 || missing+=(mosquitto)
command -v mosquitto_pub >/dev/null 2>&1 || missing+=(mosquitto-clients)
command -v tcpdump >/dev/null 2>&1 || missing+=(tcpdump)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  as_root=(sudo -n)
else
  echo "The MQTT tests need ${missing[*]}: install them (Debian/Ubuntu: sudo apt-get install -y ${missing[*]}) and run make test again" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "The MQTT tests need ${missing[*]} and this machine has no apt-get: install them with its package manager" >&2
  exit 1
fi
echo "Installing ${missing[*]} for the MQTT tests (apt-get)"
"${as_root[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
