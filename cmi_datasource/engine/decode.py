"""Reading what was planned: a dataset slice's observations as Arrow batches, from its messages
re-read (``reread.py``) or, where a format has one, through its fast path over the file's bytes.
This runs in Spark's partitions, far from planning."""
from __future__ import annotations

from itertools import groupby
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa

from ..cmi.stream import OnePassStream, StreamOrigins
from ..errors import CmiFormatError, Location
from ..messages import PhysicalMessage
from ..payload.sas_dataset import (DEFAULT_BATCH_ROWS, DEFAULT_TEMPORAL_TYPES, RECORD_TYPE_SIZE, ObservationChunk,
                                   TemporalTypes, chunks_of_parts, observation_batches)
from ..transports import capture_format
from .plan import DatasetSlice
from .recovery import LostRows
from .reread import PlannedMessages, bulk_columns, format_of, reread

# What a tolerant read makes of a batch whose bad rows are nulled: (batch, [(row, what is lost)]) -> batch.
BadRows = Callable[[pa.RecordBatch, List[Tuple[int, LostRows]]], pa.RecordBatch]


def slice_batches(part: DatasetSlice, batch_rows: int = DEFAULT_BATCH_ROWS,
                  temporal: TemporalTypes = DEFAULT_TEMPORAL_TYPES,
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


def _slice_batches(part: DatasetSlice, batch_rows: int, temporal: TemporalTypes,
                   messages: Optional[Sequence[PhysicalMessage]], tolerant: bool) -> Iterator:
    if part.first_row >= part.last_row:
        return
    codepage = part.charsets.code_page_for(part.layout.ccsid)
    if messages is None and _decodes_in_bulk(part):
        observations = _BulkObservations(part)
        chunks, locate = iter(observations), observations.locate
    else:
        stream = OnePassStream(reread(part.messages, part.formats) if messages is None else messages,
                               skip=RECORD_TYPE_SIZE, base=part.base)
        obslen = part.layout.definition.obs_length
        chunks, locate = chunks_of_parts(stream.parts(), obslen, max(batch_rows, 1) * obslen), stream.locate
    yield from observation_batches(part.layout, chunks, locate, codepage, batch_rows, temporal,
                                   part.first_row, part.last_row, tolerant)


def _decodes_in_bulk(part: DatasetSlice) -> bool:
    """Whether the slice's messages can be decoded by their formats' fast paths: each is one
    physical record, in a format whose fast path rebuilds it with its hint (``bulk_decodes``)."""
    messages = part.messages
    if isinstance(messages, PlannedMessages):  # one record each, no hint
        return all(format_of(part.formats, source).bulk_decodes(None) for source in messages.sources)
    if any(len(m.spans) != 1 for m in messages):
        return False
    formats = {source: format_of(part.formats, source) for source in {m.spans[0][0] for m in messages}}
    return all(formats[m.spans[0][0]].bulk_decodes(m.hint) for m in messages)


class _BulkObservations:
    """The observation chunks of a slice, decoded by the formats' fast paths a file piece at a
    time; each message is checked against its planned length and CRC-32 before its bytes are used."""

    def __init__(self, part: DatasetSlice):
        self.part = part
        self.columns = bulk_columns(part.messages)
        self.origins = StreamOrigins(RECORD_TYPE_SIZE)
        self.locate = self.origins.locate

    def _pieces(self, heads: np.ndarray, room: int):
        """Each run of spans in one capture format, through that format's fast path."""
        formats = self.part.formats
        spans, hints = self.columns.spans, self.columns.hints
        at = 0
        for name, group in groupby(spans, key=lambda span: formats[span[0]]):
            count = sum(1 for _ in group)
            yield from capture_format(name).payload_pieces(spans[at:at + count], heads[at:at + count], room,
                                                           hints[at:at + count])
            at += count

    def __iter__(self) -> Iterator[ObservationChunk]:
        part, columns = self.part, self.columns
        room = part.layout.definition.obs_length
        strips = columns.header_bytes
        at, number = part.base, 0
        for piece in self._pieces(strips + RECORD_TYPE_SIZE, room):
            count = len(piece.spans)
            lengths, crcs = piece.content_keys(strips[number:number + count])
            planned_lengths = columns.lengths[number:number + count]
            planned_crcs = columns.crcs[number:number + count]
            if lengths != planned_lengths or crcs != planned_crcs:
                bad = next(i for i, key in enumerate(zip(lengths, crcs))
                           if key != (planned_lengths[i], planned_crcs[i]))
                source, index, offset, _ = piece.spans[bad]
                raise CmiFormatError("the message differs from the one planned: the file changed since "
                                     "it was planned", Location(source, index, offset))
            self.origins.extend((at + piece.data_starts[:-1]).tolist(), (span[:3] for span in piece.spans))
            number += count
            yield ObservationChunk(at, piece.buffer, piece.room, piece.room + int(piece.data_starts[-1]))
            at += int(piece.data_starts[-1])
