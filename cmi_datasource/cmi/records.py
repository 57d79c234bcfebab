"""Declarative record tables for CMI records (docs/spec/cmi.md#the-attachment-header, docs/spec/sas-records.md).

A record is an ordered table of (primitive, name). The same table drives reading,
writing and the smallest size a record can take, so the order of fields in the spec
is written down exactly once. Primitives: ``int``, ``short``, ``long``, ``char``,
``string`` (``long`` length + characters [+ NUL]), ``int_string`` (the same with an ``int``
length, as in the attachment header) and ``bytesN`` (N raw bytes).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Sequence, Tuple

from .correl import CORREL_ID_SIZE
from .wire import FieldReader, FieldWriter

RecordTable = Sequence[Tuple[str, str]]

# Dataset definition, after the message's record-type int.
DATASET_DEFINITION: RecordTable = (
    ("int", "version"),
    ("string", "dataset_type"),
    ("string", "label"),
    ("long", "nobs"),
    ("long", "nvars"),
    ("long", "obs_length"),
    ("string", "compress"),
    ("char", "reuse"),
    ("string", "encrypt"),
    ("long", "sort_key_count"),
    ("string", "collating_sequence"),
    ("short", "sort_flags"),
    ("int", "read_password_flag"),
    ("bytes4", "read_password"),
    ("int", "write_password_flag"),
    ("bytes4", "write_password"),
    ("int", "alter_password_flag"),
    ("bytes4", "alter_password"),
)

# One variable definition; the variable-definition stream repeats it nvars times.
VARIABLE_DEFINITION: RecordTable = (
    ("string", "name"),
    ("string", "format_name"),
    ("string", "informat_name"),
    ("string", "label"),
    ("char", "type"),
    ("long", "length"),
    ("long", "format_width"),
    ("long", "format_decimals"),
    ("long", "informat_width"),
    ("long", "informat_decimals"),
    ("char", "nsort"),
)

# External file attachments: the first sequenced message.
FILE_PROLOGUE: RecordTable = (("int", "lrecl"), ("int", "size"))

_CORREL = f"bytes{CORREL_ID_SIZE}"

# The attachment header message (MsgType 100000), up to its list of attachments ...
HEADER: RecordTable = (
    (_CORREL, "header_correl_id"),
    ("long", "original_msg_type"),
    (_CORREL, "original_correl_id"),
    (_CORREL, "message_correl_id"),
    ("int", "attachment_count"),
)

# ... then one entry per attachment.
ATTACHMENT_ENTRY: RecordTable = (
    ("int", "attachment_type"),
    (_CORREL, "correl_id"),
    ("int_string", "qualifier1"),
    ("int_string", "qualifier2"),
    ("int_string", "description"),
    ("int", "minor_version"),
    ("int", "major_version"),
)


class _Primitive:
    """How one primitive is read, written and how few bytes it can take."""

    def __init__(self, read: Callable[[FieldReader, str], Any], write: Callable[[FieldWriter, Any], Any],
                 default: Any, smallest: Callable[[int, bool], int]):
        self.read, self.write, self.default, self.smallest = read, write, default, smallest


_PRIMITIVES: Dict[str, _Primitive] = {
    "int": _Primitive(lambda r, n: r.int32(n), lambda w, v: w.int32(v), 0, lambda long_size, nul: 4),
    "short": _Primitive(lambda r, n: r.short(n), lambda w, v: w.short(v), 0, lambda long_size, nul: 2),
    "long": _Primitive(lambda r, n: r.long(n), lambda w, v: w.long(v), 0, lambda long_size, nul: long_size),
    "char": _Primitive(lambda r, n: r.char(n), lambda w, v: w.char(v), 0, lambda long_size, nul: 1),
    "string": _Primitive(lambda r, n: r.string(n), lambda w, v: w.string(v), b"",
                         lambda long_size, nul: long_size + nul),
    "int_string": _Primitive(lambda r, n: r.string(n, length_is_int=True),
                             lambda w, v: w.string(v, length_is_int=True), b"", lambda long_size, nul: 4 + nul),
}


def _primitive(name: str) -> _Primitive:
    found = _PRIMITIVES.get(name)
    if found is None and name.startswith("bytes"):
        size = int(name[len("bytes"):])
        found = _PRIMITIVES[name] = _Primitive(lambda r, n: r.raw(size, n), lambda w, v: w.raw(v), bytes(size),
                                               lambda long_size, nul: size)
    if found is None:
        raise KeyError(f"no record primitive is named {name!r}")  # a table in this package names it wrongly
    return found


def read_record(reader: FieldReader, table: RecordTable) -> Dict[str, Any]:
    return {name: _primitive(primitive).read(reader, name) for primitive, name in table}


def write_record(writer: FieldWriter, table: RecordTable, values: Mapping[str, Any]) -> None:
    for primitive, name in table:
        p = _primitive(primitive)
        p.write(writer, values.get(name, p.default))


def min_record_size(table: RecordTable, long_size: int, terminated: bool) -> int:
    """Fewest bytes one record can take: bounds declared counts before allocating."""
    return sum(_primitive(primitive).smallest(long_size, terminated) for primitive, _ in table)
