"""Plans: what a partition needs to read, small enough to pickle, and how large partitions are.

Planning decodes definitions but no observation. A dataset attachment is cut into
``DatasetSlice``s at observation boundaries near message ends; an external file is read
whole by one ``AttachmentPlan``. Both name their messages by where they lie in the capture
files (``MessageSpan``s) and carry each file's capture format, so that ``decode.py`` can
re-read exactly those messages, checked against the length and CRC-32 seen at planning.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, List, Mapping, Optional, Sequence, Tuple, Union

from ..charsets import CharsetPolicy
from ..cmi.assembly import Attachment
from ..cmi.wire import WireFormat
from ..errors import Location
from ..messages import PhysicalMessage
from ..payload.sas_dataset import DatasetLayout, RecordStream, observation_messages
from .recovery import Recovery, whole
from .reread import Planned, PlannedMessage, PlannedMessages, planned_messages

if TYPE_CHECKING:
    from .capture import Capture

class Part:
    """What one partition reads; every view's plan is a list of them. ``rows``: the rows it
    holds, when planning knows them; ``attachments``: the keys of the attachments it reads."""

    rows: Optional[int] = None
    attachments: Tuple[str, ...] = ()


@dataclass(frozen=True)
class NoRows(Part):
    """The one partition of a view with nothing to read: Spark is given at least one."""

    rows = 0


@dataclass(frozen=True)
class AttachmentPlan(Part):
    """Everything read() needs to decode one attachment's sequenced messages."""

    key_hex: str
    kind: str
    name: str
    wire: WireFormat
    messages: Planned  # sequenced messages 1..N
    charsets: CharsetPolicy
    formats: Mapping[str, str]  # capture format name of each source file the messages lie in

    rows = 1  # one file

    @property
    def attachments(self) -> Tuple[str, ...]:  # type: ignore[override]
        return (self.key_hex,)

    def sequence_of(self, location: Location) -> Optional[int]:
        """The sequence number of the planned message at ``location``."""
        return _sequence_at(self.messages, location)


@dataclass(frozen=True)
class DatasetSlice(Part):
    """Observations [first_row, last_row) of one dataset attachment: one Spark partition.

    It carries the decoded definitions, so read() re-reads only the observation messages
    that hold its rows (``messages``, whose data starts at ``base`` in the observation stream).
    """

    key_hex: str
    name: str
    layout: DatasetLayout
    charsets: CharsetPolicy
    messages: Planned
    base: int
    first_row: int
    last_row: int
    formats: Mapping[str, str]  # capture format name of each source file the messages lie in

    @property
    def rows(self) -> int:  # type: ignore[override]
        return self.last_row - self.first_row

    @property
    def attachments(self) -> Tuple[str, ...]:  # type: ignore[override]
        return (self.key_hex,)

    def sequence_of(self, location: Location) -> Optional[int]:
        """The sequence number of the planned message at ``location``, if it is one of them."""
        return _sequence_at(self.messages, location)


def _sequence_at(messages: Sequence[PlannedMessage], location: Location) -> Optional[int]:
    if isinstance(messages, PlannedMessages):
        return messages.sequence_at(location)
    for m in messages:
        if any(span[0] == location.source and span[1] == location.message_index for span in m.spans):
            return m.sequence
    return None


def planned_message_count(part: Part) -> int:
    """The messages a part re-reads."""
    if isinstance(part, SlicePack):
        return sum(len(piece.messages) for piece in part.slices)
    return len(part.messages) if isinstance(part, (AttachmentPlan, DatasetSlice)) else 0


def _formats_of(formats: Mapping[str, str], messages: Sequence[PhysicalMessage]) -> Mapping[str, str]:
    """The capture formats of the files these messages lie in (all a plan needs of ``formats``)."""
    sources = {span[0] for m in messages for span in m.spans}
    return {source: formats[source] for source in sorted(sources) if source in formats}


def attachment_plan(capture: "Capture", att: Attachment) -> AttachmentPlan:
    """The plan of a complete external file (raises IncompleteAttachmentError for another)."""
    messages = att.ordered_messages()
    return AttachmentPlan(att.key_hex, att.entry.kind, att.entry.name, att.header.wire,
                          planned_messages(messages, range(1, len(messages) + 1)), capture.charsets,
                          _formats_of(capture.formats, messages))


def whole_run(capture: "Capture", att: Attachment) -> Recovery:
    """A complete, undamaged dataset attachment as one trusted run (raises on a bad layout)."""
    return whole(att, *capture.layout_and_observations(att))


def dataset_slices(capture: "Capture", att: Attachment, readable: Recovery, target_bytes: int) -> List[DatasetSlice]:
    """The slices of the trusted runs of a dataset attachment (every row, for ``whole_run``)."""
    layout = readable.layout
    if layout is None:
        return []
    return [part for run in readable.runs
            for part in cut_slices(att, layout, run.stream, capture.charsets, capture.formats,
                                   _target(capture, layout, run.stream, target_bytes), (run.first_row, run.last_row))]


def _target(capture: "Capture", layout: DatasetLayout, stream: RecordStream, target_bytes: int) -> int:
    whole = capture.read_whole
    if whole and any(span[0] in whole for m in stream.messages for span in m.spans):
        # Each partition would decompress (or reassemble) the file from its start: one reads it, once.
        return max(target_bytes, layout.observation_bytes, stream.length)
    return target_bytes


def cut_slices(att: Attachment, layout: DatasetLayout, stream: RecordStream, charsets: CharsetPolicy,
               formats: Mapping[str, str], target_bytes: int, rows: Tuple[int, int]) -> List[DatasetSlice]:
    """The observations [first, last) of ``stream`` (``rows``; the stream's offsets place row r
    at r * obs_length) cut into slices of about ``target_bytes`` of observation stream, at the
    observation boundary nearest the end of a message (records may straddle messages), so that
    no slice is smaller than a message. Decodes no observation.

    Sizes count the decoded observation bytes, not the capture file's: a hex dump holds more
    than twice as many bytes as the binary capture of the same rows, and the work and memory
    of a partition follow the rows it produces."""
    obslen = layout.definition.obs_length
    first_row, nobs = rows
    sequence_numbers = {(m.source, m.index): k for k, m in att.sequenced.items()}

    def make(first: int, last: int) -> DatasetSlice:
        lo, hi = observation_messages(stream, obslen, first, last)
        chosen = stream.messages[lo:hi]
        return DatasetSlice(att.key_hex, att.entry.name, layout, charsets,
                            planned_messages(chosen, [sequence_numbers.get((m.source, m.index), 0) for m in chosen]),
                            stream.starts[lo] if lo < hi else 0, first, last, _formats_of(formats, chosen))

    if nobs <= first_row:
        return []
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
class SlicePack(Part):
    """Several slices (small attachments) read one after another by one partition, in order."""

    slices: Tuple[DatasetSlice, ...]

    @property
    def rows(self) -> int:  # type: ignore[override]
        return sum(part.rows for part in self.slices)

    @property
    def attachments(self) -> Tuple[str, ...]:  # type: ignore[override]
        return tuple(dict.fromkeys(part.key_hex for part in self.slices))


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
