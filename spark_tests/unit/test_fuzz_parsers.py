"""Every parser fed mutated real captures and generated structures: only a CmiError may escape,
and memory stays within a bound of the input's size (``fuzz/targets.py`` holds the targets, which
``make fuzz`` runs under atheris for longer).

Inputs are real bytes from ``sample_queues/`` (as ``fuzz/targets.py`` seeds them) with bits
flipped, bytes inserted, ranges cut or overwritten with boundary integers, and pieces of other
samples spliced in; for the text and framed formats also structures generated field by field.
Derandomized: CI runs the same examples every time.
"""
from __future__ import annotations

import functools
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz.targets import TARGETS, run_checked, seeds_of

FAST = settings(max_examples=250, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))
# The targets that open files and build whole views take longer per input.
SLOW = settings(FAST, max_examples=80)
SLOW_TARGETS = {"capture", "pcap", "sapdb", "rv", "amqsbcg"}

BOUNDARY_INTS = (0, 1, -1, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, -0x80000000, 0x40000000)


@functools.lru_cache(maxsize=None)
def seeds(name: str):
    """The target's seeds, each run once: kernels loaded and caches filled before memory is measured."""
    found = tuple(seeds_of(name))
    for seed in found:
        try:
            TARGETS[name].run(seed)
        except Exception:
            pass
    return found


@st.composite
def mutated(draw, name: str) -> bytes:
    """A seed of target ``name`` after a few flips, insertions, cuts, overwrites and splices."""
    pool = seeds(name)
    data = bytearray(draw(st.sampled_from(pool)))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(("flip", "insert", "delete", "truncate", "integer", "splice", "byte")))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "byte" and data:
            data[at] = draw(st.integers(0, 255))
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif op == "delete":
            del data[at:at + draw(st.integers(1, 64))]
        elif op == "truncate":
            del data[at:]
        elif op == "integer":
            value = draw(st.sampled_from(BOUNDARY_INTS))
            order = draw(st.sampled_from("<>"))
            data[at:at + 4] = struct.pack(order + "i", value)
        elif op == "splice":
            other = draw(st.sampled_from(pool))
            start = draw(st.integers(0, max(len(other) - 1, 0)))
            data[at:at + draw(st.integers(0, 64))] = other[start:start + draw(st.integers(1, 256))]
    return bytes(data)


def check(name: str, data: bytes) -> None:
    seeds(name)
    run_checked(TARGETS[name], data)  # raises on anything but a CmiError, and on the memory bound


def _fast(name):
    return name not in SLOW_TARGETS


@pytest.mark.parametrize("name", [n for n in TARGETS if _fast(n)])
@FAST
@given(data=st.data())
def test_mutated_samples_raise_only_typed_errors(name, data):
    check(name, data.draw(mutated(name)))


@pytest.mark.parametrize("name", [n for n in TARGETS if not _fast(n)])
@SLOW
@given(data=st.data())
def test_mutated_samples_raise_only_typed_errors_in_whole_files(name, data):
    check(name, data.draw(mutated(name)))


# -- structure-aware generation -------------------------------------------------------------------

HEX = st.text("0123456789ABCDEFabcdef", min_size=0, max_size=80)
ATTRIBUTE_CODES = ("VER", "RPT", "MST", "EXP", "FDB", "ENC", "CCS", "FMT", "PRI", "PER", "MSI", "COI", "BOC",
                   "RTQ", "RTM", "USR", "ACC", "AIX", "PAT", "PAN", "PTD", "PTT", "AOX", "GRP", "MSQ", "OFF",
                   "MSF", "ORL", "AID", "AOD", "XYZ")
ATTRIBUTE_VALUES = st.one_of(st.integers(-2 ** 40, 2 ** 40).map(str), HEX, st.text("MQSTR ' \"~", max_size=12),
                             st.just("'MQHRF2  '"), st.just("'MQXMIT  '"))


STRING_LINE = st.text('ab~0123456789ABCDEF"', max_size=30)


@st.composite
def dmpmqmsg_lines(draw) -> bytes:
    lines = [draw(st.sampled_from(["* DMPMQMSG Version:9.3 Created:Sat Jan  1 00:00:00 2000", "* QLOAD", ""]))]
    for index in range(draw(st.integers(0, 4))):
        lines.append(f"* Index {index + 1}")
        if draw(st.booleans()):
            for _ in range(draw(st.integers(0, 8))):
                lines.append(f"A {draw(st.sampled_from(ATTRIBUTE_CODES))} {draw(ATTRIBUTE_VALUES)}")
        else:
            lines.append("N")
        for _ in range(draw(st.integers(0, 5))):
            kind = draw(st.sampled_from("XXXST"))
            if kind == "X":
                text = draw(HEX)
                lines.append(f"X {text}" + (f" <{draw(st.text('abc .', max_size=20))}>" if draw(st.booleans()) else ""))
            elif kind == "S":
                lines.append('S "' + draw(STRING_LINE) + '"')
            else:
                lines.append(f"T {draw(st.text('abc xyz', max_size=30))}")
    end = draw(st.sampled_from(["\n", "\r\n"]))
    return end.join(lines).encode("latin-1")


@SLOW
@given(dmpmqmsg_lines())
def test_generated_dmpmqmsg_dumps(data):
    check("dmpmqmsg", data)
    check("capture", data)


@st.composite
def amqsbcg_text(draw) -> bytes:
    lines = ["AMQSBCG0 - starts here", "**********************", "", " MQOPEN - 'Q'", ""]
    for number in range(1, draw(st.integers(1, 3)) + 1):
        lines += [f" MQGET of message number {number}, CompCode:0 Reason:0", "****Message descriptor****", ""]
        for name in draw(st.lists(st.sampled_from(["StrucId", "Version", "MsgType", "Encoding", "CodedCharSetId",
                                                   "Format", "CorrelId", "MsgFlags", "Offset", "GroupId"]),
                                  max_size=6)):
            value = draw(st.one_of(st.integers(-2 ** 33, 2 ** 33).map(str), HEX.map(lambda h: f"X'{h}'"),
                                   st.text("MQSTR ", max_size=8).map(lambda t: f"'{t}'")))
            lines.append(f"  {name} : {value}")
        held = draw(st.integers(0, 64))
        lines += ["", "****   Message      ****", "", f" length - {held} of {draw(st.integers(0, 2 ** 32))} bytes", ""]
        offset = 0
        for _ in range(draw(st.integers(0, 4))):
            groups = draw(st.lists(st.text("0123456789ABCDEF", min_size=0, max_size=5), max_size=8))
            lines.append(f"{offset:08X}:  {' '.join(groups):<40} '{draw(st.text('ab.', max_size=16))}'")
            offset += draw(st.sampled_from([16, 16, 15, 32, 0]))
        lines += ["", ""]
    lines += [" No more messages", " MQCLOSE", " MQDISC", ""]
    return "\n".join(lines).encode("latin-1")


@SLOW
@given(amqsbcg_text())
def test_generated_amqsbcg_output(data):
    check("amqsbcg", data)


@st.composite
def rv_messages(draw) -> bytes:
    """RV messages as CMI sends them: every field named by the message's kind, with a field id."""
    from cmi_datasource.transports.tibrv.wire import TYPES, field_bytes, message_bytes
    kinds = ["HDR", "MSG", "DATA", "DAT", "VAR", "ATO", "LST", "FDC", "ATX", "ATB", "ATI", "ATC", "XXX"]
    out = b""
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(kinds))
        fields = []
        for _ in range(draw(st.integers(0, 10))):
            code = draw(st.sampled_from(sorted(TYPES) + [99]))
            size = draw(st.sampled_from([0, 1, 2, 4, 8, 3, 24]))
            name = kind if draw(st.integers(0, 9)) else draw(st.text("ABCDEFGH", max_size=4))
            fid = draw(st.one_of(st.integers(0, 40), st.none())) if draw(st.integers(0, 9)) == 0 else \
                draw(st.integers(0, 40))
            fields.append(field_bytes(name, fid, code, draw(st.binary(min_size=size, max_size=size))))
        out += message_bytes(fields)
    return out


@FAST
@given(rv_messages())
def test_generated_tibrv_messages(data):
    check("rv", data)


@st.composite
def mqtt_packets(draw) -> bytes:
    from cmi_datasource.transports.mqtt.packets import packet_bytes
    [sample] = [s for s in seeds("mqtt")]
    connect = sample[:2 + sample[1]] if sample[1] < 128 else b""
    out = connect if draw(st.booleans()) else b""
    for _ in range(draw(st.integers(1, 6))):
        packet_type = draw(st.integers(1, 15))
        body = draw(st.binary(max_size=40))
        out += packet_bytes(packet_type, body, dup=draw(st.booleans()), qos=draw(st.integers(0, 3)),
                            retain=draw(st.booleans()))
    return out


@FAST
@given(mqtt_packets())
def test_generated_mqtt_packets(data):
    check("mqtt", data)
