"""``df.write.format("cmi")``: DataFrames as CMI attachments in a dmpmqmsg dump (the default
write format of ``engine/write.py``).

The driver refuses, before anything is written, a DataFrame whose columns cannot be SAS
variables (types, names). Tasks stream their partition to an Arrow spill file under
``<dir>/_cmi_temporary/<job>/``, refuse numbers a SAS double would round (unless option
lossyNumbers) and report row counts and the longest encoded value of each string column
(SAS character widths are fixed, so they must be known before the first observation is
encoded). The commit then streams the spills, in partition order, through the
codec into one dump (encoded on the work threads of ``threads.py``, in order), renames it into
place and removes the staging folder; ``abort`` removes it too. Memory stays bounded by a few
chunks of 1 MiB, whatever the row count.

Under faults (each tested in ``spark_tests/spark/test_spark_write_faults.py``):

- A task that fails and is retried (an exception, or its worker dying mid-spill) spills each
  attempt to a file of its own; the commit reads only the spills of the attempts Spark
  reports as successful, so every row is written once.
- A job that aborts removes its staging folder (and the destination folder, when the job made
  it and it is empty); the dumps already there are untouched, an overwrite included: previous
  dumps are removed only after the new one is in place.
- The dump is assembled inside the destination and renamed into place: a reader, or a driver
  killed mid-commit, sees a whole dump or none. A killed driver's staging folder stays (it
  cannot be told from a running job's); readers skip folders starting with ``_``.
- Two jobs writing one directory each stage in their own folder and each leave one complete
  dump, under a name with the job's id. An overwrite removes the dumps that were there when
  it started, not one another job committed meanwhile.
- Spills removed under a running job fail its commit with ``StagingLostError`` before a byte
  of the dump is written.
"""
from __future__ import annotations

import os
import re
import shutil
import time
import uuid
from dataclasses import dataclass, field
from typing import Dict, Iterable, Iterator, List, Optional, Sequence

import pyarrow as pa
from pyspark import TaskContext
from pyspark.errors import PySparkTypeError
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from ..charsets import code_page
from ..cmi.emit import IdSource, OutgoingAttachment, header_groups
from ..engine.options import SaveOptions
from ..engine.write import FileToWrite, dataset_attachment, file_attachment, stream_messages
from .. import storage
from ..errors import CmiError, CmiOptionError
from ..payload.sas_dataset_writer import (check_exact_numbers, check_schema, merge_lengths, no_sas_equivalent,
                                          string_lengths)
from ..transports import capture_format
from .errors import StagingLostError
from .reporting import reported

STAGING_DIR = "_cmi_temporary"
DUMP_PREFIX = "cmi-"
DUMP_SUFFIX = ".dmp"
WRITER_MARK = "Written by cmi-datasource"


@dataclass
class CmiCommitMessage(WriterCommitMessage):
    partition_id: int
    spill_path: str
    rows: int
    lengths: Dict[str, int] = field(default_factory=dict)


def _arrow_schema_with_metadata(schema: StructType) -> pa.Schema:
    """Spark's Arrow schema for the batches tasks receive, with the columns' label/format metadata.
    A column Spark has no Arrow type for (a year-month or calendar interval) cannot be written."""
    fields = []
    for spark_field in schema.fields:
        try:
            [arrow_field] = to_arrow_schema(StructType([spark_field]), timezone="UTC")
        except PySparkTypeError:
            raise no_sas_equivalent(spark_field.name, spark_field.dataType.simpleString()) from None
        meta = {k: str(v) for k, v in (spark_field.metadata or {}).items()
                if k in ("label", "format", "informat", "sas_length")}
        fields.append(arrow_field.remove_metadata().with_metadata(meta) if meta else arrow_field.remove_metadata())
    return pa.schema(fields)


def _spill_batches(path: str) -> Iterator[pa.RecordBatch]:
    with (storage.open_input(path) if storage.is_remote(path) else pa.OSFile(path, "rb")) as source:
        reader = pa.ipc.open_stream(source)
        for batch in reader:
            yield batch


# What our saves are named: cmi-<lib>.<member>-<the job's 32 hex digits><the format's suffix>.
_OUR_NAME = re.compile(r"^cmi-.+-[0-9a-f]{32}\.[a-z]+$")


def previous_dumps(directory: str) -> List[str]:
    """Captures an earlier save wrote here: our name pattern, and in text dumps our header mark
    (an RV capture has no place for one: the name, with its job id, identifies it)."""
    found = []
    for name in storage.list_names(directory):
        path = storage.join(directory, name)
        if not (_OUR_NAME.match(name) and storage.is_file(path)):
            continue
        if name.endswith(DUMP_SUFFIX) and WRITER_MARK.encode() not in storage.read_head(path, 512):
            continue
        found.append(path)
    return found


class StagedWrite:
    """What a save and a streaming micro-batch share: the options and columns checked before any
    task runs, a task's spill, and the commit turning the spills into one capture (or a live send).
    The subclasses decide where spills are staged and what the capture is named."""

    def __init__(self, options: SaveOptions, schema: StructType):
        self.options = options
        self.arrow_schema = _arrow_schema_with_metadata(schema)
        options.check_destination()  # a folder of captures, each job adding its own
        codepage = code_page(self.options.codec.ccsid)
        try:
            message = codepage.encode(self.options.codec.application_message)
        except UnicodeEncodeError:
            raise CmiOptionError(f"option message cannot be encoded in CCSID {self.options.codec.ccsid}") from None
        if len(message) > self.options.codec.max_message_bytes:
            raise CmiOptionError(f"option message is {len(message)} bytes; one message holds at most "
                                 f"{self.options.codec.max_message_bytes}")
        if options.kind == "dataset":
            # Types are named as Spark names them: the user wrote those.
            check_schema(self.arrow_schema, self.options.codec.valid_var_name, codepage,
                         [f.dataType.simpleString() for f in schema.fields])
        else:
            column = "text" if options.kind == "text" else "content"
            names = set(self.arrow_schema.names)
            if "name" not in names or column not in names:
                raise CmiOptionError(f"writing {options.kind} files needs columns 'name' and '{column}'; "
                                     f"the DataFrame has {sorted(names)}")

    @property
    def sends_live(self) -> bool:
        """Whether the commit sends the messages to a live broker: nothing is written at the destination."""
        return capture_format(self.options.write_format).transport.sends_live(dict(self.options.transport_options))

    def capture_path(self, job: str) -> str:
        """Where a capture of ``job`` (32 hex digits, or more ending in them) lands: our name pattern."""
        suffix = capture_format(self.options.write_format).suffix
        return storage.join(self.options.directory, f"{DUMP_PREFIX}{self.options.dataset_name.lower()}-{job}{suffix}")

    # -- tasks ------------------------------------------------------------------------------

    def spill(self, iterator: Iterator[pa.RecordBatch], staging: str, gone: str) -> CmiCommitMessage:
        """A task's batches as an Arrow spill file in ``staging``; ``gone`` says why that folder
        may be missing (the job was aborted)."""
        context = TaskContext.get()
        partition_id = context.partitionId() if context else 0
        attempt = context.attemptNumber() if context else 0
        # Each attempt spills to a name of its own: a failed attempt's half-written spill may
        # remain until the job ends, and only the spills named in commit messages are read.
        path = storage.join(staging, f"part-{partition_id:05d}-attempt-{attempt}-{uuid.uuid4().hex[:8]}.arrow")
        rows = 0
        lengths: Dict[str, int] = {}
        codepage = code_page(self.options.codec.ccsid)
        try:
            sink = storage.open_output(path) if storage.is_remote(path) else pa.OSFile(path, "wb")
        except OSError:
            raise StagingLostError(f"{gone}: its staging folder {staging} is gone") from None
        try:
            with sink, pa.ipc.new_stream(sink, self.arrow_schema) as spill:
                for batch in iterator:
                    batch = pa.RecordBatch.from_arrays(batch.columns, schema=self.arrow_schema)
                    if self.options.kind == "dataset":
                        lengths = merge_lengths(lengths, string_lengths(batch, codepage))
                        if not self.options.codec.lossy_numbers:
                            check_exact_numbers(batch, rows, partition_id)
                    spill.write_batch(batch)
                    rows += batch.num_rows
        except BaseException:
            remove_quietly(path)
            raise
        return CmiCommitMessage(partition_id, path, rows, lengths)

    # -- driver -----------------------------------------------------------------------------

    def _dataset_attachments(self, parts: Sequence[CmiCommitMessage]) -> List[OutgoingAttachment]:
        o = self.options

        def attachment(group: Sequence[CmiCommitMessage], member: str) -> OutgoingAttachment:
            lengths: Dict[str, int] = {}
            for m in group:
                lengths = merge_lengths(lengths, m.lengths)
            batches = (b for m in group for b in _spill_batches(m.spill_path))
            return dataset_attachment(self.arrow_schema, lengths, sum(m.rows for m in group), batches,
                                      o.library, member, self.options.codec, o.description, o.label)

        if not o.attachment_per_partition:
            return [attachment(parts, o.member)]
        nonempty = [m for m in parts if m.rows]
        return [attachment([m], o.member) for m in nonempty] or [attachment([], o.member)]

    def _file_attachments(self, parts: Sequence[CmiCommitMessage]) -> Iterable[OutgoingAttachment]:
        o = self.options
        column = "text" if o.kind == "text" else "content"
        for m in parts:
            for batch in _spill_batches(m.spill_path):
                for name, value in zip(batch.column("name").to_pylist(), batch.column(column).to_pylist()):
                    if name is None or value is None:
                        raise CmiOptionError(f"a file row has a null name or {column}")
                    if o.kind == "text":
                        text = value if isinstance(value, str) else bytes(value).decode("utf-8")
                        yield file_attachment(FileToWrite(name, text=text, lrecl=o.lrecl), self.options.codec)
                    else:
                        content = value if isinstance(value, bytes) else str(value).encode("utf-8")
                        yield file_attachment(FileToWrite(name, content=content, lrecl=o.lrecl), self.options.codec)

    def deliver(self, messages: Sequence[Optional[WriterCommitMessage]], staging: str, final: str,
                ids: Optional[IdSource] = None) -> None:
        """The commit: the spills of the tasks' ``messages`` (``None`` for a task that failed), in
        partition order, as one header's attachments, sent live or written to ``final``. The
        capture is assembled in ``staging`` (inside the destination) and renamed: the rename is
        atomic, so a reader or a crash sees the whole capture or none of it (``final`` is unused
        when the messages are sent live). ``ids`` gives the
        correlation keys and MsgIds (by default random, or the option deterministic's)."""
        o = self.options
        parts = sorted((m for m in messages if isinstance(m, CmiCommitMessage)), key=lambda m: m.partition_id)
        self._check_spills(parts)
        attachments = (self._dataset_attachments(parts) if o.kind == "dataset"
                       else list(self._file_attachments(parts)))
        codepage = code_page(self.options.codec.ccsid)
        groups = header_groups(attachments, codepage, self.options.codec.wire, self.options.codec.max_message_bytes)
        # One id source for every header: each header's keys differ from the others', seeded or not.
        ids = ids or IdSource(self.options.codec.deterministic_seed)
        messages_out = (m for group in groups for m in stream_messages(group, self.options.codec, ids))
        chosen = capture_format(o.write_format)
        if self.sends_live:
            chosen.transport.send(messages_out, dict(o.transport_options))
            return
        assembling = storage.join(staging, f"assembling-{uuid.uuid4().hex}{chosen.suffix}")
        with storage.open_output(assembling) as out:
            chosen.write(out, messages_out, deterministic=self.options.codec.deterministic_seed is not None,
                         comments=[WRITER_MARK, f"Dataset = {o.dataset_name}" if o.kind == "dataset"
                                   else f"Files = {o.kind}"])
        storage.move(assembling, final)

    def _check_spills(self, parts: Sequence[CmiCommitMessage]) -> None:
        """Every spill the tasks reported is still there, before a byte of the dump is written
        (a spill lost midway would otherwise surface as a cut dump's read error)."""
        for m in parts:
            if not storage.is_file(m.spill_path):
                raise StagingLostError(
                    f"the spill of partition {m.partition_id} ({m.spill_path}) is gone before the commit: "
                    f"nothing was committed; something removed files under {STAGING_DIR} while the job "
                    f"ran (a cleanup, or another job's overwrite by hand): write again")


class CmiWriter(StagedWrite, DataSourceArrowWriter):
    def __init__(self, options: SaveOptions, schema: StructType, overwrite: bool):
        super().__init__(options, schema)
        self.overwrite = overwrite
        self.job_id = uuid.uuid4().hex
        self.destination_existed = storage.is_dir(options.directory)
        self.staging = storage.join(options.directory, STAGING_DIR, self.job_id)
        # What an overwrite replaces is what was here when the job started: a dump another job
        # commits while this one runs is that job's output and stays.
        self.replaces = previous_dumps(options.directory) if overwrite else []
        # Made last, once the options are known good, on the driver before any task runs: a task
        # that finds it gone knows the job was aborted and writes nothing, so a task finishing
        # late cannot leave files behind an abort.
        make_staging(self.staging)

    @reported
    def write(self, iterator: Iterator[pa.RecordBatch]) -> CmiCommitMessage:
        return self.spill(iterator, self.staging, f"the write job {self.job_id} was aborted")

    @reported
    def commit(self, messages: List[Optional[WriterCommitMessage]]) -> None:
        try:
            self.deliver(messages, self.staging, self.capture_path(self.job_id))
            if not self.sends_live:
                for path in self.replaces:
                    remove_quietly(path)  # another overwrite may have removed it already
        finally:
            remove_staging(self.staging)

    def abort(self, messages: List[Optional[WriterCommitMessage]]) -> None:
        remove_staging(self.staging)
        if storage.is_remote(self.options.directory):
            return  # a store's "folders" are key prefixes: one with no object left is gone
        if not self.destination_existed and os.path.isdir(self.options.directory) \
                and not os.listdir(self.options.directory):
            os.rmdir(self.options.directory)


def remove_staging(staging: str) -> None:
    """A job's (or a micro-batch's) staging folder, and ``_cmi_temporary`` when it is left empty."""
    if storage.is_remote(staging):
        storage.delete_tree(staging)
        return
    # A task still finishing may create a file while the folder is being removed: try again
    # until the folder is gone (tasks cannot recreate it; see CmiWriter.__init__).
    for _ in range(100):
        shutil.rmtree(staging, ignore_errors=True)
        if not os.path.exists(staging):
            break
        time.sleep(0.02)
    parent = os.path.dirname(staging)
    try:
        os.rmdir(parent)  # only when empty: other jobs may be staging beside us
    except OSError:
        pass


def make_staging(staging: str, exist_ok: bool = False) -> None:
    """``staging`` and its parent, robust to a sibling job removing the (then empty) parent at
    the same moment as it ends."""
    if storage.is_remote(staging):
        storage.make_dirs(staging)
        return
    for _ in range(10):
        try:
            os.makedirs(staging, exist_ok=exist_ok)
            return
        except FileNotFoundError:
            continue
    os.makedirs(staging, exist_ok=exist_ok)


def remove_quietly(path: str) -> None:
    try:
        storage.delete_file(path)
    except (OSError, CmiError):
        pass
