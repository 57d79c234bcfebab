"""``spark.read.format("cmi")`` on a Spark standalone cluster: a master and two workers on
127.0.0.1, executors with temporary directories of their own, the package shipped to them as a
wheel (installed into the nodes' Python), a multi-file capture read in parallel by both.

One driver run (``cluster_driver.py``, fixture ``cluster_run``) serves every test here; each
asserts one property of what it reported.
"""
from __future__ import annotations

import json
import os
from pathlib import Path


from cmi_datasource import Capture, read

from . import cluster_harness as harness

DATASET = harness.CAPTURE_DATASET


def under(path: str, directory: Path) -> bool:
    return Path(path).resolve().is_relative_to(Path(directory).resolve())


def worker_of(cwd: str, cluster) -> str:
    """The worker whose work dir holds an executor's working directory."""
    found = [w.name for w in cluster.workers if under(cwd, w.work_dir)]
    assert len(found) == 1, f"{cwd} is in no worker's work dir ({[str(w.work_dir) for w in cluster.workers]})"
    return found[0]


def sorted_rows(table_rows):
    return sorted(tuple(r) for r in table_rows)


def test_both_workers_ran_read_tasks_of_the_multi_file_capture(cluster_run, standalone_cluster):
    reads = cluster_run["reads"]  # one report per partition read, from inside the read
    # minPartitions 6: one partition per LIB.SALES attachment (small ones are otherwise packed).
    assert cluster_run["partitions"] == len(reads) >= 6
    assert sorted(r["partition"] for r in reads) == list(range(len(reads)))
    ran_on = {worker_of(r["cwd"], standalone_cluster) for r in reads}
    assert ran_on == {w.name for w in standalone_cluster.workers}, ran_on
    assert sum(r["rows"] for r in reads) == cluster_run["probed_rows"] == len(cluster_run["rows"])
    # The master saw both workers alive and each ran an executor of the application.
    state = cluster_run["master_state"]
    assert state["aliveworkers"] == 2
    assert cluster_run["app_id"] in {a["id"] for a in state["activeapps"] + state["completedapps"]}
    for name, worker_state in cluster_run["worker_states"].items():
        apps = {e["appid"] for e in worker_state["executors"] + worker_state["finishedexecutors"]}
        assert cluster_run["app_id"] in apps, f"{name} ran no executor of the application"


def test_rows_match_capture_open_without_spark(cluster_run, cluster_capture):
    expected = read(Capture.open([str(cluster_capture)], use_index_cache=False), dataset=DATASET)
    assert [name for name, _, _ in cluster_run["schema"]] == expected.column_names
    assert [t for _, t, _ in cluster_run["schema"]] == ["double", "double", "string"]
    assert all(meta["sas_type"] in ("num", "char") for _, _, meta in cluster_run["schema"])
    assert len(cluster_run["rows"]) == expected.num_rows
    assert sorted_rows(cluster_run["rows"]) == sorted_rows(zip(*(expected.column(c).to_pylist()
                                                                 for c in expected.column_names)))


def test_attachments_view_matches_capture_open(cluster_run, cluster_capture):
    table = read(Capture.open([str(cluster_capture)], use_index_cache=False), view="attachments")
    columns = ["attachment", "kind", "name", "complete", "observations", "found_messages"]
    expected = sorted(tuple(r[c] for c in columns) for r in table.select(columns).to_pylist())
    got = sorted(tuple(r[c] for c in columns) for r in cluster_run["attachments"])
    assert got == expected
    assert sum(1 for r in got if r[2] == DATASET and r[3]) == 6


def test_executors_import_the_wheel_not_the_checkout(cluster_run, standalone_cluster, executor_python,
                                                     cluster_wheel):
    venv_site = harness.site_packages(executor_python.parent.parent)
    for r in cluster_run["reads"]:
        assert under(r["cmi_file"], venv_site / "cmi_datasource"), r["cmi_file"]
        assert r["executable"] == str(executor_python)
        assert str(harness.ROOT) not in r["pythonpath"].split(os.pathsep)
        assert [Path(p) for p in r["packages_on_path"]] == [venv_site], r["sys_path"]
    # Every import of the package by any Python process of either node (the discovered "cmi"
    # source's reads, the attachments view, the write tasks) came from the installed wheel.
    for worker in standalone_cluster.workers:
        imports = harness.imports_logged(worker.tmp_dir)
        assert imports, f"no Python worker of {worker.name} imported cmi_datasource"
        assert all(under(i["origin"], venv_site / "cmi_datasource") for i in imports), imports
    # Installed from this session's wheel, by pip.
    direct_url = json.loads(next(venv_site.glob("cmi_datasource-*.dist-info")).joinpath("direct_url.json").read_text())
    assert direct_url["url"] == cluster_wheel.resolve().as_uri()
    # The driver process runs the checkout: it does not share the executors' copy. (Its planning
    # workers run the nodes' Python, as a driver on a cluster node would.)
    driver_file = cluster_run["driver"]["cmi_file"]
    assert under(driver_file, harness.ROOT / "cmi_datasource") and not under(driver_file, venv_site)
    assert cluster_run["driver"]["pythonpath"] == ""
    # The wheel brought the C kernels, which the executors ran: a warm read of a dump loads no numba.
    assert all(r["native"] and under(r["native"], venv_site / "cmi_datasource") for r in cluster_run["reads"])
    assert not any(r["numba"] for r in cluster_run["reads"]), cluster_run["reads"]


def test_executors_use_their_own_temporary_directories(cluster_run, standalone_cluster):
    workers = {w.name: w for w in standalone_cluster.workers}
    driver_tmp = Path(cluster_run["driver"]["tmp"])
    for r in cluster_run["reads"]:
        assert Path(r["tmp"]) == workers[worker_of(r["cwd"], standalone_cluster)].tmp_dir, r
    for worker in workers.values():
        assert not under(str(worker.tmp_dir), driver_tmp) and not under(str(driver_tmp), worker.tmp_dir)
    # Planning kept its plans in the driver's disk cache. Executors get all they read in their
    # partitions (the attachments view's table too): none opens the capture, so none indexes it.
    assert cluster_run["driver"]["cache"]["entries"]
    for r in cluster_run["reads"]:
        assert r["cache"]["directory"] == str(workers[worker_of(r["cwd"], standalone_cluster)].cache_dir), r
    for worker in workers.values():
        kept = worker.cache_dir
        assert not kept.is_dir() or not [n for n in os.listdir(kept) if n.endswith(".entry")], sorted(os.listdir(kept))


def test_write_from_the_cluster_reads_back(cluster_run):
    written = Path(cluster_run["config"]["write_to"])
    dumps = sorted(p.name for p in written.iterdir())
    assert len(dumps) == 1 and dumps[0].startswith("cmi-work.cluster-"), dumps  # staging folder removed
    back = read(Capture.open([str(written)], use_index_cache=False), dataset="WORK.CLUSTER")
    assert sorted_rows(zip(*(back.column(c).to_pylist() for c in back.column_names))) == \
        sorted_rows(cluster_run["rows"])
