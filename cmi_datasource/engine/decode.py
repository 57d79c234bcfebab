"""Reading what was planned: planned messages re-read from their files, and a dataset slice's
observations as Arrow batches. This runs in Spark's partitions, far from planning.

Every message re-read is checked against the length and CRC-32 planning recorded, so a file
rewritten since then with the same size and mtime (``cp -p``, ``rsync -t``) is an error instead
of a mix of old and new data.
"""
from __future__ import annotations

from itertools import groupby
from typing import Any, Callable, Iterator, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa

from ..cmi.stream import OnePassStream, StreamOrigins
from ..errors import CmiFormatError, Location
from ..messages import MessageSpan, PhysicalMessage
from ..payload.sas_dataset import (DEFAULT_BATCH_ROWS, RECORD_TYPE_SIZE, ObservationChunk, chunks_of_parts,
                                   observation_batches)
from ..transports import CaptureFormat, capture_format
from .plan import ContentKey, DatasetSlice, LogicalRef
from .recovery import LostRows

# What a tolerant read makes of a batch whose bad rows are nulled: (batch, [(row, what is lost)]) -> batch.
BadRows = Callable[[pa.RecordBatch, List[Tuple[int, LostRows]]], pa.RecordBatch]


def reread_logical(refs: Sequence[LogicalRef], formats: Mapping[str, str],
                   checks: Optional[Sequence[ContentKey]] = None,
                   hints: Optional[Sequence[Any]] = None) -> Iterator[PhysicalMessage]:
    """Logical messages re-read from their physical records and rebuilt by their transport (with
    the ``reread_hint`` planning recorded), one at a time, so that a partition never holds all of
    its messages; each is checked against ``checks`` when given."""
    physical = _reread_physical([span for ref in refs for span in ref], formats)
    for number, ref in enumerate(refs):
        pieces = [next(physical) for _ in ref]
        message = _format_of(formats, ref[0][0]).transport.rebuild(pieces, hints[number] if hints else None)
        if checks is not None and message.content_key != checks[number]:
            raise CmiFormatError("the message differs from the one planned: the file changed while "
                                 "it was being read", message.location())
        yield message


def _format_of(formats: Mapping[str, str], source: str) -> CaptureFormat:
    name = formats.get(source)
    if name is None:
        raise CmiFormatError("the plan names no capture format for this file", Location(source))
    return capture_format(name)


def _reread_physical(spans: Sequence[MessageSpan], formats: Mapping[str, str]) -> Iterator[PhysicalMessage]:
    for source, run in groupby(spans, key=lambda s: s[0]):
        yield from _format_of(formats, source).reread(list(run))


def slice_batches(part: DatasetSlice, batch_rows: int = DEFAULT_BATCH_ROWS, temporal: bool = True,
                  messages: Optional[Sequence[PhysicalMessage]] = None,
                  bad_rows: Optional[BadRows] = None) -> Iterator[pa.RecordBatch]:
    """Record batches of a slice's observations; ``messages`` saves re-reading them from disk.
    An error names the attachment and the message's sequence number in it. ``bad_rows``: an
    observation whose values cannot be decoded does not raise; each batch, its bad rows nulled,
    goes through ``bad_rows(batch, [(row in batch, LostRows)])``, which gives what is yielded."""
    try:
        batches = _slice_batches(part, batch_rows, temporal, messages, bad_rows is not None)
        if bad_rows is None:
            yield from batches
            return
        row = part.first_row
        for decoded in batches:
            lost = [(at, LostRows(part.name, error.within(part.key_hex, part.sequence_of(error.location)),
                                  row + at, 1)) for at, error in decoded.bad]
            yield bad_rows(decoded.batch, lost)
            row += decoded.batch.num_rows
    except CmiFormatError as e:
        raise e.within(part.key_hex, part.sequence_of(e.location)) from None


def _slice_batches(part: DatasetSlice, batch_rows: int, temporal: bool,
                   messages: Optional[Sequence[PhysicalMessage]], tolerant: bool) -> Iterator:
    if part.first_row >= part.last_row:
        return
    codepage = part.charsets.code_page_for(part.layout.ccsid)
    if messages is None and _decodes_in_bulk(part):
        observations = _BulkObservations(part)
        chunks, locate = iter(observations), observations.locate
    else:
        stream = OnePassStream(reread_logical(part.refs, part.formats, part.checks or None, part.hints)
                               if messages is None else messages, skip=RECORD_TYPE_SIZE, base=part.base)
        obslen = part.layout.definition.obs_length
        chunks, locate = chunks_of_parts(stream.parts(), obslen, max(batch_rows, 1) * obslen), stream.locate
    yield from observation_batches(part.layout, chunks, locate, codepage, batch_rows, temporal,
                                   part.first_row, part.last_row, tolerant)


def _decodes_in_bulk(part: DatasetSlice) -> bool:
    """Whether the slice's messages can be decoded by their formats' fast paths: each is one
    physical record, with its header bytes and content key planned, in a format that has one."""
    if (not part.checks or part.hints or len(part.header_bytes) != len(part.refs)
            or any(len(ref) != 1 for ref in part.refs)):
        return False
    return all(_format_of(part.formats, source).decodes_in_bulk for source in {ref[0][0] for ref in part.refs})


class _BulkObservations:
    """The observation chunks of a slice, decoded by the formats' fast paths a file piece at a
    time; each message is checked against its planned length and CRC-32 before its bytes are used."""

    def __init__(self, part: DatasetSlice):
        self.part = part
        self.origins = StreamOrigins(RECORD_TYPE_SIZE)
        self.locate = self.origins.locate

    def _pieces(self, heads: np.ndarray, room: int):
        """Each run of spans in one capture format, through that format's fast path."""
        spans = [ref[0] for ref in self.part.refs]
        formats = self.part.formats
        at = 0
        for name, run in groupby(spans, key=lambda span: formats[span[0]]):
            run = list(run)
            yield from capture_format(name).payload_pieces(run, heads[at:at + len(run)], room)
            at += len(run)

    def __iter__(self) -> Iterator[ObservationChunk]:
        part = self.part
        room = part.layout.definition.obs_length
        strips = np.asarray(part.header_bytes, dtype=np.int64)
        at, number = part.base, 0
        for piece in self._pieces(strips + RECORD_TYPE_SIZE, room):
            count = len(piece.spans)
            lengths, crcs = piece.content_keys(strips[number:number + count])
            planned = part.checks[number:number + count]
            if list(zip(lengths, crcs)) != list(planned):
                bad = next(i for i, key in enumerate(zip(lengths, crcs)) if key != planned[i])
                source, index, offset, _ = piece.spans[bad]
                raise CmiFormatError("the message differs from the one planned: the file changed since "
                                     "it was planned", Location(source, index, offset))
            self.origins.extend((at + piece.data_starts[:-1]).tolist(), (span[:3] for span in piece.spans))
            number += count
            yield ObservationChunk(at, piece.buffer, piece.room, piece.room + int(piece.data_starts[-1]))
            at += int(piece.data_starts[-1])
