"""``df.write.format("cmi").save("s3://...")``: a whole dump appears at commit or nothing does.
They wait for the storage seam (S3 destinations in ``spark/writer.py``)."""
from __future__ import annotations

import os

import pytest

from .s3_helpers import DENIED_BUCKET, ACCESS_DENIED_ERRORS, assert_storage_error

pytestmark = pytest.mark.spark

SAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                       "sample_queues")
NIGHTLY = os.path.join(SAMPLES, "nightly_batch.dmp")


def _rows(df):
    return sorted(df.collect(), key=repr)


@pytest.fixture(scope="module")
def sales(spark):
    return spark.read.format("cmi").option("dataset", "FIN.DAILY_SALES").load(NIGHTLY).cache()


def _dumps(s3, prefix):
    return [k for k in s3.keys(prefix) if os.path.basename(k).startswith("cmi-") and k.endswith(".dmp")]


def _leftovers(s3, prefix):
    """Objects under the destination other than committed dumps (directory markers aside)."""
    return [k for k in s3.keys(prefix) if not k.endswith("/") and k not in _dumps(s3, prefix)]


def _read(spark, uri):
    return spark.read.format("cmi").option("dataset", "FIN.DAILY_SALES").load(uri)


def test_append_then_read_back(spark, s3, sales):
    prefix = s3.prefix("write")
    uri = s3.uri(f"{prefix}/out/")
    sales.write.format("cmi").mode("append").option("dataset", "FIN.DAILY_SALES").save(uri)
    assert len(_dumps(s3, prefix)) == 1
    assert _leftovers(s3, prefix) == [] and s3.pending_uploads(prefix) == []
    assert _rows(_read(spark, uri)) == _rows(sales)
    sales.write.format("cmi").mode("append").option("dataset", "FIN.DAILY_SALES").save(uri)
    assert len(_dumps(s3, prefix)) == 2
    assert _read(spark, uri).count() == 2 * sales.count()


def test_overwrite_replaces_earlier_dumps(spark, s3, sales):
    prefix = s3.prefix("write")
    uri = s3.uri(f"{prefix}/out/")
    s3.put(f"{prefix}/out/notes.txt", b"not ours: an overwrite keeps it")
    for _ in range(2):
        sales.write.format("cmi").mode("append").option("dataset", "FIN.DAILY_SALES").save(uri)
    sales.limit(10).write.format("cmi").mode("overwrite").option("dataset", "FIN.DAILY_SALES").save(uri)
    assert len(_dumps(s3, prefix)) == 1
    assert f"{prefix}/out/notes.txt" in s3.keys(prefix)
    assert _read(spark, s3.uri(f"{prefix}/out/cmi-*.dmp")).count() == 10


def test_failed_job_leaves_nothing_visible(spark, s3, sales):
    from cmi_datasource.errors import CmiEncodeError
    from cmi_datasource.spark.errors import unwrap
    prefix = s3.prefix("write")
    uri = s3.uri(f"{prefix}/out/")
    sales.write.format("cmi").mode("append").option("dataset", "FIN.DAILY_SALES").save(uri)
    before = s3.keys(prefix)
    bad = spark.range(0, 1000, numPartitions=2).selectExpr("id + 9007199254740993 AS big")  # > 2^53: refused in tasks
    for mode in ("append", "overwrite"):
        with pytest.raises(Exception) as info:
            bad.write.format("cmi").mode(mode).option("dataset", "FIN.DAILY_SALES").save(uri)
        assert isinstance(unwrap(info.value), CmiEncodeError), str(info.value)[:800]
        # Nothing new outside the staging prefix. A task still running when the job aborts may
        # finish its spill after the abort removed the prefix (a store has no folder to take away
        # from under it; docs/object-storage.md): readers skip _cmi_temporary/.
        assert [k for k in s3.keys(prefix) if not k.endswith("/") and "/_cmi_temporary/" not in k] == \
            [k for k in before if not k.endswith("/")]
        # Likewise a task killed mid-spill by the abort leaves its upload pending, never completed.
        assert [k for k in s3.pending_uploads(prefix) if "/_cmi_temporary/" not in k] == []
    assert _rows(_read(spark, uri)) == _rows(sales)


def test_write_to_a_denied_bucket(spark, s3, sales):
    uri = f"s3://{DENIED_BUCKET}/out/"
    with pytest.raises(Exception) as info:
        sales.write.format("cmi").mode("append").option("dataset", "FIN.DAILY_SALES").save(uri)
    assert_storage_error(info.value, uri, ACCESS_DENIED_ERRORS)
