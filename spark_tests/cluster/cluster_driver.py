"""The Spark driver of the standalone cluster test (``test_standalone.py``), run in a child process:
a SparkContext is one per process, and the test process may hold the suite's local session.

Usage: ``python cluster_driver.py CONFIG.json``. The driver imports the checkout and has its own
``TMPDIR``; the executors' Python (``PYSPARK_PYTHON``) is the venv the wheel was
installed into. It reads the capture through the cluster, has each read partition say where it
ran (``reporting_source``), writes a DataFrame back with ``df.write.format("cmi")`` and saves what it saw as JSON at
``config["result"]``; the test compares that with ``Capture.open`` without Spark.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time


def cache_report() -> dict:
    """Where this process's disk cache is (cmi_datasource.cache: CMI_DATASOURCE_CACHE, set per
    node by the test) and the entries in it."""
    from cmi_datasource import cache
    directory = cache.location().directories[0]
    entries = sorted(n for n in os.listdir(directory) if n.endswith(cache.ENTRY_SUFFIX)) \
        if os.path.isdir(directory) else []
    return {"directory": directory, "entries": entries}


def reporting_source(reports: str):
    """``CmiDataSource`` under the name ``cmi_probe``, whose reader, in the executor's Python worker
    that reads each partition, writes what that worker runs with as JSON under ``reports`` (a
    directory of the test: loopback "nodes" share the file system)."""
    from cmi_datasource.spark.source import CmiDataSource, CmiReader

    class ReportingReader(CmiReader):
        def read(self, partition):
            import glob
            import json
            import os
            import sys
            import tempfile
            import uuid

            import cmi_datasource
            from cmi_datasource import compiled
            from pyspark import TaskContext
            count = 0
            for batch in super().read(partition):
                count += batch.num_rows
                yield batch
            tmp = tempfile.gettempdir()
            package = os.path.dirname(cmi_datasource.__file__)
            context = TaskContext.get()
            report = {
                "partition": context.partitionId() if context else None, "rows": count, "pid": os.getpid(),
                "cwd": os.getcwd(), "tmp": tmp, "cmi_file": cmi_datasource.__file__,
                "cache": cache_report(),
                "executable": sys.executable, "pythonpath": os.environ.get("PYTHONPATH", ""), "sys_path": sys.path,
                "packages_on_path": [p for p in sys.path if os.path.isdir(os.path.join(p or ".", "cmi_datasource"))],
                "numba_cached": len(glob.glob(os.path.join(package, "**", "__pycache__", "*.nbi"), recursive=True)),
                "native": getattr(compiled.native_module(), "__file__", None), "numba": "numba" in sys.modules}
            with open(os.path.join(reports, f"{uuid.uuid4().hex}.json"), "w") as f:
                json.dump(report, f)

    class ReportingSource(CmiDataSource):
        @classmethod
        def name(cls):
            return "cmi_probe"

        def reader(self, schema):
            plain = super().reader(schema)
            probe = ReportingReader.__new__(ReportingReader)
            probe.__dict__.update(plain.__dict__)
            return probe

    return ReportingSource


def main(config_path: str) -> None:
    config = json.load(open(config_path))
    # The driver imports the checkout through sys.path, not PYTHONPATH: Spark hands the driver's
    # PYTHONPATH to the Python workers of a data source it discovers (pyspark_cmi), executors'
    # included, and on one machine that would put the checkout before the installed wheel there.
    sys.path.insert(0, config["checkout"])
    import cmi_datasource
    from pyspark.sql import SparkSession

    executors = config["executors"]
    builder = SparkSession.builder.master(config["master"]).appName("cmi-cluster-test")
    for key, value in {
        "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.memory": "1g", "spark.executor.memory": "512m",
        "spark.executor.cores": "1", "spark.cores.max": str(executors),
        # The first job waits for every executor: both must be there to be given tasks.
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "90s",
        "spark.local.dir": config["driver_local_dir"],
        "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "2", "spark.sql.session.timeZone": "UTC",
        "spark.sql.timeType.enabled": "true",
        "spark.sql.warehouse.dir": os.path.join(config["driver_local_dir"], "warehouse"),
    }.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    sc = spark.sparkContext
    deadline = time.monotonic() + 90
    while len(sc.statusTracker().getExecutorInfos()) < executors + 1:  # the driver is listed too
        if time.monotonic() > deadline:
            raise SystemExit(f"only {len(sc.statusTracker().getExecutorInfos()) - 1} executors registered")
        time.sleep(0.2)
    if config.get("register"):
        cmi_datasource.register(spark)  # else: discovery of the pyspark_cmi module

    result = {"app_id": sc.applicationId,
              "executors": sorted(f"{e.host}:{e.port}" for e in sc.statusTracker().getExecutorInfos()),
              "driver": {"cmi_file": cmi_datasource.__file__, "tmp": tempfile.gettempdir(),
                         "pythonpath": os.environ.get("PYTHONPATH", ""),
                         "pyspark_python": os.environ.get("PYSPARK_PYTHON", "")}}

    dataset = (spark.read.format("cmi").option("dataset", config["dataset"])
               .option("minPartitions", config["min_partitions"]).load(config["capture"]))
    result["schema"] = [[f.name, f.dataType.simpleString(), f.metadata] for f in dataset.schema.fields]
    result["partitions"] = dataset.rdd.getNumPartitions()
    result["rows"] = [list(r) for r in dataset.collect()]
    # The same read, by a subclass that reports from inside each partition's read.
    spark.dataSource.register(reporting_source(config["reports"]))
    probed = (spark.read.format("cmi_probe").option("dataset", config["dataset"])
              .option("minPartitions", config["min_partitions"]).load(config["capture"]))
    result["probed_rows"] = probed.count()
    result["reads"] = [json.load(open(os.path.join(config["reports"], n)))
                       for n in sorted(os.listdir(config["reports"]))]
    attachments = spark.read.format("cmi").option("view", "attachments").load(config["capture"])
    result["attachments"] = [r.asDict() for r in attachments.select(
        "attachment", "kind", "name", "complete", "observations", "found_messages").collect()]
    dataset.write.format("cmi").mode("append").option("dataset", "WORK.CLUSTER").save(config["write_to"])
    result["driver"]["cache"] = cache_report()
    spark.stop()
    with open(config["result"], "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1])
