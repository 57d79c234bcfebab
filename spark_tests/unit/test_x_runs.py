"""The two decoders of a run of dmpmqmsg X lines give the same answers: the compiled kernel
(large text, scanning a dump) and bytes.fromhex (little text: a message reread while planning,
so that planning never loads numba's compiler)."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cmi_datasource.transports.mq.dmpmqmsg import _plain_x_run, _plain_x_run_small
from cmi_datasource.transports.mq.hex_lines import x_run


def kernel_answer(data: bytes):
    view = np.frombuffer(data, dtype=np.uint8)
    out = np.empty(len(data) // 2 + 1, dtype=np.uint8)
    end, written = x_run(view, 0, len(data), out)
    return None if end < 0 else (end, out[:written].tobytes())


LINE = st.one_of(
    st.binary(max_size=40).map(lambda b: b"X " + b.hex().upper().encode()),  # as dmpmqmsg writes
    st.binary(max_size=8).map(lambda b: b"X " + b.hex().encode()),  # lower case digits
    st.text(alphabet="0123456789ABCDEFabcdefgX \r", max_size=12).map(lambda t: b"X " + t.encode()),  # odd, bad
    st.sampled_from([b"X", b"X ", b"X 0A 0B", b"A MSI 0", b"", b"* comment", b"N"]),
)


@settings(max_examples=500, deadline=None)
@given(st.lists(LINE, min_size=1, max_size=8), st.booleans())
def test_the_small_text_path_answers_as_the_kernel(lines, final_newline):
    data = b"\n".join([b"X " + lines[0][2:] if lines[0][:1] == b"X" else b"X 00"] + lines[1:])
    data += b"\n" if final_newline else b""
    assert _plain_x_run_small(data, 0, len(data)) == kernel_answer(data)


def test_a_large_text_goes_through_the_kernel_with_the_same_answer():
    line = b"X " + bytes(range(256)).hex().upper().encode()
    data = b"\n".join([line] * 200) + b"\nA MSI 0\n"  # about 100 KB: past the small-text limit
    view = np.frombuffer(data, dtype=np.uint8)
    out = np.empty(len(data) // 2, dtype=np.uint8)
    end, decoded = _plain_x_run(data, view, 0, len(data), out)
    assert decoded == bytes(range(256)) * 200 and data[end:end + 2] == b"\nA"
    assert (end, decoded) == _plain_x_run_small(data, 0, len(data))
