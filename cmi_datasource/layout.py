"""Declarative binary structure tables (in the manner of dpkt).

A ``Layout`` is the spec's table written down once: field name, struct code and
default. Offsets, sizes, packing and unpacking in either byte order all come
from that table, so no structure offset is written anywhere else in the code.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple

from .errors import Location, TruncatedError

BIG = ">"
LITTLE = "<"


@dataclass(frozen=True)
class Field:
    name: str
    code: str  # struct code without byte order: "i", "q", "24s", ...
    default: Any = 0
    text: bool = False  # blank-padded character field (decoded/encoded by the caller's code page)

    @property
    def size(self) -> int:
        return struct.calcsize("=" + self.code)


class Layout:
    """A fixed binary structure described by an ordered field table."""

    def __init__(self, name: str, fields: Iterable[Field]):
        self.name = name
        self.fields: Tuple[Field, ...] = tuple(fields)
        self._structs = {order: struct.Struct(order + "".join(f.code for f in self.fields))
                         for order in (BIG, LITTLE)}
        self.size = self._structs[BIG].size
        offsets, at = {}, 0
        for f in self.fields:
            offsets[f.name] = at
            at += f.size
        self.offsets: Mapping[str, int] = offsets
        self.by_name: Mapping[str, Field] = {f.name: f for f in self.fields}

    def slice(self, name: str) -> slice:
        """Where field ``name`` lies in the structure's bytes."""
        start = self.offsets[name]
        return slice(start, start + self.by_name[name].size)

    def defaults(self) -> Dict[str, Any]:
        return {f.name: f.default for f in self.fields}

    def unpack(self, buf: bytes, offset: int = 0, order: str = BIG,
               location: Optional[Location] = None) -> Dict[str, Any]:
        if len(buf) - offset < self.size:
            raise TruncatedError(
                f"{self.name} needs {self.size} bytes but only {max(len(buf) - offset, 0)} remain",
                (location or Location()).at_payload(offset))
        values = self._structs[order].unpack_from(buf, offset)
        return dict(zip((f.name for f in self.fields), values))

    def pack(self, values: Mapping[str, Any], order: str = BIG) -> bytes:
        merged = []
        for f in self.fields:
            v = values.get(f.name, f.default)
            if f.text and isinstance(v, str):
                raise TypeError(f"{self.name}.{f.name} must be given as bytes already encoded")
            merged.append(v)
        return self._structs[order].pack(*merged)
