"""What pyarrow 26's S3 filesystem does against a real (moto) S3 server: the facts the storage
seam relies on, pinned so that an upgrade that changes them is noticed. No Spark."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from pyarrow import fs as pafs

from .s3_helpers import DATA_BUCKET, DENIED_BUCKET, MISSING_BUCKET


def _fs():
    filesystem, _ = pafs.FileSystem.from_uri(f"s3://{DATA_BUCKET}/")
    return filesystem


def test_from_uri_takes_the_endpoint_from_the_environment(s3):
    filesystem, path = pafs.FileSystem.from_uri(f"s3://{DATA_BUCKET}/x")
    assert path == f"{DATA_BUCKET}/x"
    assert _options(filesystem)["endpoint_override"] == s3.endpoint
    assert _options(filesystem)["region"] == ""  # no region lookup once an endpoint is set
    # S3FileSystem() with no arguments does not read AWS_ENDPOINT_URL: it goes to amazonaws.com.
    assert _options(pafs.S3FileSystem())["endpoint_override"] == ""


def _options(filesystem) -> dict:
    return filesystem.__reduce__()[1][0]


def test_ranged_reads_and_etag_in_metadata(s3):
    key = s3.prefix("facts") + "/obj"
    s3.put(key, b"0123456789")
    with _fs().open_input_file(f"{DATA_BUCKET}/{key}") as f:
        assert f.size() == 10
        assert f.read_at(3, 2) == b"234"  # read_at(nbytes, offset)
        meta = f.metadata()
    etag = s3.client().head_object(Bucket=DATA_BUCKET, Key=key)["ETag"]
    assert meta["ETag"].decode() == etag
    info = _fs().get_file_info(f"{DATA_BUCKET}/{key}")
    assert info.size == 10 and info.mtime is not None


def test_missing_key_and_bucket_are_file_not_found(s3):
    filesystem = _fs()
    assert filesystem.get_file_info(f"{DATA_BUCKET}/nope").type == pafs.FileType.NotFound
    assert filesystem.get_file_info(f"{MISSING_BUCKET}/nope").type == pafs.FileType.NotFound
    assert filesystem.get_file_info(MISSING_BUCKET).type == pafs.FileType.NotFound
    for path in (f"{DATA_BUCKET}/nope", f"{MISSING_BUCKET}/nope"):
        with pytest.raises(FileNotFoundError):
            filesystem.open_input_file(path)
    with pytest.raises(OSError, match="NO_SUCH_BUCKET"):
        filesystem.get_file_info(pafs.FileSelector(f"{MISSING_BUCKET}/dir", recursive=True))
    with pytest.raises(FileNotFoundError):
        filesystem.get_file_info(pafs.FileSelector(f"{DATA_BUCKET}/no-such-prefix", recursive=True))


def test_access_denied_is_a_plain_oserror(s3):
    filesystem = _fs()
    with pytest.raises(OSError, match="ACCESS_DENIED") as info:
        filesystem.open_input_file(f"{DENIED_BUCKET}/secret/nightly_batch.dmp")
    assert type(info.value) is OSError
    with pytest.raises(OSError, match="ACCESS_DENIED"):
        filesystem.get_file_info(pafs.FileSelector(f"{DENIED_BUCKET}/secret", recursive=True))


def test_recursive_listing_returns_hidden_names_and_no_globs(s3):
    prefix = s3.prefix("facts")
    for name in ("a.dmp", "sub/b.dmp", "_tmp/c.dmp", ".hidden"):
        s3.put(f"{prefix}/{name}", b"x")
    infos = _fs().get_file_info(pafs.FileSelector(f"{DATA_BUCKET}/{prefix}", recursive=True))
    files = sorted(i.path for i in infos if i.type == pafs.FileType.File)
    assert files == sorted(f"{DATA_BUCKET}/{prefix}/{n}" for n in ("a.dmp", "sub/b.dmp", "_tmp/c.dmp", ".hidden"))
    # No glob support: a pattern is a key that does not exist.
    assert _fs().get_file_info(f"{DATA_BUCKET}/{prefix}/*.dmp").type == pafs.FileType.NotFound


def test_output_stream_is_visible_only_once_closed(s3):
    key = s3.prefix("facts") + "/out"
    out = _fs().open_output_stream(f"{DATA_BUCKET}/{key}")
    out.write(b"x" * 1000)
    assert _fs().get_file_info(f"{DATA_BUCKET}/{key}").type == pafs.FileType.NotFound
    assert s3.pending_uploads(key) == [key]  # a multipart upload, begun at open
    out.close()
    assert s3.get(key) == b"x" * 1000
    assert s3.pending_uploads(key) == []


def test_output_stream_of_a_killed_writer_leaves_an_invisible_pending_upload(s3, tmp_path):
    key = s3.prefix("facts") + "/killed"
    script = textwrap.dedent(f"""
        import os, sys, time
        from pyarrow import fs
        f, _ = fs.FileSystem.from_uri("s3://{DATA_BUCKET}/")
        out = f.open_output_stream("{DATA_BUCKET}/{key}")
        out.write(b"x" * 1000)
        print("written", flush=True)
        time.sleep(60)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=os.environ)
    try:
        assert child.stdout.readline().strip() == "written"
    finally:
        child.kill()
        child.wait()
    assert _fs().get_file_info(f"{DATA_BUCKET}/{key}").type == pafs.FileType.NotFound
    assert s3.pending_uploads(key) == [key]


def test_closing_in_a_with_block_commits_even_on_an_exception(s3):
    # NativeFile has no abort(): leaving a with block (or garbage collection) completes the upload.
    key = s3.prefix("facts") + "/half"
    with pytest.raises(RuntimeError):
        with _fs().open_output_stream(f"{DATA_BUCKET}/{key}") as out:
            out.write(b"half")
            raise RuntimeError("writer failed")
    assert s3.get(key) == b"half"


def test_move_is_copy_then_delete(s3):
    prefix = s3.prefix("facts")
    s3.put(f"{prefix}/a", b"A")
    with s3.recording() as requests:
        _fs().move(f"{DATA_BUCKET}/{prefix}/a", f"{DATA_BUCKET}/{prefix}/b")
    # Deleting the last key under a "directory" makes pyarrow write an empty marker object
    # "<prefix>/" so that the directory still exists: listings by boto3 show it as a key.
    assert s3.keys(prefix) == [f"{prefix}/", f"{prefix}/b"]
    copies = [r for r in requests if r["method"] == "PUT" and "x-amz-copy-source" in r["headers"]]
    deletes = [r for r in requests if r["method"] == "DELETE"]
    assert copies and deletes
