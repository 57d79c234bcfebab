"""Plans: what a partition needs to read, small enough to pickle, and how large partitions are.

Planning decodes definitions but no observation. A dataset attachment is cut into
``DatasetSlice``s at observation boundaries near message ends; an external file is read
whole by one ``AttachmentPlan``. Both name their messages by where they lie in the capture
files (``MessageSpan``s) and carry each file's capture format, so that ``decode.py`` can
re-read exactly those messages, checked against the length and CRC-32 seen at planning.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Mapping, Optional, Sequence, Tuple, Union

from ..charsets import CharsetPolicy
from ..cmi.assembly import Attachment
from ..cmi.wire import WireFormat
from ..errors import Location
from ..messages import MessageSpan, PhysicalMessage
from ..payload.sas_dataset import DatasetLayout, RecordStream, observation_messages

ContentKey = Tuple[int, int]  # (payload length, CRC-32): PhysicalMessage.content_key
LogicalRef = Tuple[MessageSpan, ...]  # the physical records of one logical message


@dataclass(frozen=True)
class AttachmentPlan:
    """Everything read() needs to decode one attachment's sequenced messages."""

    key_hex: str
    kind: str
    name: str
    wire: WireFormat
    refs: Tuple[LogicalRef, ...]  # sequenced messages 1..N
    charsets: CharsetPolicy
    formats: Mapping[str, str]  # capture format name of each source file in refs
    checks: Tuple[ContentKey, ...] = ()
    hints: Tuple[Any, ...] = ()  # each message's reread_hint, or () when none has one

    def sequence_of(self, location: Location) -> Optional[int]:
        """The sequence number of the planned message at ``location`` (refs are 1..N in order)."""
        return _sequence_at(self.refs, range(1, len(self.refs) + 1), location)


@dataclass(frozen=True)
class DatasetSlice:
    """Observations [first_row, last_row) of one dataset attachment: one Spark partition.

    It carries the decoded definitions, so read() re-reads only the observation messages
    that hold its rows (``refs``, whose data starts at ``base`` in the observation stream).
    """

    key_hex: str
    name: str
    layout: DatasetLayout
    charsets: CharsetPolicy
    refs: Tuple[LogicalRef, ...]
    base: int
    first_row: int
    last_row: int
    formats: Mapping[str, str]  # capture format name of each source file in refs
    checks: Tuple[ContentKey, ...] = ()
    header_bytes: Tuple[int, ...] = ()  # transport header bytes in front of each message's data, as captured
    hints: Tuple[Any, ...] = ()  # each message's reread_hint, or () when none has one
    sequences: Tuple[int, ...] = ()  # each message's sequence number in the attachment (errors name it)

    def sequence_of(self, location: Location) -> Optional[int]:
        """The sequence number of the planned message at ``location``, if it is one of them."""
        return _sequence_at(self.refs, self.sequences, location)


def _sequence_at(refs: Sequence[LogicalRef], sequences: Sequence[int], location: Location) -> Optional[int]:
    for ref, sequence in zip(refs, sequences):
        if any(span[0] == location.source and span[1] == location.message_index for span in ref):
            return sequence
    return None


def _formats_of(formats: Mapping[str, str], messages: Sequence[PhysicalMessage]) -> Mapping[str, str]:
    """The capture formats of the files these messages lie in (all a plan needs of ``formats``)."""
    sources = {span[0] for m in messages for span in m.spans}
    return {source: formats[source] for source in sorted(sources) if source in formats}


def _hints_of(messages: Sequence[PhysicalMessage]) -> Tuple[Any, ...]:
    hints = tuple(m.reread_hint for m in messages)
    return hints if any(h is not None for h in hints) else ()


def attachment_plan(att: Attachment, charsets: CharsetPolicy, formats: Mapping[str, str]) -> AttachmentPlan:
    messages = att.ordered_messages()
    return AttachmentPlan(att.key_hex, att.entry.kind, att.entry.name, att.header.wire,
                          tuple(m.spans for m in messages), charsets, _formats_of(formats, messages),
                          tuple(m.content_key for m in messages), _hints_of(messages))


def dataset_slices(att: Attachment, layout: DatasetLayout, stream: Optional[RecordStream], charsets: CharsetPolicy,
                   formats: Mapping[str, str], target_bytes: int,
                   rows: Optional[Tuple[int, int]] = None) -> List[DatasetSlice]:
    """The attachment's observations cut into slices of about ``target_bytes`` of observation
    stream, at the observation boundary nearest the end of a message (records may straddle
    messages), so that no slice is smaller than a message. Decodes no observation. ``rows``:
    the [first, last) observations of ``stream`` to cut (a trusted run of a damaged attachment,
    whose stream offsets place row r at r * obs_length); all of them by default.

    Sizes count the decoded observation bytes, not the capture file's: a hex dump holds more
    than twice as many bytes as the binary capture of the same rows, and the work and memory
    of a partition follow the rows it produces."""
    obslen = layout.definition.obs_length
    first_row, nobs = rows if rows is not None else (0, layout.observations)
    sequence_numbers = {(m.source, m.index): k for k, m in att.sequenced.items()}

    def make(first: int, last: int) -> DatasetSlice:
        if stream is None or first >= last:
            return DatasetSlice(att.key_hex, att.entry.name, layout, charsets, (), 0, first, last, {})
        lo, hi = observation_messages(stream, obslen, first, last)
        chosen = stream.messages[lo:hi]
        return DatasetSlice(att.key_hex, att.entry.name, layout, charsets,
                            tuple(m.spans for m in chosen), stream.starts[lo] if lo < hi else 0, first, last,
                            _formats_of(formats, chosen), tuple(m.content_key for m in chosen),
                            tuple(m.header_length for m in chosen), _hints_of(chosen),
                            tuple(sequence_numbers.get((m.source, m.index), 0) for m in chosen))

    if stream is None or not obslen or nobs <= first_row:
        return [make(0, 0)]
    cuts, held = [first_row], 0
    for m, start in zip(stream.messages, stream.starts):
        held += m.length - stream.skip
        if held >= target_bytes:
            row = (start + m.length - stream.skip) // obslen
            if cuts[-1] < row < nobs:
                cuts.append(row)
                held = 0
    cuts.append(nobs)
    return [make(a, b) for a, b in zip(cuts, cuts[1:])]


def partition_target(total_bytes: int, max_partition_bytes: int, min_partitions: int) -> int:
    """Bytes per partition, as Spark's file sources size them: at most max_partition_bytes and
    small enough that there are at least min_partitions. The count is then rounded up to a
    multiple of min_partitions (by default the cores), so that the last wave of tasks leaves
    no core idle: 5M rows of the benchmark in 6 partitions took 1.25 s, in 5 partitions 1.30 s."""
    slots = max(min_partitions, 1)
    count = max(-(-total_bytes // max(max_partition_bytes, 1)), 1)
    count = -(-count // slots) * slots
    return max(1, -(-total_bytes // count))


# What a partition pays for each slice besides decoding its rows: opening its file, re-reading
# and checking its messages, the Python around them (about 1 ms, as long as decoding 1 MB of
# observations takes). Counted when slices are packed into partitions, like Spark's
# spark.sql.files.openCostInBytes: a queue export of 10,000 small dumps, one task each, took
# 255 s to read on 2 cores; packed, a task reads many of them.
SLICE_OPEN_COST_BYTES = 1 << 20


@dataclass(frozen=True)
class SlicePack:
    """Several slices (small attachments) read one after another by one partition, in order."""

    slices: Tuple[DatasetSlice, ...]


def slice_bytes(part: DatasetSlice) -> int:
    """The observation bytes a slice decodes."""
    return (part.last_row - part.first_row) * part.layout.definition.obs_length


def pack_slices(slices: Sequence[DatasetSlice], sliced_at: int, max_partition_bytes: int,
                min_partitions: int) -> List[Union[DatasetSlice, SlicePack]]:
    """Consecutive slices (cut at ``sliced_at`` observation bytes) packed into partitions, each
    slice weighing its observation bytes plus SLICE_OPEN_COST_BYTES, the partitions sized by
    ``partition_target`` over the whole weight and never below one full slice. The weight is
    cut into equal shares and a slice goes to the share its middle falls in: partitions come
    out even (packing greedily left a last, nearly empty one), a slice as heavy as a share
    stays alone, and the order of the rows is kept."""
    weights = [slice_bytes(part) + SLICE_OPEN_COST_BYTES for part in slices]
    total = sum(weights)
    target_bytes = max(sliced_at + SLICE_OPEN_COST_BYTES,
                       partition_target(total, max_partition_bytes, min_partitions))
    share = total / max(-(-total // max(target_bytes, 1)), 1)
    groups: List[List[DatasetSlice]] = []
    last, before = -1, 0
    for part, weight in zip(slices, weights):
        number = int((before + weight / 2) // share)
        if number != last:
            groups.append([])
            last = number
        groups[-1].append(part)
        before += weight
    return [group[0] if len(group) == 1 else SlicePack(tuple(group)) for group in groups]
