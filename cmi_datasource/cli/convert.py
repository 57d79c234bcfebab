"""``cmi convert``: one data set of a capture to Parquet or CSV through Spark.

The one command that starts a JVM, for captures too large for one process: Spark reads the
capture in parallel tasks and writes a directory of part files. pyspark is imported inside the
command only, so every other command starts in a fraction of a second.

The session it starts is quiet (its console is the command's): Spark's log at errors only, by
the log4j2 configuration the package carries (``spark-log4j2.properties``, the repository's
``conf/log4j2.properties``: no start-up banner, and a failed task is not logged again on its way
up, since the command prints the error itself), and no progress bars. A session already active in
the process (a notebook's, a test's) is used as it is: its console is its owner's."""
from __future__ import annotations

import importlib.resources
import os
import sys
from typing import Optional, Sequence

import click

from .commands import _examples, choosing_a_data_set, cli, mode_setting, option_setting, paths_argument
from .exits import OUTPUT, Failure
from .output import console
from ..engine import planned
from .reading import load_of, option_pairs

TARGETS = ("parquet", "csv")


@cli.command("convert", short_help="Convert a data set to Parquet or CSV with Spark.", epilog=_examples(
    "cmi convert sample_queues/nightly_batch.dmp FIN.DAILY_SALES sales.parquet",
    "cmi convert sample_queues/nightly_batch.dmp FIN.DAILY_SALES sales_csv --to csv --overwrite",
    "cmi convert sample_queues/nightly_batch.dmp FIN.RETURNS returns --mode PERMISSIVE --master 'local[2]'"))
@paths_argument
@click.argument("dataset")
@click.argument("out", metavar="OUT")
@click.option("--to", "target", type=click.Choice(TARGETS), default="parquet", show_default=True,
              help="The output format: a Spark directory of part files.")
@click.option("--overwrite", is_flag=True, help="Replace OUT if it exists (otherwise an existing OUT is an error).")
@click.option("--master", default="local[*]", show_default=True,
              help="Spark master of the session started (an active session in this process is used instead).")
@mode_setting
@option_setting
def convert(paths: Sequence[str], dataset: str, out: str, target: str, overwrite: bool, master: str,
            mode: Optional[str], options: Sequence[str]) -> None:
    """Convert data set DATASET (LIB.MEMBER or MEMBER) of a capture to Parquet or CSV with
    Spark: spark.read.format("cmi").option("dataset", DATASET).load(PATH...).write.parquet(OUT).
    CSV gets a header line."""
    given = option_pairs(options)
    # Before a JVM starts, what can fail fast does: the options, by the parser the source uses,
    # and the data set's choice and definitions, planned as Spark's planning will (the capture's
    # message index is cached on disk, so Spark's planning reads it again for free).
    with choosing_a_data_set(paths, "convert", after=[out]):
        planned.schema(load_of(paths, given, view="dataset", dataset=dataset, mode=mode))
    check_destination(out, overwrite)
    status = console(stderr=True).status(f"converting {dataset} to {target} with Spark ...")
    if status.console.is_terminal:
        status.start()
    try:
        run_spark_job(list(paths), dict(given, dataset=dataset, **({"mode": mode} if mode else {})),
                      out, target, overwrite, master)
    finally:
        status.stop()
    console().print(f"wrote {dataset.upper()} to {out} ({target})")


def check_destination(out: str, overwrite: bool) -> None:
    """Refuse a destination Spark would refuse, before starting it (exit code 3)."""
    if os.path.exists(out) and not overwrite:
        raise Failure(f"cannot write {out}: it exists; --overwrite replaces it", OUTPUT)
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise Failure(f"cannot write {out}: {parent} is no directory", OUTPUT)
    if not os.access(parent, os.W_OK):
        raise Failure(f"cannot write {out}: {parent} is not writable", OUTPUT)


LOG_CONFIGURATION = "spark-log4j2.properties"


def quiet_session_settings(log_configuration: str) -> dict:
    """What the session convert starts is given so that its console stays the command's: the
    log4j2 configuration file ``log_configuration`` (read by the driver's JVM as it starts; in
    local mode the executors run inside it), no UI and no progress bars."""
    return {"spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={log_configuration}",
            "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"}


def run_spark_job(paths: Sequence[str], options: dict, out: str, target: str, overwrite: bool, master: str) -> None:
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return write_with_spark(active, paths, options, out, target, overwrite)
    # Workers run this interpreter, which has this package and its dependencies.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    with importlib.resources.as_file(importlib.resources.files(__package__) / LOG_CONFIGURATION) as configuration:
        builder = SparkSession.builder.master(master).appName("cmi convert")
        for key, value in quiet_session_settings(str(configuration)).items():
            builder = builder.config(key, value)
        session = builder.getOrCreate()
        try:
            write_with_spark(session, paths, options, out, target, overwrite)
        finally:
            session.stop()


def write_with_spark(session, paths: Sequence[str], options: dict, out: str, target: str, overwrite: bool) -> None:
    import cmi_datasource
    from ..spark.errors import typed_errors

    cmi_datasource.register(session)
    # The CmiError inside Spark's exception is raised as itself, and ends the command as the
    # same error does in the other commands.
    with typed_errors():
        frame = session.read.format("cmi").options(**options).load(list(paths))
        writer = frame.write.mode("overwrite" if overwrite else "errorifexists")
        if target == "csv":
            writer.option("header", "true").csv(out)
        else:
            writer.parquet(out)
