"""cmi-datasource: SAS Common Messaging Interface traffic captured from message queues, as DataFrames.

Layers, data flowing one way: ``capture`` (dump files) -> ``messages`` (descriptor + bytes)
-> ``mq`` (descriptor fields) -> ``cmi`` (attachment assembly) -> ``payload`` (SAS dataset
and external-file codecs) -> ``arrow`` (columns) -> ``spark`` (the thin DataSource classes).
Nothing below ``spark`` imports pyspark.
"""
from .catalog import Capture
from .errors import (AttachmentError, CmiError, CmiFormatError, CmiOptionError, DatasetLayoutError,
                     DumpSyntaxError, IncompleteAttachmentError, TruncatedError, ValueConversionError)

__version__ = "0.1.0"


def register(spark) -> None:
    """Register the ``cmi`` format on a session where data source discovery does not apply."""
    from .spark.source import CmiDataSource
    spark.dataSource.register(CmiDataSource)


__all__ = ["Capture", "register", "CmiError", "CmiFormatError", "CmiOptionError", "DumpSyntaxError",
           "TruncatedError", "AttachmentError", "IncompleteAttachmentError", "DatasetLayoutError",
           "ValueConversionError"]
