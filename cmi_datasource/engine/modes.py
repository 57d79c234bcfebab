"""The read modes, one strategy each (as Spark's FailureSafeParser has them): what a read does
about damage. Every view reads damage through these, and so does the CLI.

- FAILFAST (the default) raises the first error, naming where: a silently partial data set is
  the worst outcome when replaying a transfer.
- PERMISSIVE returns what can be trusted plus a row per damaged stretch: nulls, and in the
  corrupt-record column (option ``columnNameOfCorruptRecord``) what was lost and where.
- DROPMALFORMED returns what can be trusted alone.

What can be trusted is decided once, in ``recovery.py``; a mode only says what becomes of the rest.
"""
from __future__ import annotations

from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa

from ..errors import CmiFormatError, CmiOptionError, not_one_of
from .options import DROPMALFORMED, FAILFAST, PERMISSIVE, ReadOptions
from .recovery import LostRows

LostInBatch = List[Tuple[int, LostRows]]  # (row in the batch, what is lost there)


class ReadMode:
    name: str
    raises = False  # damage raises: nothing is read around it
    reports = False  # a column, and rows of their own, say what was lost

    def __init__(self, corrupt_column: str):
        self.corrupt_column = corrupt_column

    def schema(self, schema: pa.Schema, view: str) -> pa.Schema:
        """The view's schema as this mode returns it."""
        return schema

    def nothing_trusted(self, lost: LostRows) -> None:
        """Nothing of the data set can be trusted (``lost``: the first of what is lost): the
        schema is then the report's alone, or this mode raises."""

    def good(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """A batch read whole, as this mode returns it."""
        return batch

    def lost_rows(self, batch: pa.RecordBatch, lost: LostInBatch) -> pa.RecordBatch:
        """A batch whose rows at ``lost`` (nulled) could not be decoded."""
        raise NotImplementedError

    def report(self, schema: pa.Schema, texts: Sequence[str]) -> Iterator[pa.RecordBatch]:
        """The rows saying what was lost outside any batch read (``schema``: this mode's)."""
        return iter(())

    def failed(self, error: CmiFormatError, row: Callable[[], pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """What a part that cannot be read gives: ``row()`` is the report row naming it."""
        raise error


class FailFast(ReadMode):
    name = FAILFAST
    raises = True


class Permissive(ReadMode):
    name = PERMISSIVE
    reports = True

    def schema(self, schema: pa.Schema, view: str) -> pa.Schema:
        if self.corrupt_column in schema.names:
            raise CmiOptionError(f"columnNameOfCorruptRecord {self.corrupt_column!r} is a column of view {view}; "
                                 f"name another column")
        return schema.append(pa.field(self.corrupt_column, pa.string()))

    def good(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        return pa.RecordBatch.from_arrays(batch.columns + [pa.nulls(batch.num_rows, pa.string())],
                                          schema=batch.schema.append(pa.field(self.corrupt_column, pa.string())))

    def lost_rows(self, batch: pa.RecordBatch, lost: LostInBatch) -> pa.RecordBatch:
        texts: List[Optional[str]] = [None] * batch.num_rows
        for at, rows in lost:
            texts[at] = rows.text()
        return pa.RecordBatch.from_arrays(batch.columns + [pa.array(texts, pa.string())],
                                          schema=batch.schema.append(pa.field(self.corrupt_column, pa.string())))

    def report(self, schema: pa.Schema, texts: Sequence[str]) -> Iterator[pa.RecordBatch]:
        if not texts:
            return iter(())
        columns = [pa.nulls(len(texts), f.type) for f in schema][:-1] + [pa.array(list(texts), pa.string())]
        return iter([pa.RecordBatch.from_arrays(columns, schema=schema)])

    def failed(self, error: CmiFormatError, row: Callable[[], pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return iter([row()])


class DropMalformed(ReadMode):
    name = DROPMALFORMED

    def nothing_trusted(self, lost: LostRows) -> None:
        raise lost.error.kind(f"nothing can be trusted: {lost.text()}", lost.error.location,
                              "option('mode', 'PERMISSIVE') returns a row saying what was lost and where; "
                              "option('view', 'attachments') shows every attachment's problems")

    def lost_rows(self, batch: pa.RecordBatch, lost: LostInBatch) -> pa.RecordBatch:
        if not lost:
            return batch
        keep = np.ones(batch.num_rows, dtype=bool)
        keep[[at for at, _ in lost]] = False
        return batch.filter(pa.array(keep))

    def failed(self, error: CmiFormatError, row: Callable[[], pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return iter(())


MODES: Dict[str, type] = {mode.name: mode for mode in (FailFast, Permissive, DropMalformed)}


def read_mode(o: ReadOptions) -> ReadMode:
    """The strategy of the read's option ``mode``."""
    chosen = MODES.get(o.mode)
    if chosen is None:
        raise not_one_of("mode", o.mode, list(MODES))
    return chosen(o.corrupt_column)
