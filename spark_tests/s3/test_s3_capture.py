"""``Capture.open`` on s3:// URIs (no Spark): same tables as the local files, typed errors.

These wait for the storage seam (pyarrow.fs paths in ``engine/paths.py``, ``containers.py``,
``engine/index.py``)."""
from __future__ import annotations

from cmi_datasource import read
import os

import pytest

from .s3_helpers import (ACCESS_DENIED_ERRORS, DENIED_BUCKET, MISSING_BUCKET,
                        MISSING_OBJECT_ERRORS, assert_storage_error)

SAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                       "sample_queues")
NIGHTLY = os.path.join(SAMPLES, "nightly_batch.dmp")


def _open(paths):
    from cmi_datasource import Capture
    return Capture.open(paths)


def _without_source(table):
    return table.drop_columns([c for c in ("source",) if c in table.column_names])


def test_dataset_table_equals_the_local_read(s3):
    uri = s3.upload(NIGHTLY, s3.prefix("cap") + "/nightly_batch.dmp")
    assert read(_open(uri), dataset="FIN.DAILY_SALES").equals(read(_open(NIGHTLY), dataset="FIN.DAILY_SALES"))


def test_directory_and_glob(s3):
    prefix = s3.prefix("cap")
    s3.upload(NIGHTLY, f"{prefix}/dir/nightly_batch.dmp")
    s3.put(f"{prefix}/dir/_cmi_temporary/junk.dmp", b"not a capture")
    s3.put(f"{prefix}/dir/.hidden", b"not a capture")
    local = read(_open(NIGHTLY), dataset="FIN.DAILY_SALES")
    for uri in (s3.uri(f"{prefix}/dir/"), s3.uri(f"{prefix}/dir"), s3.uri(f"{prefix}/dir/*.dmp")):
        assert read(_open(uri), dataset="FIN.DAILY_SALES").equals(local), uri


def test_rewritten_object_is_read_again_not_from_the_index_cache(s3):
    key = s3.prefix("cap") + "/q.dmp"
    uri = s3.upload(NIGHTLY, key)
    assert read(_open(uri), dataset="FIN.DAILY_SALES").num_rows == 543
    other = os.path.join(SAMPLES, "mixed_types.dmp")
    s3.upload(other, key)  # same key, other content
    assert _without_source(read(_open(uri), view="attachments")).equals(
        _without_source(read(_open(other), view="attachments")))


def test_missing_key(s3):
    uri = s3.uri(s3.prefix("cap") + "/absent.dmp")
    with pytest.raises(Exception) as info:
        _open(uri)
    assert_storage_error(info.value, uri, MISSING_OBJECT_ERRORS)


def test_missing_bucket(s3):
    uri = f"s3://{MISSING_BUCKET}/nightly_batch.dmp"
    with pytest.raises(Exception) as info:
        _open(uri)
    assert_storage_error(info.value, uri, MISSING_OBJECT_ERRORS)
    assert MISSING_BUCKET in str(info.value)


def test_access_denied(s3):
    uri = f"s3://{DENIED_BUCKET}/secret/nightly_batch.dmp"
    with pytest.raises(Exception) as info:
        _open(uri)
    assert_storage_error(info.value, uri, ACCESS_DENIED_ERRORS)


def test_cut_object_is_a_format_error_naming_the_uri(s3):
    from cmi_datasource.errors import CmiFormatError
    with open(NIGHTLY, "rb") as f:
        data = f.read()
    uri = s3.put(s3.prefix("cap") + "/cut.dmp", data[:len(data) // 2])
    with pytest.raises(CmiFormatError) as info:
        read(_open(uri), dataset="FIN.DAILY_SALES")
    assert info.value.source == uri
    assert "what to do" in str(info.value)


def test_rv_attachment_keys_and_rows_equal_the_local_read(s3):
    """A TIB/RV capture's keys come from its content (its correlids are blank): the same on S3,
    under another name, as on the local disk (issue 26, finding 6)."""
    sample = os.path.join(SAMPLES, "tibrv_capture.rv")
    uri = s3.upload(sample, s3.prefix("cap") + "/moved/renamed.rv")
    local, remote = _open(sample), _open(uri)
    keys = [a.key_hex for a in local.attachments]
    assert len(keys) == 2 and [a.key_hex for a in remote.attachments] == keys
    assert read(remote).equals(read(local))
