"""`make demo`: read the bundled sample queues with spark.read.format("cmi")."""
from __future__ import annotations

import os
import sys

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from pyspark.sql import SparkSession  # noqa: E402

from cmi_datasource.explore import summarize  # noqa: E402

SAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sample_queues")


def main() -> None:
    spark = SparkSession.builder.appName("cmi-demo").getOrCreate()
    reader = spark.read.format("cmi")  # registered by the pyspark_cmi module, no register() call

    print("\n== Attachments in sample_queues/ ==")
    reader.option("view", "attachments").load(SAMPLES) \
        .select("attachment", "kind", "name", "complete", "observations", "variables", "source") \
        .show(truncate=False)

    print("== Dataset WORK.CUSTOMERS (mixed types, labels, formats, missing values) ==")
    customers = spark.read.format("cmi").option("dataset", "work.customers").load(SAMPLES)
    customers.printSchema()
    customers.show(truncate=False)
    print("Column labels:", {f.name: f.metadata.get("label") for f in customers.schema.fields})

    print("\n== Dataset PROD.LEDGER from z/OS (Encoding 785, CCSID 37, S/390 floats) ==")
    spark.read.format("cmi").option("dataset", "PROD.LEDGER").load(SAMPLES).show(truncate=False)

    print("== Variables (PROC CONTENTS) ==")
    variables = spark.read.format("cmi").option("view", "variables").load(os.path.join(SAMPLES, "mixed_types.dmp"))
    variables.show(truncate=False)

    print("== The same kind of dataset over TIB/Rendezvous and MQTT (tibrv_capture.rv, mqtt_stream.mqtt) ==")
    spark.read.format("cmi").option("dataset", "RV.ORDERS").load(SAMPLES).show(5, truncate=False)
    spark.read.format("cmi").option("view", "messages").load(os.path.join(SAMPLES, "mqtt_stream.mqtt")) \
        .select("index", "mqtt_type", "topic", "qos", "role", "sequence", "length").show(5, truncate=False)

    print("== SAP DB / MaxDB SQL packets, one row per part (sapdb_session.rte, seed 004) ==")
    spark.read.format("cmi").option("view", "sapdb").load(os.path.join(SAMPLES, "sapdb_session.rte")) \
        .where("part_kind is not null") \
        .select("packet", "direction", "mess_type", "function_code", "returncode", "part_kind", "text",
                "result_count", "values").show(truncate=40)

    print("== External files ==")
    spark.read.format("cmi").option("view", "files").load(SAMPLES) \
        .select("name", "kind", "lrecl", "size", "text").show(truncate=False)
    print("== One night's queue at a glance, without Spark (in a terminal: cmi ls sample_queues/nightly_batch.dmp) ==")
    print(summarize(os.path.join(SAMPLES, "nightly_batch.dmp")))
    spark.stop()


if __name__ == "__main__":
    main()
