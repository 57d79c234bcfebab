"""Declarative record tables for variable-length CMI records (seed 000).

A record is an ordered table of (primitive, name). The same table drives reading
and writing, so the order of fields in the spec is written down exactly once.
Primitives: int, short, long, char, string (long length + chars [+ NUL]), raw4.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Sequence, Tuple

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
    ("raw4", "read_password"),
    ("int", "write_password_flag"),
    ("raw4", "write_password"),
    ("int", "alter_password_flag"),
    ("raw4", "alter_password"),
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

_DEFAULTS = {"int": 0, "short": 0, "long": 0, "char": 0, "string": b"", "raw4": bytes(4)}


def read_record(reader: FieldReader, table: RecordTable) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for primitive, name in table:
        if primitive == "string":
            out[name] = reader.string(name)
        elif primitive == "raw4":
            out[name] = reader.raw(4, name)
        else:
            out[name] = getattr(reader, "int32" if primitive == "int" else primitive)(name)
    return out


def write_record(writer: FieldWriter, table: RecordTable, values: Mapping[str, Any]) -> None:
    for primitive, name in table:
        v = values.get(name, _DEFAULTS[primitive])
        if primitive == "string":
            writer.string(v)
        elif primitive == "raw4":
            writer.raw(v)
        else:
            getattr(writer, "int32" if primitive == "int" else primitive)(v)


def min_record_size(table: RecordTable, long_size: int, terminated: bool) -> int:
    """Fewest bytes one record can take: bounds declared counts before allocating."""
    sizes = {"int": 4, "short": 2, "char": 1, "raw4": 4, "long": long_size,
             "string": long_size + (1 if terminated else 0)}
    return sum(sizes[p] for p, _ in table)
