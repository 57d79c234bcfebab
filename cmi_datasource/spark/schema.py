"""The Spark schemas of the source's Arrow schemas, for its batch and stream readers alike."""
from __future__ import annotations

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructField, StructType


def spark_schema(arrow: pa.Schema) -> StructType:
    """Spark schema of an Arrow schema, carrying column metadata (label, format, ...) across."""
    converted = from_arrow_schema(pa.schema([f.remove_metadata() for f in arrow]), prefer_timestamp_ntz=True)
    fields = []
    for spark_field, arrow_field in zip(converted.fields, arrow):
        metadata = {k.decode(): v.decode() for k, v in (arrow_field.metadata or {}).items()}
        if "sas_length" in metadata:
            metadata["sas_length"] = int(metadata["sas_length"])
        fields.append(StructField(spark_field.name, spark_field.dataType, True, metadata))
    return StructType(fields)


def same_columns(given: StructType, own: StructType) -> bool:
    """Whether a schema Spark hands a reader has the columns (names and types) of the source's own."""
    return [(f.name, f.dataType) for f in given.fields] == [(f.name, f.dataType) for f in own.fields]
