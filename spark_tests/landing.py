"""Capture files landing in a folder over time, for the stream tests (unit and Spark): dumps
written by our writer, an attachment's messages split over two files (a capture rotated in the
middle of a transfer), and modification times set so that the order files are taken in is known;
and a stream of them run into a Parquet sink, with what the sink holds."""
from __future__ import annotations

import io
import os
from typing import List, Sequence

import pyarrow as pa

from cmi_datasource.engine.write import DatasetToWrite, WriteOptions, build_messages
from cmi_datasource.transports import capture_format


def rows(n: int, first: int = 0) -> pa.Table:
    """``n`` rows numbered from ``first``: ID is each row's own number, so a sink's rows can be counted once."""
    return pa.table({"ID": pa.array([float(first + i) for i in range(n)]),
                     "NAME": pa.array([f"row {first + i}" for i in range(n)])})


def transfer(n: int, first: int = 0, member: str = "LEDGER", library: str = "FIN", max_message_bytes: int = 512,
             table: pa.Table = None) -> List:
    """The physical messages of one header carrying one data set of ``n`` rows, small messages
    so that an attachment spans several."""
    options = WriteOptions(max_message_bytes=max_message_bytes)
    return build_messages([DatasetToWrite(rows(n, first) if table is None else table, library, member)],
                          options=options)


def dump(messages: Sequence) -> bytes:
    """The bytes of a dmpmqmsg dump of ``messages``."""
    out = io.BytesIO()
    capture_format("dmpmqmsg").write(out, list(messages))
    return out.getvalue()


def land(folder, name: str, messages: Sequence, second: int) -> str:
    """A dmpmqmsg dump of ``messages`` written beside ``folder`` and moved in whole (as a capture
    should land), modified at ``second`` (since the epoch)."""
    os.makedirs(folder, exist_ok=True)
    hidden = os.path.join(folder, f".{name}.part")  # hidden names are never listed
    with open(hidden, "wb") as out:
        out.write(dump(messages))
    os.utime(hidden, (second, second))
    final = os.path.join(folder, name)
    os.replace(hidden, final)
    return final


def stream_to_parquet(spark, path: str, sink, checkpoint):
    """One run of FIN.LEDGER's stream from ``path`` into a Parquet sink with a checkpoint, until
    everything there has been read (``trigger(availableNow=True)``); the query, which did not fail."""
    query = (spark.readStream.format("cmi").option("dataset", "FIN.LEDGER").load(path)
             .writeStream.format("parquet").option("path", str(sink))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination()
    assert query.exception() is None
    return query


def ids_in(spark, sink) -> List[float]:
    """The IDs the Parquet sink holds as Spark reads it (the files its log, _spark_metadata, lists)."""
    return sorted(r.ID for r in spark.read.parquet(str(sink)).collect())
