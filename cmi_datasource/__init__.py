"""cmi-datasource: SAS Common Messaging Interface traffic captured from message queues, as DataFrames.

Layers, data flowing one way: ``transports`` (capture files -> physical messages: IBM MQ, ...)
-> ``messages`` (the transport-neutral physical message) -> ``cmi`` (attachment assembly)
-> ``payload`` (SAS dataset and external-file codecs) -> ``arrow`` (columns) -> ``engine``
(captures, plans, views) -> ``spark`` (the thin DataSource classes). Nothing below ``spark``
imports pyspark; nothing in ``cmi``, ``payload`` or ``arrow`` knows a transport.
"""
from .errors import (AttachmentError, CmiError, CmiFormatError, CmiOptionError, DatasetLayoutError,
                     IncompleteAttachmentError, TruncatedError, UnknownCaptureFormatError, ValueConversionError)

__version__ = "0.1.0"


def __getattr__(name: str):
    # Capture brings numpy, pyarrow and numba: imported when first asked for, so that a process
    # that only needs a name from the package (Spark's discovery of pyspark_cmi) stays light.
    if name == "Capture":
        from .engine.capture import Capture
        return Capture
    if name == "DumpSyntaxError":  # the MQ transport's, which brings pyarrow
        from .transports.mq.errors import DumpSyntaxError
        return DumpSyntaxError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register(spark) -> None:
    """Register the ``cmi`` format on a session where data source discovery does not apply."""
    from .spark.source import CmiDataSource
    spark.dataSource.register(CmiDataSource)


__all__ = ["Capture", "register", "CmiError", "CmiFormatError", "CmiOptionError", "DumpSyntaxError",
           "TruncatedError", "AttachmentError", "IncompleteAttachmentError", "DatasetLayoutError",
           "UnknownCaptureFormatError", "ValueConversionError"]
