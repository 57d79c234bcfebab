"""ATO messages -> fixed-width observation rows, by a compiled kernel (docs/spec/tibrv.md#ato).

An ATO message holds, after its count (field 1) and record type (field 2), one pair of fields per
variable per observation: an I32 vtype (1 numeric, 2 character) and the value, an F64 or a
string. The kernel walks those fields once and writes each observation as CMI over MQ lays it
out (Encoding 273): a numeric's high-order ``length`` bytes of its big-endian double, a character
value blank-padded to its length; so the SAS codec decodes both transports alike. A vtype that
contradicts VAR, a value of the wrong type, a string longer than its variable or a field past the
message is an error naming the observation, the variable and the byte offset.

Every size and count the kernels use comes from the capture: ``observation_rows`` checks the
layout (each variable's length, their sum against DAT's observation length) and bounds the count
by the message's bytes before it allocates, and the kernels compare every index with the ends of
their arrays, so that no capture, however damaged, makes them read or write outside them.

``_ato_rows``, what callers run, also exists in C (``_native.ato_rows``, compiled.py), which reads
the usual shape with fewer compares and blends a value's blanks in without a branch; these numba
kernels are the reference the tests compare it with.
"""
from __future__ import annotations

from typing import Callable, Tuple

import numpy as np

from ...compiled import kernel
from ...errors import Location, message_number
from ...payload.sas_dataset import MAX_CHARACTER_LENGTH
from .records import ObservationLayout, RvCmiError
from .wire import INT, read_fields

_SHORT, _LONG = 0x79, 0x7A

# Kernel outcomes besides success (0).
_PROBLEMS = {1: "a field runs past the end of the message", 2: "the vtype field is not a 4-byte int",
             3: "the vtype contradicts the variable's type in VAR", 4: "a numeric value is not an 8-byte real",
             5: "a character value is not a string", 6: "a string is longer than its variable",
             7: "fields follow the last observation",
             8: "the variables' lengths in VAR overrun the observation length in DAT"}
MAX_NUMERIC_LENGTH = 8  # the bytes of a double: a numeric's width in the rows


@kernel
def _field(buf, p, e):
    """(data start, data size, type, next field) of the field at buf[p], or (-1, 0, 0, p) when it
    runs past e. Bounds: every index is checked against e, itself no more than the buffer's size."""
    if e > buf.shape[0]:
        e = buf.shape[0]
    if p < 0 or p >= e:
        return -1, 0, 0, p
    q = p + 1 + buf[p]
    if q >= e:
        return -1, 0, 0, p
    code = buf[q]
    q += 1
    if q >= e:
        return -1, 0, 0, p
    size = np.int64(buf[q])
    q += 1
    is_scalar = code == 3 or code == 9 or code == 10 or code == 11 or code == 12 or code == 13
    if not is_scalar and code != 1 and size == _SHORT:
        if q + 2 > e:
            return -1, 0, 0, p
        size = (np.int64(buf[q]) << 8 | np.int64(buf[q + 1])) - 2
        q += 2
    elif not is_scalar and size == _LONG:
        if q + 4 > e:
            return -1, 0, 0, p
        size = (np.int64(buf[q]) << 24 | np.int64(buf[q + 1]) << 16 | np.int64(buf[q + 2]) << 8
                | np.int64(buf[q + 3]))
        if code != 1:
            size -= 4
            q += 4
    if size < 0 or q + size > e:
        return -1, 0, 0, p
    return q, size, code, q + size


@kernel
def _usual_rows(buf, p, e, count, numeric, lengths, offsets, obs_length, out, blank):
    """(rows written, where the next starts): the leading observations of ``_rows`` whose
    fields all have the shape senders give them (each named like the first, an int vtype, an
    8-byte real or a string of at most 119 bytes fitting its variable). Their places are known
    before their bytes are read, so a row costs the CPU no chain of dependent loads; ``_rows``
    reads the rest. Bounds: the layout is checked to fit out first, every field against e."""
    nvars = lengths.shape[0]
    if count * obs_length > out.shape[0] or p < 0 or p >= e or e > buf.shape[0]:
        return 0, p
    for v in range(nvars):
        if offsets[v] < 0 or lengths[v] < 0 or offsets[v] + lengths[v] > obs_length or (numeric[v] and lengths[v] > 8):
            return 0, p
    name = np.int64(buf[p])
    for row in range(count):
        start = p
        base = row * obs_length
        for v in range(nvars):
            q = p + 1 + name
            if q + 6 > e or buf[p] != name or buf[q] != 11 or buf[q + 1] != 4 or buf[q + 2] != 0 \
                    or buf[q + 3] != 0 or buf[q + 4] != 0 or buf[q + 5] != (1 if numeric[v] else 2):
                return row, start
            p = q + 6
            q = p + 1 + name
            to = base + offsets[v]
            width = lengths[v]
            if q + 2 > e or buf[p] != name:
                return row, start
            if numeric[v]:
                if q + 10 > e or buf[q] != 13 or buf[q + 1] != 8:
                    return row, start
                if width == 8:  # spelled out: a loop of a length not known costs as much again
                    out[to], out[to + 1], out[to + 2], out[to + 3] = buf[q + 2], buf[q + 3], buf[q + 4], buf[q + 5]
                    out[to + 4], out[to + 5], out[to + 6], out[to + 7] = buf[q + 6], buf[q + 7], buf[q + 8], buf[q + 9]
                else:
                    for k in range(width):
                        out[to + k] = buf[q + 2 + k]
                p = q + 10
            else:
                size = np.int64(buf[q + 1])
                at = q + 2
                if buf[q] != 8 or size >= _SHORT or at + size > e:
                    return row, start
                n = size
                if n > 0 and buf[at + n - 1] == 0:
                    n -= 1
                if n > width:
                    return row, start
                for k in range(n):
                    out[to + k] = buf[at + k]
                for k in range(n, width):
                    out[to + k] = blank
                p = at + size
    return count, p


@kernel
def _rows(buf, p, e, count, numeric, lengths, offsets, obs_length, out, blank):
    """Write ``count`` observations from the fields at buf[p:e] into out (count * obs_length
    bytes, which the caller provides); returns (0, 0, 0, 0) or (problem, observation, variable, offset).
    The rows in the usual shape first (``_usual_rows``); then, field by field, the rest. Bounds:
    ``_field`` keeps at + size within buf; a value is copied only when its bytes lie
    within its field's data and its variable's place within out (problem 8 otherwise)."""
    if e > buf.shape[0]:
        e = buf.shape[0]
    room = out.shape[0]
    first, p = _usual_rows(buf, p, e, count, numeric, lengths, offsets, obs_length, out, blank)
    for row in range(first, count):
        base = row * obs_length
        for v in range(lengths.shape[0]):
            at, size, code, nxt = _field(buf, p, e)
            if at < 0:
                return 1, row, v, p
            if code != 11 or size != 4:
                return 2, row, v, p
            vtype = (np.int64(buf[at]) << 24 | np.int64(buf[at + 1]) << 16 | np.int64(buf[at + 2]) << 8
                     | np.int64(buf[at + 3]))
            if vtype != (1 if numeric[v] else 2):
                return 3, row, v, p
            p = nxt
            at, size, code, nxt = _field(buf, p, e)
            if at < 0:
                return 1, row, v, p
            to = base + offsets[v]
            width = lengths[v]
            if to < 0 or width < 0 or to + width > room:
                return 8, row, v, p
            if numeric[v]:
                if code != 13 or size != 8:
                    return 4, row, v, p
                if width > size:
                    return 8, row, v, p
                for k in range(width):
                    out[to + k] = buf[at + k]
            else:
                if code != 8:
                    return 5, row, v, p
                n = size
                if n > 0 and buf[at + n - 1] == 0:
                    n -= 1
                if n > width:
                    return 6, row, v, p
                for k in range(n):
                    out[to + k] = buf[at + k]
                for k in range(n, width):
                    out[to + k] = blank
            p = nxt
    if p != e:
        return 7, count, 0, p
    return 0, 0, 0, 0


@kernel(native="ato_rows")
def _ato_rows(buf, starts, ends, counts, out_starts, numeric, lengths, offsets, obs_length, out, blank):
    """The rows of several ATO messages of one layout, ``_rows`` of each in turn: message m's
    pairs lie in buf[starts[m]:ends[m]], its counts[m] rows go to out from out_starts[m]. Returns
    (0, 0, 0, 0, 0), or (problem, message, observation, variable, offset) of the first message
    that fails (the messages before it written). One call for the ATO messages of a piece of the
    file: no Python runs between them. Bounds: a message whose rows do not fit out is problem 8
    before anything of it is written; ``_rows`` keeps the rest."""
    for m in range(starts.shape[0]):
        count = counts[m]
        at = out_starts[m]
        if count < 0 or obs_length < 0 or at < 0 or at > out.shape[0] or count * obs_length > out.shape[0] - at:
            return 8, m, 0, 0, starts[m]
        problem, row, variable, offset = _rows(buf, starts[m], ends[m], count, numeric, lengths, offsets,
                                               obs_length, out[at:at + count * obs_length], blank)
        if problem:
            return problem, m, row, variable, offset
    return 0, 0, 0, 0, 0


def check_layout(layout: ObservationLayout, where: Location) -> None:
    """The layout fits the kernel: each variable 1 to 8 (numeric) or 1 to 32767 bytes, together no
    more than the observation length; and that length pads them by at most 8 bytes a variable (SAS
    aligns, no more), so that a damaged DAT cannot size the rows it allocates. An error names the
    VAR or DAT field at fault (``where``, the ATO message, when the layout does not say)."""
    lengths_at = layout.lengths_at or (where,) * len(layout.lengths)
    ato = "ATO message" if where.message_index is None else f"ATO message {message_number(where.message_index)}"
    for v, (numeric, length, at) in enumerate(zip(layout.numeric, layout.lengths, lengths_at)):
        top = MAX_NUMERIC_LENGTH if numeric else MAX_CHARACTER_LENGTH
        if not 1 <= length <= top:
            raise RvCmiError(f"the rows of {ato} cannot be laid out: VAR gives "
                             f"{'numeric' if numeric else 'character'} variable {v + 1} length {length}, "
                             f"not 1 to {top}", at)
    total = sum(layout.lengths)
    slack = MAX_NUMERIC_LENGTH * (len(layout.lengths) + 1)
    if not total <= layout.obs_length <= total + slack:
        raise RvCmiError(f"the rows of {ato} cannot be laid out: DAT's observation length is "
                         f"{layout.obs_length} but the {len(layout.lengths)} variables in VAR take {total} bytes "
                         f"(and at most {slack} of padding)", layout.obs_length_at or where)


def ato_count(buf: bytes, start: int, end: int, layout: ObservationLayout, where: Location,
              message_at: int = 0) -> Tuple[int, int]:
    """(observations, where their pairs start) of the ATO message whose fields lie in
    buf[start:end], the message starting at ``message_at`` (errors name offsets in it): its count
    bounded by its bytes, and the layout checked, before anything is allocated."""
    def at_payload(at: int) -> Location:
        return where.at_payload(at - message_at)

    end = min(end, len(buf))
    fields = read_fields(buf, start, end, at_payload)
    head = [next(fields, None), next(fields, None)]
    if None in head or [f.field_id for f in head] != [1, 2] or head[0].type != INT:
        raise RvCmiError("ATO message does not start with its count (field 1) and record type (field 2)", where)
    count = head[0].decoded(at_payload)
    pairs_start = head[1].data_offset + len(head[1].data)  # read_fields kept it within end
    nvars = len(layout.lengths)
    # Each value takes two fields of at least 7 bytes: bounds an untrusted count before allocating.
    if count < 0 or (nvars and count * nvars * 14 > end - pairs_start) or (not nvars and count):
        raise RvCmiError(f"ATO declares {count} observations of {nvars} variables in {end - pairs_start} bytes",
                         where)
    if count:
        check_layout(layout, where)
    return count, pairs_start


def write_rows(view: np.ndarray, pairs_starts: np.ndarray, ends: np.ndarray, counts: np.ndarray,
               out_starts: np.ndarray, layout: ObservationLayout, out: np.ndarray,
               where: Callable[[int, int], Location]) -> None:
    """The observations of ATO messages of one layout, message m's ``counts[m]`` pairs lying in
    view[pairs_starts[m]:ends[m]] (``ato_count``), as fixed-width rows written into ``out`` from
    ``out_starts[m]`` (the padding RV does not carry is left as it is), by one kernel call. An
    error names ``where(m, offset)``: the place of offset ``offset`` of ``view`` in message m."""
    lengths = np.asarray(layout.lengths, dtype=np.int64)
    offsets = (np.cumsum(lengths) - lengths).astype(np.int64)
    problem, message, row, variable, offset = _ato_rows(
        view, pairs_starts, ends, counts, out_starts, np.asarray(layout.numeric, dtype=np.bool_), lengths,
        offsets, layout.obs_length, out, ord(" "))
    if problem:
        raise RvCmiError(f"ATO observation {row + 1}, variable {variable + 1}: {_PROBLEMS[problem]}",
                         where(int(message), int(offset)))


ATO_RECORD_TYPE = (3).to_bytes(4, "big")  # what each ATO message's rows follow, as CMI over MQ has it


def observation_rows(body: bytes, start: int, end: int, layout: ObservationLayout, where: Location) -> bytes:
    """The record type (3) and the rows of the ATO message whose fields lie in body[start:end]."""
    count, pairs_start = ato_count(body, start, end, layout, where)
    out = np.zeros(4 + count * layout.obs_length, dtype=np.uint8)  # zeros: the padding RV does not carry
    out[:4] = np.frombuffer(ATO_RECORD_TYPE, dtype=np.uint8)
    one = np.zeros(1, dtype=np.int64)
    write_rows(np.frombuffer(body, dtype=np.uint8), one + pairs_start, one + min(end, len(body)), one + count,
               one, layout, out[4:], lambda _, offset: where.at_payload(offset))
    return out.tobytes()
