"""Auto-registration hook: PySpark registers ``DefaultSource`` of every top-level ``pyspark_*`` module,
so after ``pip install cmi-datasource`` ``spark.read.format("cmi")`` works with no register call."""
from cmi_datasource.spark.source import CmiDataSource as DefaultSource

__all__ = ["DefaultSource"]
