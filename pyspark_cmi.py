"""Auto-registration hook: PySpark registers ``DefaultSource`` of every top-level ``pyspark_*`` module,
so after ``pip install cmi-datasource`` ``spark.read.format("cmi")`` works with no register call.

Spark discovers sources by importing every ``pyspark_*`` module in a Python worker of its own,
once per session: this module therefore imports nothing of the package until Spark uses the
source (``DefaultSource`` hands each call to ``cmi_datasource.spark.source.CmiDataSource``, whose
docstring lists every option). Importing the package here cost the discovery worker 0.7 s.
"""
from pyspark.sql.datasource import DataSource


class DefaultSource(DataSource):
    """``spark.read.format("cmi")`` / ``df.write.format("cmi")`` / ``df.writeStream.format("cmi")``: see
    ``cmi_datasource.spark.source``."""

    @classmethod
    def name(cls) -> str:
        return "cmi"

    def _source(self):
        # A worker whose Python lacks the package's dependencies says so, naming PYSPARK_PYTHON.
        from cmi_datasource.spark.workers import source_class
        return source_class()(self.options)

    def schema(self):
        return self._source().schema()

    def reader(self, schema):
        return self._source().reader(schema)

    def streamReader(self, schema):
        return self._source().streamReader(schema)

    def writer(self, schema, overwrite):
        return self._source().writer(schema, overwrite)

    def streamWriter(self, schema, overwrite):
        return self._source().streamWriter(schema, overwrite)


__all__ = ["DefaultSource"]
