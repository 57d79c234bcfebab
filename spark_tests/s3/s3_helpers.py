"""What the S3 tests share: a handle on the local moto S3 server, and the error kinds expected.

The server (``conftest.py``) enforces IAM: every request is signed by the IAM user ``cmi-reader``
whose keys are in the environment (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``), allowed
``s3:*`` everywhere except bucket ``DENIED_BUCKET``, which its policy denies explicitly. The code
under test reaches the server only through the standard environment (``AWS_ENDPOINT_URL``,
``AWS_DEFAULT_REGION``/``AWS_REGION`` and the keys), never through read or write options.
"""
from __future__ import annotations

import contextlib
import json
import urllib.request
import uuid
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional

DATA_BUCKET = "cmi-data"
DENIED_BUCKET = "cmi-denied"
MISSING_BUCKET = "cmi-no-such-bucket"

# The CmiError subclasses the storage seam raises (cmi_datasource/storage.py): a missing key,
# bucket, empty prefix or unmatched glob is a PathNotFoundError (a CmiOptionError, as a missing
# local path); a refusal is a StorageAccessError.
MISSING_OBJECT_ERRORS = ("PathNotFoundError",)
ACCESS_DENIED_ERRORS = ("StorageAccessError",)
# A cut capture is damage like a cut local file: any CmiFormatError (IncompleteAttachmentError,
# TruncatedError, DumpSyntaxError...) naming the s3:// URI as its file.


@dataclass
class S3Server:
    endpoint: str  # http://127.0.0.1:PORT
    port: int
    access_key: str
    secret_key: str
    region: str
    log_path: str
    recording_path: str

    # -- boto3, signed as the session's IAM user -------------------------------------------------
    def client(self):
        import boto3
        return boto3.client("s3", endpoint_url=self.endpoint, region_name=self.region,
                            aws_access_key_id=self.access_key, aws_secret_access_key=self.secret_key)

    def prefix(self, name: str = "t") -> str:
        """A fresh key prefix in the data bucket, so tests never see one another's objects."""
        return f"{name}-{uuid.uuid4().hex[:12]}"

    def uri(self, key: str, bucket: str = DATA_BUCKET) -> str:
        return f"s3://{bucket}/{key}"

    def upload(self, local_path: str, key: str, bucket: str = DATA_BUCKET) -> str:
        self.client().upload_file(local_path, bucket, key)
        return self.uri(key, bucket)

    def put(self, key: str, data: bytes, bucket: str = DATA_BUCKET) -> str:
        self.client().put_object(Bucket=bucket, Key=key, Body=data)
        return self.uri(key, bucket)

    def get(self, key: str, bucket: str = DATA_BUCKET) -> bytes:
        return self.client().get_object(Bucket=bucket, Key=key)["Body"].read()

    def keys(self, prefix: str, bucket: str = DATA_BUCKET) -> List[str]:
        """Every object under ``prefix``, hidden (``_``/``.``) names included."""
        found, token = [], None
        client = self.client()
        while True:
            kwargs = {"Bucket": bucket, "Prefix": prefix}
            if token:
                kwargs["ContinuationToken"] = token
            page = client.list_objects_v2(**kwargs)
            found += [o["Key"] for o in page.get("Contents", [])]
            if not page.get("IsTruncated"):
                return sorted(found)
            token = page["NextContinuationToken"]

    def pending_uploads(self, prefix: str, bucket: str = DATA_BUCKET) -> List[str]:
        """Keys of multipart uploads begun and neither completed nor aborted (pyarrow's
        ``open_output_stream`` begins one at open and completes it at close)."""
        page = self.client().list_multipart_uploads(Bucket=bucket, Prefix=prefix)
        return sorted(u["Key"] for u in page.get("Uploads", []))

    # -- moto's own API ----------------------------------------------------------------------------
    def moto_api(self, path: str, data: Optional[bytes] = None) -> bytes:
        request = urllib.request.Request(self.endpoint + "/moto-api/" + path, data=data,
                                         method="POST" if data is not None else "GET",
                                         headers={"Content-Type": "text/plain"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.read()

    @contextlib.contextmanager
    def recording(self) -> Iterator[List[Dict]]:
        """The requests the server receives inside the block (method, url, headers), through
        moto's recorder; the list is filled when the block ends."""
        requests: List[Dict] = []
        self.moto_api("recorder/reset-recording", b"")
        self.moto_api("recorder/start-recording", b"")
        try:
            yield requests
        finally:
            self.moto_api("recorder/stop-recording", b"")
            for line in self.moto_api("recorder/download-recording").decode("utf-8", "replace").splitlines():
                try:
                    entry = json.loads(line)
                except ValueError:  # the recorder appends from several threads
                    continue
                requests.append({"method": entry.get("method"), "url": entry.get("url"),
                                 "headers": {k.lower(): v for k, v in (entry.get("headers") or {}).items()}})
            self.moto_api("recorder/reset-recording", b"")


def object_gets(requests: List[Dict], bucket: str, key: str) -> List[Dict]:
    """The GET requests of one object (path-style URLs, as pyarrow sends them with an endpoint)."""
    path = f"/{bucket}/{key}"
    return [r for r in requests if r["method"] == "GET" and r["url"].split("?")[0].endswith(path)]


def range_of(request: Dict, size: int):
    """(start, end inclusive) of a GET's Range header; the whole object when it has none."""
    value = request["headers"].get("range")
    if not value:
        return 0, size - 1
    start, _, end = value.split("=", 1)[1].partition("-")
    return int(start), min(int(end) if end else size - 1, size - 1)


def error_class_named(name: str):
    from cmi_datasource import storage
    return getattr(storage, name, None)


def assert_storage_error(exc: BaseException, uri: str, names) -> None:
    """``exc`` (raised directly or by Spark) carries a CmiError whose class is one of ``names``,
    whose text names ``uri`` and says what to do, and that is no bare OSError."""
    from cmi_datasource.errors import CmiError
    from cmi_datasource.spark.errors import unwrap
    typed = unwrap(exc)
    text = str(exc)
    assert typed is not None, f"no CmiError inside {type(exc).__name__}: {text[:800]}"
    assert isinstance(typed, CmiError)
    assert type(typed).__name__ in names, f"expected one of {names}, got {type(typed).__name__}: {text[:800]}"
    assert uri.rstrip("/") in text, f"the error does not name {uri}: {text[:800]}"
    assert "what to do" in text.lower(), f"the error does not say what to do: {text[:800]}"
    assert not isinstance(exc, OSError) or isinstance(exc, CmiError)
