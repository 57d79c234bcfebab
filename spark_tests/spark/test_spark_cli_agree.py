"""Spark and the ``cmi`` command read one way (issue 27): on a packed read of one data set
appended three times, Spark's rows are the observations ``cmi head`` counts and the
attachments ``cmi contents`` describes, with default options and with minPartitions=1."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cmi_datasource.cli import cli

from appended import appended_three_times


def cli_json(*args: str):
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return json.loads(result.stdout)


@pytest.mark.parametrize("options", [{}, {"minPartitions": "1"}])
def test_spark_and_the_cli_agree_on_a_packed_read(spark, tmp_path, options):
    folder = appended_three_times(tmp_path / "appended")
    df = spark.read.format("cmi").options(**options).load(folder)
    rows = sorted((r["ID"], r["NAME"]) for r in df.collect())
    assert rows == sorted((float(i), f"n{i}") for i in range(6) for _ in range(3))
    given = [arg for key, value in options.items() for arg in ("-o", f"{key}={value}")]
    head = cli_json("head", folder, "WORK.DATA", "-n", "100", *given)
    assert head["observations"] == len(rows) == 18
    assert sorted((r["ID"], r["NAME"]) for r in head["rows"]) == rows
    described = cli_json("contents", folder, "WORK.DATA", *given)["datasets"]
    assert sum(d["observations"] for d in described) == len(rows) and len(described) == 3
