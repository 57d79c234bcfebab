"""``df.writeStream.format("cmi")``: each micro-batch as one capture of complete attachments in a
folder, or sent to a live MQTT broker; the staging and the commit are the save's
(``writer.StagedWrite``).

Spark makes a writer for each micro-batch twice: one its tasks run (``write``: a spill each, as in
a save) and one, in another process, that commits or aborts the batch. Nothing but the commit
messages passes between them, so a task names in its message the query whose batch it spills
(Spark's ``sql.streaming.queryId``, the same across restarts from one checkpoint), and the batch
is staged in ``_cmi_temporary/stream-<query id>-batch-<batch id>/``.

Exactly once, per batch id: the batch's capture is named after the query and the batch,
``cmi-<lib>.<member>-batch-<batch id>-<query id>.dmp``, assembled in staging and renamed into
place last. Spark re-runs a batch whose commit it has not recorded in the checkpoint (the query
failed or was killed between our commit and its commit log); that commit finds the capture in
place and writes nothing. A live broker cannot be asked what it holds: a batch re-run after its
messages reached the broker publishes them again (at least once), with the same correlation keys
and MsgIds (derived from the query and batch ids), so the copies are exact duplicates, which the
reader drops (counted in the attachments view's ``duplicate_messages``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, List, Mapping, Optional

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from .. import storage
from ..cmi.emit import IdSource
from ..engine.options import SaveOptions
from ..errors import CmiError
from .reporting import reported
from .writer import (STAGING_DIR, CmiCommitMessage, StagedWrite, make_staging, previous_dumps, remove_quietly,
                     remove_staging)

# The local properties Spark sets on a micro-batch's tasks (StreamExecution.QUERY_ID_KEY,
# MicroBatchExecution.BATCH_ID_KEY).
QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"

# Spark's own options of a streaming write, which it hands to the sink with ours.
SPARK_STREAM_OPTIONS = frozenset({"checkpointlocation"})


def stream_save_options(options: Mapping[str, Any]) -> SaveOptions:
    return SaveOptions.parse({k: v for k, v in options.items() if k.lower() not in SPARK_STREAM_OPTIONS})


@dataclass
class StreamCommitMessage(CmiCommitMessage):
    query_id: str = ""


class CmiStreamWriter(StagedWrite, DataSourceStreamArrowWriter):
    """One micro-batch: ``overwrite`` (output mode complete) makes each batch's capture replace
    the captures written there before it, once it is in place."""

    def __init__(self, options: SaveOptions, schema: StructType, overwrite: bool):
        super().__init__(options, schema)  # runs on the driver for every batch: checks only, no files
        self.overwrite = overwrite

    def staging(self, query_id: str, batch_id: int) -> str:
        return storage.join(self.options.directory, STAGING_DIR, f"stream-{query_id}-batch-{batch_id}")

    def batch_capture(self, query_id: str, batch_id: int) -> str:
        return self.capture_path(f"batch-{batch_id}-{query_id.replace('-', '')}")

    @reported
    def write(self, iterator: Iterator[pa.RecordBatch]) -> StreamCommitMessage:
        context = TaskContext.get()
        query_id = context.getLocalProperty(QUERY_ID_PROPERTY) if context else None
        batch_id = context.getLocalProperty(BATCH_ID_PROPERTY) if context else None
        if not query_id or batch_id is None:
            raise CmiError("a streaming write task without Spark's query and batch ids: "
                           "df.writeStream.format('cmi') runs in a micro-batch query only")
        staging = self.staging(query_id, int(batch_id))
        make_staging(staging, exist_ok=True)  # the batch's tasks (and a re-run's) share it
        spilled = self.spill(iterator, staging, f"micro-batch {batch_id} was aborted")
        return StreamCommitMessage(spilled.partition_id, spilled.spill_path, spilled.rows, spilled.lengths,
                                   query_id=query_id)

    @reported
    def commit(self, messages: List[Optional[WriterCommitMessage]], batchId: int) -> None:
        parts = [m for m in messages if isinstance(m, StreamCommitMessage)]
        if not parts:
            return  # no task ran: no rows, nothing staged
        query_id = parts[0].query_id
        try:
            if not sum(m.rows for m in parts) and not self.overwrite:
                return  # an empty batch appends nothing (in complete mode, an empty result replaces)
            ids = IdSource(f"{query_id}/{batchId}")  # a re-sent batch repeats its messages exactly
            if self.sends_live:
                self.deliver(parts, self.staging(query_id, batchId), "", ids)
                return
            final = self.batch_capture(query_id, batchId)
            replaced = [p for p in previous_dumps(self.options.directory) if p != final] if self.overwrite else []
            if not storage.is_file(final):  # else this batch was committed before Spark recorded it
                self.deliver(parts, self.staging(query_id, batchId), final, ids)
            for path in replaced:
                remove_quietly(path)
        finally:
            self._remove_stagings(query_id, batchId)

    def abort(self, messages: List[Optional[WriterCommitMessage]], batchId: int) -> None:
        for query_id in {m.query_id for m in messages if isinstance(m, StreamCommitMessage)}:
            remove_staging(self.staging(query_id, batchId))
        # A batch whose tasks all failed names no query: its staging goes at the query's next commit.

    def _remove_stagings(self, query_id: str, batch_id: int) -> None:
        """The staging of this batch and of the query's earlier batches (aborted or cut short by a
        crash; Spark commits a query's batches in order, so none of them is running)."""
        root = storage.join(self.options.directory, STAGING_DIR)
        prefix = f"stream-{query_id}-batch-"
        for name in storage.list_names(root) if storage.is_dir(root) else []:
            number = name[len(prefix):]
            if name.startswith(prefix) and number.isdigit() and int(number) <= batch_id:
                remove_staging(storage.join(root, name))

