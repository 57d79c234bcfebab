"""``spark.read.format("cmi").load("s3://...")`` against the local moto server: the same rows as
the local files, ranged reads per partition, typed errors. They wait for the storage seam."""
from __future__ import annotations

import os

import pyarrow as pa
import pytest

from .s3_helpers import (ACCESS_DENIED_ERRORS, DATA_BUCKET, DENIED_BUCKET, MISSING_BUCKET,
                        MISSING_OBJECT_ERRORS, assert_storage_error, object_gets, range_of)

pytestmark = pytest.mark.spark

SAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                       "sample_queues")
NIGHTLY = os.path.join(SAMPLES, "nightly_batch.dmp")
BIG_ROWS = 60_000


def _rows(df, drop=("source",)):
    return sorted(df.drop(*[c for c in drop if c in df.columns]).collect(), key=repr)


def _sales(spark, *paths):
    return (spark.read.format("cmi").option("dataset", "FIN.DAILY_SALES")
            .load(list(paths) if len(paths) > 1 else paths[0]))


@pytest.fixture(scope="module")
def uploaded(s3_server):
    """nightly_batch.dmp under <prefix>/dir/ and a second copy under <prefix>/dir2/."""
    prefix = s3_server.prefix("read")
    s3_server.upload(NIGHTLY, f"{prefix}/dir/nightly_batch.dmp")
    s3_server.upload(os.path.join(SAMPLES, "files.dmp"), f"{prefix}/dir/sub/files.dmp")
    s3_server.upload(NIGHTLY, f"{prefix}/dir2/nightly_copy.dmp")
    return prefix


def test_directory_equals_the_local_read(spark, s3, uploaded):
    assert _rows(_sales(spark, s3.uri(f"{uploaded}/dir/"))) == _rows(_sales(spark, NIGHTLY))


def test_single_object_and_glob(spark, s3, uploaded):
    local = _rows(_sales(spark, NIGHTLY))
    assert _rows(_sales(spark, s3.uri(f"{uploaded}/dir/nightly_batch.dmp"))) == local
    assert _rows(_sales(spark, s3.uri(f"{uploaded}/dir/*.dmp"))) == local


def test_several_paths(spark, s3, uploaded):
    # The same attachment in two files: exact duplicates are dropped, as for local files.
    both = _sales(spark, s3.uri(f"{uploaded}/dir/nightly_batch.dmp"), s3.uri(f"{uploaded}/dir2/nightly_copy.dmp"))
    local_copy = os.path.join(os.path.dirname(NIGHTLY), "nightly_batch.dmp")
    assert _rows(both) == _rows(_sales(spark, NIGHTLY, local_copy))


def test_attachments_view(spark, s3, uploaded):
    remote = spark.read.format("cmi").option("view", "attachments").load(s3.uri(f"{uploaded}/dir/"))
    local = spark.read.format("cmi").option("view", "attachments").load(
        [NIGHTLY, os.path.join(SAMPLES, "files.dmp")])
    assert _rows(remote) == _rows(local)
    sources = {r.source for r in remote.select("source").collect()}
    assert sources == {s3.uri(f"{uploaded}/dir/nightly_batch.dmp"), s3.uri(f"{uploaded}/dir/sub/files.dmp")}


@pytest.fixture(scope="module")
def big_object(s3_server, tmp_path_factory):
    from cmi_datasource.engine.write import DatasetToWrite, WriteOptions, write_attachments_dump
    table = pa.table({"ID": pa.array([float(i) for i in range(BIG_ROWS)]),
                      **{f"X{j}": pa.array([i * 0.5 + j for i in range(BIG_ROWS)]) for j in range(4)}})
    path = tmp_path_factory.mktemp("s3big") / "big.dmp"
    with open(path, "wb") as f:
        write_attachments_dump(f, [DatasetToWrite(table, "LIB", "BIG")],
                               options=WriteOptions(deterministic_seed="s3big"))
    key = s3_server.prefix("big") + "/big.dmp"
    s3_server.upload(str(path), key)
    return key, os.path.getsize(path)


def test_partitions_fetch_only_their_byte_ranges(spark, s3, big_object):
    key, size = big_object
    reader = (spark.read.format("cmi").option("maxPartitionBytes", str(BIG_ROWS * 40 // 4))
              .option("minPartitions", "1"))
    df = reader.load(s3.uri(key))
    assert df.rdd.getNumPartitions() >= 4
    assert df.count() == BIG_ROWS  # planning: the index is built and cached here
    with s3.recording() as requests:
        df = reader.load(s3.uri(key))  # the index is cached: planning should not read the object again
        total = df.selectExpr("count(*)", "sum(ID)").first()
    assert tuple(total) == (BIG_ROWS, sum(range(BIG_ROWS)))
    gets = object_gets(requests, DATA_BUCKET, key)
    assert gets, "no GET of the object was recorded"
    ranges = [range_of(r, size) for r in gets]
    assert all("range" in r["headers"] for r in gets), "a GET without a Range header reads the whole object"
    longest = max(end - start + 1 for start, end in ranges)
    assert longest <= size // 2, f"a GET read {longest} of {size} bytes: partitions should read their own ranges"
    fetched = sum(end - start + 1 for start, end in ranges)
    assert fetched <= 1.5 * size, f"{fetched} bytes fetched for a {size}-byte object"


def test_rewritten_object_is_read_again(spark, s3):
    key = s3.prefix("read") + "/q.dmp"
    uri = s3.upload(NIGHTLY, key)
    assert _sales(spark, uri).count() == 543
    other = os.path.join(SAMPLES, "mixed_types.dmp")
    s3.upload(other, key)
    view = lambda p: spark.read.format("cmi").option("view", "attachments").load(p)  # noqa: E731
    assert _rows(view(uri)) == _rows(view(other))


def _failure(spark, uri, dataset="FIN.DAILY_SALES"):
    with pytest.raises(Exception) as info:
        spark.read.format("cmi").option("dataset", dataset).load(uri).collect()
    return info.value


def test_missing_key(spark, s3):
    uri = s3.uri(s3.prefix("read") + "/absent.dmp")
    assert_storage_error(_failure(spark, uri), uri, MISSING_OBJECT_ERRORS)


def test_missing_bucket(spark, s3):
    uri = f"s3://{MISSING_BUCKET}/nightly_batch.dmp"
    assert_storage_error(_failure(spark, uri), uri, MISSING_OBJECT_ERRORS)


def test_empty_prefix_and_unmatched_glob(spark, s3):
    for uri in (s3.uri(s3.prefix("read") + "/"), s3.uri(s3.prefix("read") + "/*.dmp")):
        assert_storage_error(_failure(spark, uri), uri, MISSING_OBJECT_ERRORS)


def test_access_denied(spark, s3):
    uri = f"s3://{DENIED_BUCKET}/secret/nightly_batch.dmp"
    assert_storage_error(_failure(spark, uri), uri, ACCESS_DENIED_ERRORS)


def test_cut_object(spark, s3):
    from cmi_datasource.errors import CmiFormatError
    from cmi_datasource.spark.errors import unwrap
    with open(NIGHTLY, "rb") as f:
        data = f.read()
    uri = s3.put(s3.prefix("read") + "/cut.dmp", data[:len(data) // 2])
    error = _failure(spark, uri)
    typed = unwrap(error)
    assert isinstance(typed, CmiFormatError), str(error)[:800]
    assert typed.source == uri
