"""cmi-datasource: SAS Common Messaging Interface traffic captured from message queues, as DataFrames.

Layers, data flowing one way: ``transports`` (capture files -> physical messages: IBM MQ, ...)
-> ``messages`` (the transport-neutral physical message) -> ``cmi`` (attachment assembly)
-> ``payload`` (SAS dataset and external-file codecs) -> ``arrow`` (columns) -> ``engine``
(captures, plans, views) -> ``spark`` (the thin DataSource classes). Nothing below ``spark``
imports pyspark; nothing in ``cmi``, ``payload`` or ``arrow`` knows a transport.

With Spark (the ``cmi`` format is found by Spark's data source discovery; ``register(spark)``
adds it where discovery does not apply, e.g. Spark Connect)::

    spark.read.format("cmi").load("sample_queues/nightly_batch.dmp").show()
    spark.read.format("cmi").option("view", "attachments").load("sample_queues/").show()

Without Spark, the same views by the same read path, as pyarrow tables::

    import cmi_datasource as cmi
    cmi.read("sample_queues/nightly_batch.dmp", dataset="FIN.DAILY_SALES")
    cmi.read("sample_queues/nightly_batch.dmp", dataset="FIN.RETURNS", mode="PERMISSIVE")
    cmi.read("sample_queues/", view="attachments")
    cmi.read_batches("sample_queues/nightly_batch.dmp", dataset="FIN.DAILY_SALES")  # batch by batch

The views: dataset (default), attachments, variables, files, messages, and each transport's own
(sapdb). The options: docs/options.md. From a terminal: ``cmi --help``.
"""
from .errors import (AttachmentError, CmiError, CmiFormatError, CmiOptionError, DatasetLayoutError,
                     IncompleteAttachmentError, TruncatedError, UnknownCaptureFormatError, ValueConversionError)

from .version import __version__


def __getattr__(name: str):
    # Capture and the readers bring numpy, pyarrow and numba: imported when first asked for, so that a process
    # that only needs a name from the package (Spark's discovery of pyspark_cmi) stays light.
    if name == "Capture":
        from .engine.capture import Capture
        return Capture
    if name in ("read", "read_batches"):
        from .engine import reading
        return getattr(reading, name)
    if name == "DumpSyntaxError":  # the MQ transport's, which brings pyarrow
        from .transports.mq.errors import DumpSyntaxError
        return DumpSyntaxError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register(spark) -> None:
    """Register the ``cmi`` format on a session where data source discovery does not apply.

    On a local session, first checks that Spark's Python workers can import the package: a
    ``WorkerPythonError`` naming ``PYSPARK_PYTHON`` when they cannot (``spark/workers.py``)."""
    from .spark.workers import check_worker_python
    check_worker_python(spark)
    from .spark.source import CmiDataSource
    spark.dataSource.register(CmiDataSource)


__all__ = ["__version__", "read", "read_batches", "Capture", "register", "CmiError", "CmiFormatError", "CmiOptionError",
           "DumpSyntaxError",
           "TruncatedError", "AttachmentError", "IncompleteAttachmentError", "DatasetLayoutError",
           "UnknownCaptureFormatError", "ValueConversionError"]
