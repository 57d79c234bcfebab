"""A folder of captures read as a stream (``spark.readStream.format("cmi")``), without Spark: the
offsets, which files and attachments each micro-batch reads, and its parts. A micro-batch is a
batch read (``reading.py``) of its files restricted to what it emits: the attachments that
complete in it, and the rows of its new files (messages, a transport's own view). ``STREAMED``
says, per view, which attachments its stream waits for and what becomes of one given up.

The offset (a JSON dict, what Spark checkpoints) holds:

- ``taken``: ``[mtime_ns, path]`` of the newest file read, and ``same_time``: the paths read with
  that very modification time. Files are taken in the order of (modification time, path): every
  file older than ``taken`` has been read, every newer one not, and of those with its time the
  ones ``same_time`` lists (a file landing in the same tick as the newest read, with a name
  sorting before it, is read next: an object store's times have whole seconds). So the offset
  stays small whatever the number of files (no list of every file seen). An offset without
  ``same_time`` (checkpointed by an earlier version) read every file at or before ``taken``.
- ``carried``: ``[path, mtime_ns]`` of the files holding messages of ``waiting`` attachments:
  each micro-batch reads them again with its new files, so an attachment rotated into the next
  file completes there.
- ``waiting``: the keys of the attachments the stream waits for still incomplete, and
  ``waiting_since``: since when each waits (the micro-batch that last read a message of it);
  one waiting longer than ``attachmentTimeout`` is given up, never while a read limit leaves
  landed files for later micro-batches.
- ``new``: how many files the micro-batch ending here took after the previous ``taken``, and a
  digest of their paths: replaying the micro-batch (after a failure) checks that it reads the
  same files.
- ``given_up``: the attachments this micro-batch gives up: the read mode decides about them.

A micro-batch (``start`` to ``end``) reads the files ``start`` carries and the files ``end`` has
taken and ``start`` not, and emits the attachments settled there and not emitted before: those
``start`` waited for, and those whose header lies in no carried file (one whose header lies in a
carried file was settled, and emitted, or given up when that file was first read). Both steps
are functions of the offsets and the files alone, so a replay emits the same rows: with Spark's
checkpoint every row reaches the sink once.

Limits (docs/streaming.md): a file must land whole (written elsewhere and moved in) and with a
modification time no older than the newest file read; a file changed after it was read is not
read again.
"""
from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, replace
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

import pyarrow as pa

from ..cmi.assembly import CONFLICTING_DUPLICATES, Attachment
from ..cmi.header import ATTACHMENT_DATASET
from ..messages import PhysicalMessage
from ..errors import AttachmentError, CmiError, CmiOptionError, IncompleteAttachmentError
from ..payload.sas_dataset import arrow_schema
from ..storage import PathNotFoundError, exists, times_and_sizes
from .capture import Capture, open_cached
from .load import Load
from .modes import read_mode
from .options import ReadOptions
from .plan import Part
from .reading import plan, read_part
from .selection import check_undamaged, check_unplaced_damage, names_dataset
from .views import view

_LOG = logging.getLogger(__name__)

OFFSET_VERSION = 1

# A read limit of a micro-batch: ("files", n), ("bytes", n), or None (all that is there).
Limit = Optional[Tuple[str, int]]


@dataclass(frozen=True, order=True)
class Landed:
    """A capture file of the folder, in the order files are taken: by modification time, then path."""

    mtime_ns: int
    path: str
    size: int = 0

    @property
    def mark(self) -> Tuple[int, str]:
        return (self.mtime_ns, self.path)


# Which attachments a stream waits for (it emits each once, when complete or given up).
Follows = Callable[[ReadOptions, Attachment], bool]


@dataclass(frozen=True)
class Streamed:
    """How a view is read as a stream."""

    # The attachments the stream waits for: their rows are emitted once, when complete (None:
    # nothing waits, each micro-batch emits the rows of its new files).
    follows: Optional[Follows]
    # Whether an attachment given up is damage, as an incomplete one is in a batch read of the
    # view (FAILFAST fails the query); otherwise the view lists it, incomplete.
    given_up_is_damage: bool = False
    # Whether every attachment must have the variables of the stream's schema (taken from the
    # first attachment); otherwise the view's schema is fixed.
    one_layout: bool = False
    # Whether the view has rows of files beside those of attachments (a message, a broken
    # header, a file left out): each micro-batch emits those of its new files.
    rows_of_files: bool = False
    # Whether PERMISSIVE's report rows name the files a read left out (ignoreCorruptFiles,
    # ignoreMissingFiles): the batch read's planning does when it reads an attachment; a
    # micro-batch that reads none reports its own left out.
    reports_left_out: bool = False


def _is_dataset(options: ReadOptions, att: Attachment) -> bool:
    return att.entry.attachment_type == ATTACHMENT_DATASET


STREAMED: Dict[str, Streamed] = {
    "dataset": Streamed(lambda o, a: names_dataset(o.dataset or "", a), given_up_is_damage=True, one_layout=True,
                        reports_left_out=True),
    "attachments": Streamed(lambda o, a: True, rows_of_files=True),
    "variables": Streamed(_is_dataset),
    "files": Streamed(lambda o, a: not _is_dataset(o, a), given_up_is_damage=True),
    # The messages of a file are its rows; waiting for attachments keeps the files of their
    # first messages in the read, so a message's attachment columns are as a batch read gives them.
    "messages": Streamed(lambda o, a: True, rows_of_files=True),
}
FILE_BY_FILE = Streamed(None, rows_of_files=True)  # a transport's own view (sapdb): each file read on its own


def streamed(options: ReadOptions) -> Streamed:
    """How the view of ``options`` streams (a transport's view: file by file)."""
    found = STREAMED.get(options.view)
    if found is not None:
        return found
    view(options.view)  # an unknown view: the error lists them
    return FILE_BY_FILE


def stream_options(options: ReadOptions) -> ReadOptions:
    """The options of a stream, checked: the dataset view reads one data set, named."""
    streamed(options)
    if options.view == "dataset" and not options.dataset:
        raise CmiOptionError("a stream of the dataset view reads one data set: name it with "
                             "option('dataset', 'LIB.MEMBER'), or stream option('view', 'attachments') or 'messages'")
    return options


def _digest(paths: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(paths).encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _messages(att: Attachment) -> List[PhysicalMessage]:
    found = [att.header_message, att.application, att.count_message, *att.sequenced.values()]
    return [m for m in found if m is not None]


def _settled(att: Attachment) -> bool:
    """Whether no message landing later can change what a read gives of the attachment: it is
    complete, or every message of it is there and what is untrusted is so for conflicting copies."""
    if att.complete:
        return True
    expected = att.expected
    if expected is None or len(att.sequenced) != expected or att.header_message is None:
        return False  # the length check first: the count is untrusted, the walk below bounded by it
    return (all(k in att.sequenced for k in range(1, expected + 1)) and bool(att.untrusted)
            and set(att.untrusted.values()) == {CONFLICTING_DUPLICATES})


def _attachment_files(att: Attachment) -> Set[str]:
    """The files holding any message of the attachment."""
    return {span[0] for m in _messages(att) for span in m.spans}


@dataclass(frozen=True)
class Sorted:
    """The attachments a stream follows in the files of a micro-batch, by what becomes of them."""

    emitted: Tuple[str, ...]  # settled now, not emitted before
    incomplete: Dict[str, Set[str]]  # key -> its files: still waiting, unless given up


def sort_attachments(capture: Capture, follows: Callable[[Attachment], bool], carried: Set[str],
                     waiting: Set[str]) -> Sorted:
    """The rule of the module docstring, for the attachments the stream ``follows``. An
    attachment whose header lies in a carried file and that was not waiting was seen whole
    before (emitted, or given up): it is neither emitted nor waited for again (its data messages
    may lie anywhere: they may land before its header). An incomplete attachment waits, damaged
    or not: what it lacks (a message, a segment, an undamaged copy) may still land; the read mode
    decides when it is given up."""
    emitted: List[str] = []
    incomplete: Dict[str, Set[str]] = {}
    for att in capture.attachments:
        if not follows(att):
            continue
        key, files = att.key_hex, _attachment_files(att)
        new = key in waiting or att.header_message.source not in carried
        if not new:
            continue
        if _settled(att):
            emitted.append(key)
        else:
            incomplete[key] = files
    return Sorted(tuple(dict.fromkeys(emitted)), incomplete)


@dataclass(frozen=True)
class StreamReport(Part):
    """PERMISSIVE's rows about attachments a micro-batch does not read (other variables than the
    stream's schema): nulls, and the corrupt-record column saying why."""

    texts: Tuple[str, ...]

    rows = 0


@dataclass(frozen=True)
class BatchPart:
    """One partition of a micro-batch: a part of the batch read over the micro-batch's files
    (``options``: the stream's, with those files and the attachments emitted), or a report."""

    options: ReadOptions
    part: Part


class FolderStream:
    """The stream of a view's rows from the capture files landing under ``options.paths``."""

    def __init__(self, options: ReadOptions, schema: pa.Schema):
        self.options = stream_options(options)
        self.streamed = streamed(self.options)
        self.schema = schema  # the stream's, as Spark has it (the read mode's columns included)
        self.target: Optional[Tuple[int, str]] = None  # trigger(availableNow=True): no file after it

    # -- files ----------------------------------------------------------------------------------

    def landed(self) -> List[Landed]:
        """The capture files there now (the read's file options applied), in the order taken."""
        try:
            files = self.options.files()
        except PathNotFoundError:
            if any(exists(p) for p in self.options.paths):
                return []  # a folder with nothing (chosen) in it yet
            raise
        return sorted(Landed(info[0], path, info[1]) for path, info in zip(files, times_and_sizes(files))
                      if info is not None)

    def _after(self, landed: Sequence[Landed], offset: dict) -> List[Landed]:
        """The files ``offset`` has not taken."""
        return [f for f in landed if not _taken(f, offset)]

    # -- offsets --------------------------------------------------------------------------------

    def initial_offset(self) -> dict:
        return {"version": OFFSET_VERSION, "taken": None, "same_time": [], "carried": [], "waiting": [],
                "new": {"files": 0, "digest": _digest([])}, "given_up": []}

    def prepare_available_now(self) -> None:
        """``trigger(availableNow=True)``: the files there now are the last the query takes."""
        landed = self.landed()
        self.target = landed[-1].mark if landed else (-1, "")

    def latest_offset(self, start: dict, limit: Limit, now_ns: Optional[int] = None) -> dict:
        """The offset ending the next micro-batch: ``start`` itself when there is nothing to do."""
        start = _checked(start)
        landed = self.landed()
        new = self._after(landed, start)
        if self.target is not None:
            new = [f for f in new if f.mark <= self.target]
        unlimited = len(new)
        new = _limited(new, limit)
        waiting = set(start["waiting"])
        if not new and not waiting:
            return start
        carried = {path: mtime for path, mtime in start["carried"]}
        files = sorted([Landed(mtime, path) for path, mtime in carried.items()] + new)
        found = self._sorted([f.path for f in files], set(carried), waiting)
        mtimes = {f.path: f.mtime_ns for f in files}
        now_ns = time.time_ns() if now_ns is None else now_ns
        timeout_ns = int(self.options.attachment_timeout * 1e9)
        new_paths = {f.path for f in new}
        known = dict(start.get("waiting_since", ()))
        # Since when each attachment waits: when the stream last read a message of it (an
        # offset written before waiting_since: its newest file's modification time).
        since = {key: now_ns if (held & new_paths or key not in waiting) else
                 int(known.get(key, max(mtimes.get(p, 0) for p in held)))
                 for key, held in found.incomplete.items()}
        # None is given up while the read limit leaves landed files for later micro-batches.
        given_up = [] if len(new) < unlimited else sorted(
            key for key in found.incomplete if now_ns - since[key] > timeout_ns)
        still = {key: held for key, held in found.incomplete.items() if key not in given_up}
        if not new and not given_up:
            return start  # the waiting attachments wait on
        end = {"version": OFFSET_VERSION,
               **_taken_after(start, landed, new),
               "carried": sorted([p, mtimes[p]] for p in set().union(*still.values()) if p in mtimes),
               "waiting": sorted(still),
               "waiting_since": sorted([key, since[key]] for key in still),
               "new": {"files": len(new), "digest": _digest([f.path for f in new])},
               "given_up": given_up}
        return end

    def _sorted(self, paths: Sequence[str], carried: Set[str], waiting: Set[str],
                capture: Optional[Capture] = None) -> Sorted:
        """``sort_attachments`` over the files (nothing to sort when the view follows none)."""
        follows = self.streamed.follows
        if follows is None:
            return Sorted((), {})
        options = self.options
        return sort_attachments(capture or self._capture(paths), lambda a: follows(options, a), carried, waiting)

    def _capture(self, paths: Sequence[str]) -> Capture:
        o = self.options
        return open_cached(paths, o.charsets, o.format, o.transport_options, o.ignore_corrupt_files, listed=True,
                           ignore_missing=o.ignore_missing_files)

    # -- a micro-batch --------------------------------------------------------------------------

    def batch_files(self, start: dict, end: dict) -> List[str]:
        """The files the micro-batch from ``start`` to ``end`` reads: those ``start`` carries and
        the new ones, checked against what ``end`` recorded of them."""
        start, end = _checked(start), _checked(end)
        new = [f for f in self._after(self.landed(), start) if _taken(f, end)]
        paths = [f.path for f in new]
        if len(paths) != end["new"]["files"] or _digest(paths) != end["new"]["digest"]:
            raise CmiOptionError(
                f"the files of a micro-batch differ from those it took when it was planned ({end['new']['files']} "
                f"then, {len(paths)} now): a file landed with a modification time older than the newest file read, "
                f"or one was removed; files must land in modification-time order and stay until read (see "
                f"docs/streaming.md)")
        carried = [Landed(mtime, path) for path, mtime in start["carried"]]
        return [f.path for f in sorted(carried + new)]

    def partitions(self, start: dict, end: dict) -> List[BatchPart]:
        """The micro-batch's parts: the batch read's parts over its files, of the attachments it
        emits and of its new files; the attachments given up as the view has incomplete ones."""
        if _checked(start) == _checked(end):
            return []
        files = self.batch_files(start, end)
        if not files:
            return []
        carried = {p for p, _ in start["carried"]}
        new = tuple(p for p in files if p not in carried)
        capture = None if self.streamed.follows is None else self._capture(files)
        found = self._sorted(files, carried, set(start["waiting"]), capture)
        emitted = list(found.emitted) + [k for k in end["given_up"] if k in found.incomplete]
        mode = read_mode(self.options)
        texts: List[str] = []
        if capture is not None:
            if self.streamed.given_up_is_damage and mode.raises:
                # As a batch read of these files fails, in its order: on damage no attachment
                # holds, on a damaged message of an attachment emitted, on those given up.
                check_unplaced_damage(capture)
                check_undamaged([a for a in capture.attachments if a.key_hex in emitted])
                self._fail_on_given_up(capture, end["given_up"])
            if self.streamed.one_layout:
                emitted, texts = self._same_variables(capture, emitted)
            if self.streamed.reports_left_out and not emitted:
                texts += [f.text() for f in capture.left_out]
        parts: List[BatchPart] = []
        if emitted or (new and self.streamed.rows_of_files):
            options = replace(self.options, paths=tuple(files), attachments=tuple(emitted), new_files=new)
            parts += [BatchPart(options, part) for part in plan(Load(options)).parts or ()]
        if texts and mode.reports:
            parts.append(BatchPart(self.options, StreamReport(tuple(texts))))
        return parts

    def _fail_on_given_up(self, capture: Capture, given_up: Sequence[str]) -> None:
        for att in capture.attachments:
            if att.key_hex in given_up:
                raise IncompleteAttachmentError(
                    f"attachment {att.key_hex} ({att.entry.kind} {att.entry.name}) is still incomplete after option "
                    f"attachmentTimeout ({self.options.attachment_timeout:g} s) since the stream last read a message "
                    f"of it: {att.why_incomplete()}", att.header_message.location().within(att.key_hex),
                    "the rest of its messages never landed: option('mode', 'PERMISSIVE') reads what can be trusted "
                    "of it and reports the rest; a longer option('attachmentTimeout', ...) waits longer")

    def _same_variables(self, capture: Capture, keys: Sequence[str]) -> Tuple[List[str], List[str]]:
        """The attachments whose variables give the stream's schema, and a report text for each
        other one (FAILFAST raises on the first)."""
        mode = read_mode(self.options)
        wanted = [f for f in self.schema if f.name != self.options.corrupt_column or not mode.reports]
        kept, texts = [], []
        by_key = {a.key_hex: a for a in capture.dataset_attachments()}
        for key in keys:
            att = by_key[key]
            layout = capture.layout(att) if mode.raises else capture.recovery(att).layout
            if layout is None:
                if mode.reports:
                    kept.append(key)  # nothing trusted: the batch read reports what is lost
                continue
            own = arrow_schema(layout, self.options.temporal_types)
            if [(f.name, f.type) for f in own] == [(f.name, f.type) for f in wanted]:
                kept.append(key)
                continue
            problem = (f"attachment {key} of {att.entry.name} has other variables than the stream's schema "
                       f"({', '.join(own.names)}; the stream's: {', '.join(f.name for f in wanted)})")
            if mode.raises:
                raise AttachmentError(problem, att.header_message.location().within(key),
                                      "a stream keeps the schema it started with: read this attachment with "
                                      "spark.read and option('attachment', key), or start another query for it")
            _LOG.warning("%s: not read", problem)
            texts.append(f"{att.entry.name}: {problem}; not read")
        return kept, texts

    def read(self, part: BatchPart) -> Iterator[pa.RecordBatch]:
        """A partition's batches in the stream's schema (a report row may lack the data columns)."""
        if isinstance(part.part, StreamReport):
            batches = read_mode(self.options).report(self.schema, part.part.texts)
        else:
            batches = read_part(Load(part.options), part.part)
        for batch in batches:
            yield conformed(batch, self.schema)


def conformed(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with ``schema``'s columns: its own by name, nulls for those it lacks (a report
    of an attachment nothing of which can be trusted has the corrupt-record column alone)."""
    columns = [batch.column(f.name) if f.name in batch.schema.names else pa.nulls(batch.num_rows, f.type)
               for f in schema]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _taken(f: Landed, offset: dict) -> bool:
    """Whether ``offset`` has taken the file (the rule of the module docstring)."""
    if offset["taken"] is None:
        return False
    mtime, path = int(offset["taken"][0]), str(offset["taken"][1])
    if f.mtime_ns != mtime:
        return f.mtime_ns < mtime
    same = offset.get("same_time")
    return f.path <= path if same is None else f.path in same


def _taken_after(start: dict, landed: Sequence[Landed], new: Sequence[Landed]) -> dict:
    """``taken`` and ``same_time`` of the offset taking ``new`` (in the order taken) after ``start``."""
    if not new:
        return {key: start[key] for key in ("taken", "same_time") if key in start}
    mark = max(new[-1].mark, (-1, "") if start["taken"] is None else (int(start["taken"][0]), str(start["taken"][1])))
    taken = [f.path for f in landed if f.mtime_ns == mark[0] and _taken(f, start)]
    if start["taken"] is not None and int(start["taken"][0]) == mark[0]:
        taken += start.get("same_time", ())
    return {"taken": list(mark), "same_time": sorted({*taken, *(f.path for f in new if f.mtime_ns == mark[0])})}


def _limited(new: List[Landed], limit: Limit) -> List[Landed]:
    """The first new files within the read limit (at least one)."""
    if limit is None or not new:
        return new
    kind, most = limit
    if kind == "files":
        taken = new[:max(most, 1)]
    else:
        taken, held = [], 0
        for f in new:
            if taken and held + f.size > most:
                break
            taken.append(f)
            held += f.size
    # Never a cut within one modification time: files of one tick are taken in name order, which
    # need not be the order they were written in (cap-10 before cap-9).
    tick = taken[-1].mtime_ns
    return taken + [f for f in new[len(taken):] if f.mtime_ns == tick]


def _checked(offset: dict) -> dict:
    if not isinstance(offset, dict) or offset.get("version") != OFFSET_VERSION:
        raise CmiOptionError(f"the checkpoint holds an offset this version of cmi-datasource does not read "
                             f"({str(offset)[:200]}): start the query with a new checkpoint location")
    return offset


def stream_schema(options: ReadOptions) -> Optional[pa.Schema]:
    """The schema a stream starts with: the view's own, or the dataset view's from the first
    attachment of the data set (files in the order they are taken) whose variable definitions can
    be read, complete or not, as the read mode has it; None when there is none yet."""
    options = stream_options(options)
    if not streamed(options).one_layout:
        return view(options.view).schema(Load(options))  # the same whatever the files hold
    folder = FolderStream(options, pa.schema([]))
    files = [f.path for f in folder.landed()]
    if not files:
        return None
    capture = folder._capture(files)
    order = {path: at for at, path in enumerate(files)}
    mode = read_mode(options)
    candidates = sorted((a for a in capture.dataset_attachments() if names_dataset(options.dataset or "", a)),
                        key=lambda a: order.get(a.header_message.source, len(order)))
    for att in candidates:
        try:
            layout = capture.recovery(att).layout
        except CmiError:
            continue
        if layout is not None:
            return mode.schema(arrow_schema(layout, options.temporal_types), "dataset")
    return None
