"""Record batches regrouped: the rows of many small batches in batches of a useful size."""
from __future__ import annotations

from typing import Iterable, Iterator, List

import pyarrow as pa


def coalesced(batches: Iterable[pa.RecordBatch], batch_rows: int) -> Iterator[pa.RecordBatch]:
    """The same rows in the same order, small batches joined until they hold ``batch_rows``
    rows (a partition reading many small attachments would otherwise hand Spark a batch of a
    few rows per attachment, and Spark pays for each). A batch already that large passes
    through uncopied; all batches must share one schema."""
    pending: List[pa.RecordBatch] = []
    held = 0

    def joined() -> pa.RecordBatch:
        if len(pending) == 1:
            return pending[0]
        return pa.Table.from_batches(pending).combine_chunks().to_batches()[0]

    for batch in batches:
        if not pending and batch.num_rows >= batch_rows:
            yield batch
            continue
        if batch.num_rows:
            pending.append(batch)
            held += batch.num_rows
        if held >= batch_rows:
            yield joined()
            pending, held = [], 0
    if pending:
        yield joined()
