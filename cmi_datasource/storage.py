"""Where capture files live: local paths, and object stores and HDFS by URI.

``load()`` takes local paths and ``file://``, ``s3://``, ``gs://`` (``gcs://``), ``abfs://``
(``abfss://``), ``hdfs://`` and ``viewfs://`` URIs. A URI is reached through **pyarrow.fs**:
pyarrow is already needed for the batches, its wheels carry S3, GCS, Azure and HDFS clients in
C++ (no more Python packages), and its files read byte ranges (``seek`` + ``read`` is one ranged
GET on S3), so a partition fetches only the messages it decodes.

Credentials and endpoints come from each store's standard environment and configuration, as
pyarrow's clients read them (for S3: ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/
``AWS_SESSION_TOKEN``, ``AWS_PROFILE`` and ``~/.aws``, ``AWS_DEFAULT_REGION``, ``AWS_ENDPOINT_URL``;
GCS: ``GOOGLE_APPLICATION_CREDENTIALS``; Azure: ``AZURE_STORAGE_ACCOUNT_NAME`` and
``AZURE_STORAGE_ACCOUNT_KEY`` or the default credential chain; HDFS: ``HADOOP_HOME``,
``CLASSPATH``). Never from read options, which Spark shows in query plans and logs.

Everything above this module passes paths around as strings (they are pickled to Spark's
workers); a file system is made from its URI where a file is opened, once per process.
"""
from __future__ import annotations

import fnmatch
import functools
import io
import os
import posixpath
import re
import stat
from dataclasses import dataclass
from typing import BinaryIO, Callable, Dict, List, Optional, Sequence, Tuple

from .errors import CmiError, CmiOptionError, InputFileError, Location

# URI schemes pyarrow.fs opens (gcs and abfss are the same stores as gs and abfs).
REMOTE_SCHEMES = ("s3", "gs", "gcs", "abfs", "abfss", "hdfs", "viewfs")
_IOV_MAX = 1024  # the buffers one preadv fills at most (Linux's IOV_MAX)
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


class _WithHint:
    """An error whose text is its problem and, on the next line, what to do (as CmiFormatError's)."""

    hint = ""

    def __init__(self, problem: str, hint: Optional[str] = None):
        self.problem = problem
        if hint is not None:
            self.hint = hint
        super().__init__(f"{problem}\n  what to do: {self.hint}")

    def __reduce__(self):
        return type(self), (self.problem, self.hint)


class StorageError(_WithHint, CmiError):
    """A store refused or could not serve a path: the credentials do not allow it, or the store
    cannot be reached."""

    hint = ("check the URI and the store's standard credentials and endpoint settings (for S3: "
            "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE, AWS_DEFAULT_REGION, AWS_ENDPOINT_URL) in the "
            "environment of the driver and of Spark's executors")


class StorageAccessError(StorageError):
    """The credentials found do not allow reading (or writing) the path."""


class PathNotFoundError(_WithHint, CmiOptionError):
    """A path given to load() names nothing: no file, folder, glob match, bucket or key."""

    hint = ("check the path (a file, a folder or a glob; an object store's URI as scheme://bucket/key); "
            "for an object store, that the bucket exists and the credentials may list it")


def scheme_of(path: str) -> Optional[str]:
    found = _SCHEME.match(path)
    return found.group(1).lower() if found else None


def is_remote(path: str) -> bool:
    return scheme_of(path) in REMOTE_SCHEMES


def local_path(path: str) -> str:
    """A local path from a ``file:`` URI or path (``file:///a/b``, ``file:/a/b``, ``/a/b``)."""
    if path.startswith("file://"):
        return path[len("file://"):] or "/"
    if path.startswith("file:"):
        return path[len("file:"):]
    return path


@functools.lru_cache(maxsize=16)
def _filesystem_of(root: str):
    """The pyarrow file system of ``scheme://authority`` (one per process: clients hold
    connection pools and credentials)."""
    import pyarrow.fs as pafs
    try:
        fs, _ = pafs.FileSystem.from_uri(root + "/")
    except (OSError, ValueError) as e:  # pyarrow's ArrowInvalid and ArrowIOError are both
        raise StorageError(f"cannot open the store of {root}: {e}") from None
    return fs


def _split(uri: str) -> Tuple[object, str]:
    """The file system of a remote URI and the path inside it (``bucket/key`` for S3)."""
    scheme = scheme_of(uri)
    rest = uri[len(scheme) + 3:]
    authority, _, inner = rest.partition("/")
    fs = _filesystem_of(f"{scheme}://{authority}")
    # S3, GCS and Azure address objects as bucket/key; HDFS by the path below the name node.
    inner_path = f"{authority}/{inner}".rstrip("/") if scheme in ("s3", "gs", "gcs", "abfs", "abfss") \
        else "/" + inner.rstrip("/")
    return fs, inner_path


def _uri(uri_of_root: str, inner: str) -> str:
    scheme = scheme_of(uri_of_root)
    if scheme in ("s3", "gs", "gcs", "abfs", "abfss"):
        return f"{scheme}://{inner}"
    authority = uri_of_root[len(scheme) + 3:].partition("/")[0]
    return f"{scheme}://{authority}{inner}"


def _refused(uri: str, error: BaseException, doing: str) -> CmiError:
    """What a store's OSError means for the user, typed."""
    text = str(error)
    # pyarrow reports the store's error code in its text (AWS Error ACCESS_DENIED, NO_SUCH_BUCKET):
    # compared without case, spaces and underscores.
    squeezed = text.lower().replace(" ", "").replace("_", "")
    if isinstance(error, PermissionError) or "accessdenied" in squeezed or "forbidden" in squeezed:
        return StorageAccessError(f"the store refused {doing} {uri}: access denied ({text})")
    if "nosuchbucket" in squeezed or "bucketdoesnotexist" in squeezed:
        return PathNotFoundError(f"the bucket of {uri!r} does not exist ({text})")
    if isinstance(error, FileNotFoundError) or "notfound" in squeezed or "nosuchkey" in squeezed \
            or "doesnotexist" in squeezed:
        return PathNotFoundError(f"path {uri!r} does not exist")
    return StorageError(f"the store could not serve {doing} {uri}: {text}")


# -- reading ----------------------------------------------------------------------------------


def open_input(path: str) -> BinaryIO:
    """The file at ``path`` for reading at any offset (``seek``, ``read``, ``readinto``): a local
    file unbuffered, or a pyarrow random-access file whose reads are ranged requests. A local path
    must name a regular file (a FIFO would block, a device or a directory has no end), and a read
    the system fails is a typed error naming the file and the offset (``_TypedReads``)."""
    if not is_remote(path):
        local = local_path(path)
        try:
            if not stat.S_ISREG(os.stat(local).st_mode):
                raise InputFileError(f"{local!r} is {_kind_of(local)}, not a regular file: a capture is read "
                                     f"from a file", Location(path))
            return _TypedReads(open(local, "rb", buffering=0), path)
        except OSError as e:
            raise _unreadable(path, e, None) from None
    fs, inner = _split(path)
    try:
        return _TypedReads(fs.open_input_file(inner), path)
    except OSError as e:
        raise _refused(path, e, "reading") from None


def _kind_of(local: str) -> str:
    """What a path that is no regular file is, in words."""
    mode = os.stat(local).st_mode
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    return next((words for test, words in kinds if test(mode)), "a special file")


def _unreadable(path: str, error: OSError, offset: Optional[int]) -> CmiError:
    """What a failed open or read of a capture file means for the user, typed."""
    if is_remote(path):
        return _refused(path, error, "reading")
    if isinstance(error, FileNotFoundError):
        return PathNotFoundError(f"path {path!r} does not exist")
    return InputFileError(f"the system failed to read the file: {error.strerror or error}",
                          Location(path, None, offset))


class _TypedReads(io.RawIOBase):
    """A capture file whose failed reads are typed errors (``_unreadable``): an I/O error, or a
    file such as ``/proc/self/mem`` that refuses to be read, is no bare OSError. A read goes
    straight to the file (into the caller's buffer for ``readinto``), no copy added."""

    def __init__(self, f, path: str):
        super().__init__()
        self._f, self.name = f, path

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, view) -> int:
        try:
            return self._f.readinto(view)
        except OSError as e:
            raise _unreadable(self.name, e, self._offset()) from None

    def read(self, size: Optional[int] = -1) -> bytes:
        try:
            return self._f.read() if size is None or size < 0 else self._f.read(size)
        except OSError as e:
            raise _unreadable(self.name, e, self._offset()) from None

    def readall(self) -> bytes:
        return self.read()

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._f.seek(offset, whence)

    def tell(self) -> int:
        return self._f.tell()

    def scatters(self) -> bool:
        """Whether ``read_scattered`` reads straight into the caller's buffers (a local file, on a
        system with ``preadv``: not Windows)."""
        return isinstance(self._f, io.FileIO) and hasattr(os, "preadv")

    def read_scattered(self, offset: int, views: Sequence[memoryview]) -> int:
        """Fill ``views`` in turn with the file's bytes from ``offset`` on, by one system call per
        ``_IOV_MAX`` views (``preadv``: no copy besides the system's); returns the bytes read, fewer
        when the file ends first (or a read stops short)."""
        got = 0
        for at in range(0, len(views), _IOV_MAX):
            chunk = views[at:at + _IOV_MAX]
            want = sum(len(v) for v in chunk)
            try:
                n = os.preadv(self._f.fileno(), chunk, offset + got)
            except OSError as e:
                raise _unreadable(self.name, e, offset + got) from None
            got += n
            if n < want:
                break
        return got

    def size(self) -> int:
        """The file's size as its system gives it (0 for a /proc file, whatever it holds)."""
        return os.fstat(self._f.fileno()).st_size if isinstance(self._f, io.FileIO) else self._f.size()

    def _offset(self) -> Optional[int]:
        try:
            return self._f.tell()
        except (OSError, ValueError):
            return None

    def close(self) -> None:
        if not self.closed:
            self._f.close()
        super().close()


@dataclass(frozen=True)
class Identity:
    """What tells one version of a file from another: for a local file its size, mtime, and
    ctime and inode (which a rewrite changes even when it restores size and mtime); for an
    object its size and the store's version (S3 ETag and VersionId, GCS generation) when the
    store gives one, else its modification time."""

    path: str
    size: int
    version: tuple


_VERSION_KEYS = ("ETag", "VersionId", "generation", "Generation", "etag")


def identity(path: str) -> Identity:
    if not is_remote(path):
        try:
            stat = os.stat(local_path(path))
        except FileNotFoundError:  # listed, then removed: the read's race, typed
            raise PathNotFoundError(f"path {path!r} does not exist") from None
        return Identity(os.path.abspath(local_path(path)), stat.st_size,
                        (("mtime", stat.st_mtime_ns), ("ctime", stat.st_ctime_ns), ("inode", stat.st_ino)))
    fs, inner = _split(path)
    try:
        with fs.open_input_file(inner) as f:  # one HEAD request: size and the store's metadata
            size = f.size()
            meta = {k: v for k, v in f.metadata().items()}
    except OSError as e:
        raise _refused(path, e, "reading") from None
    version = tuple((k, meta[k]) for k in _VERSION_KEYS if meta.get(k))
    if not version:
        info = fs.get_file_info(inner)
        version = (("mtime", info.mtime_ns),)
    return Identity(path, size, version)


def modification_times(paths: Sequence[str]) -> List[Optional[int]]:
    """Each file's modification time in nanoseconds since the epoch, None for one that is gone."""
    return [None if found is None else found[0] for found in times_and_sizes(paths)]


def times_and_sizes(paths: Sequence[str]) -> List[Optional[Tuple[int, int]]]:
    """Each file's (modification time in nanoseconds since the epoch, size in bytes), None for
    one that is gone; the files of one store are asked about in one request."""
    found_all: List[Optional[Tuple[int, int]]] = [None] * len(paths)
    by_store: Dict[int, Tuple[object, List[Tuple[int, str]]]] = {}
    for at, path in enumerate(paths):
        if is_remote(path):
            fs, inner = _split(path)  # one file system object per store (_filesystem_of)
            by_store.setdefault(id(fs), (fs, []))[1].append((at, inner))
            continue
        try:
            stat = os.stat(local_path(path))
        except FileNotFoundError:
            continue
        found_all[at] = (stat.st_mtime_ns, stat.st_size)
    if by_store:
        import pyarrow.fs as pafs
    for fs, group in by_store.values():
        try:
            found = fs.get_file_info([inner for _, inner in group])  # type: ignore[attr-defined]
        except OSError as e:
            raise _refused(paths[group[0][0]], e, "listing") from None
        for (at, _), info in zip(group, found):
            if info.type != pafs.FileType.NotFound:
                found_all[at] = (info.mtime_ns, info.size)
    return found_all


def _missing(fs, inner: str, given: str) -> PathNotFoundError:
    """Not found: say whether the bucket (container) itself is missing, the commoner mistake."""
    import pyarrow.fs as pafs
    bucket = inner.split("/")[0]
    if scheme_of(given) in ("s3", "gs", "gcs", "abfs", "abfss") and bucket != inner:
        try:
            if fs.get_file_info(bucket).type == pafs.FileType.NotFound:
                return PathNotFoundError(f"the bucket {bucket!r} of {given!r} does not exist")
        except OSError:
            pass
    return PathNotFoundError(f"path {given!r} does not exist")


def _visible(name: str) -> bool:
    # Spark's file sources skip names starting with "." or "_" (_SUCCESS, .crc, _cmi_temporary).
    return not (name.startswith(".") or name.startswith("_"))


def list_capture_files(given: str, recursive: bool = True,
                       name_matches: Optional[Callable[[str], bool]] = None) -> List[str]:
    """The files ``given`` names: itself, the visible files below it when it is a directory
    (at any depth, in name order; only its own files when not ``recursive``), or those a glob
    matches (a directory it matches read as one given). ``name_matches`` decides on the name of
    every file, named ones too (as Spark's file sources apply pathGlobFilter).
    Raises CmiOptionError when nothing is there."""
    name_matches = name_matches or _any_name
    if not is_remote(given):
        return _list_local(local_path(given), recursive, name_matches)
    import glob as globbing

    import pyarrow.fs as pafs
    fs, inner = _split(given)
    magic = globbing.has_magic(inner)
    base = inner
    if magic:  # list below the last component free of wildcards, then match
        parts = inner.split("/")
        fixed = next(i for i, p in enumerate(parts) if globbing.has_magic(p))
        base = "/".join(parts[:fixed])
    try:
        info = fs.get_file_info(base)
        if info.type == pafs.FileType.File and not magic:
            return [given] if name_matches(posixpath.basename(inner)) else []
        if info.type == pafs.FileType.NotFound and not magic:
            raise _missing(fs, inner, given)
        found = fs.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True))
    except OSError as e:
        raise _refused(given, e, "listing") from None
    # A glob names paths this deep below ``base``; a file deeper is in a directory it named.
    named_depth = len(inner.split("/")) - len(base.split("/")) if magic else 0
    files = []
    for entry in found:
        if entry.type != pafs.FileType.File:
            continue
        below = posixpath.relpath(entry.path, base).split("/")
        if not all(_visible(p) for p in below):
            continue
        if magic and not fnmatch.fnmatchcase(entry.path, inner):
            continue
        in_directory = len(below) - named_depth
        if not name_matches(below[-1]) or (in_directory > 1 and not recursive):
            continue
        files.append(_uri(given, entry.path))
    if magic and not files:
        raise PathNotFoundError(f"no file matches {given!r}")
    return sorted(files)


def _any_name(name: str) -> bool:
    return True


def _list_local(given: str, recursive: bool, name_matches: Callable[[str], bool]) -> List[str]:
    import glob as globbing
    matches = sorted(globbing.glob(given)) if globbing.has_magic(given) else [given]
    if not matches:
        raise PathNotFoundError(f"no file matches {given!r}")
    found: List[str] = []
    for path in matches:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if _visible(d)) if recursive else []
                found.extend(os.path.join(root, f) for f in sorted(files) if _visible(f) and name_matches(f))
        elif os.path.isfile(path):
            if name_matches(os.path.basename(path)):
                found.append(path)
        elif os.path.exists(path):  # a FIFO would block the read, a device never end it
            raise InputFileError(f"{path!r} is {_kind_of(path)}, not a regular file: a capture is read from a file",
                                 Location(path))
        else:
            raise PathNotFoundError(f"path {path!r} does not exist")
    return [os.path.abspath(p) for p in found]


# -- writing (the writer's destination: spark/writer.py) -------------------------------------------
#
# Local paths keep the file system's own guarantees (a directory a task cannot recreate, an atomic
# rename). An object store has neither: "directories" are key prefixes, and a move is a copy then a
# delete. What keeps a save whole there is that an object appears only once it is complete: the
# copy of a finished dump to its final key, like a PUT or a completed multipart upload, is never
# seen half done.


def join(base: str, *names: str) -> str:
    return posixpath.join(base, *names) if is_remote(base) else os.path.join(local_path(base), *names)


def is_dir(path: str) -> bool:
    if not is_remote(path):
        return os.path.isdir(local_path(path))
    return _remote_type(path) == "Directory"


def is_file(path: str) -> bool:
    if not is_remote(path):
        return os.path.isfile(local_path(path))
    return _remote_type(path) == "File"


def exists(path: str) -> bool:
    """Whether ``path`` names a file or a folder (a glob: whether anything can match it, left
    to the listing)."""
    import glob as globbing
    if globbing.has_magic(path):
        return True
    if not is_remote(path):
        return os.path.exists(local_path(path))
    return _remote_type(path) != "NotFound"


def _remote_type(path: str) -> str:
    """``File``, ``Directory`` (a key prefix) or ``NotFound``: the pyarrow.fs FileType's name."""
    fs, inner = _split(path)
    try:
        return fs.get_file_info(inner).type.name
    except OSError as e:
        raise _refused(path, e, "reading") from None


def list_names(directory: str) -> List[str]:
    """The names directly in ``directory`` (files and folders), sorted; none when it is missing."""
    if not is_remote(directory):
        directory = local_path(directory)
        return sorted(os.listdir(directory)) if os.path.isdir(directory) else []
    import pyarrow.fs as pafs
    fs, inner = _split(directory)
    try:
        found = fs.get_file_info(pafs.FileSelector(inner, allow_not_found=True))
    except OSError as e:
        raise _refused(directory, e, "listing") from None
    return sorted(posixpath.basename(f.path) for f in found)


def make_dirs(path: str) -> None:
    if not is_remote(path):
        os.makedirs(local_path(path), exist_ok=True)
        return
    fs, inner = _split(path)
    try:
        fs.create_dir(inner, recursive=True)
    except OSError as e:
        raise _refused(path, e, "writing") from None


def open_output(path: str) -> BinaryIO:
    """A new file at ``path`` for writing (replacing one there); on a store the object appears
    when the file is closed."""
    if not is_remote(path):
        return open(local_path(path), "wb")
    fs, inner = _split(path)
    try:
        return fs.open_output_stream(inner)
    except OSError as e:
        raise _refused(path, e, "writing") from None


def move(source: str, target: str) -> None:
    """``source`` renamed ``target``: atomic on a local file system; on a store a server-side copy,
    whose target appears complete or not at all, then the source deleted."""
    if not is_remote(source):
        os.replace(local_path(source), local_path(target))
        return
    fs, inner = _split(source)
    _, target_inner = _split(target)
    try:
        fs.move(inner, target_inner)
    except OSError as e:
        raise _refused(target, e, "writing") from None


def delete_file(path: str) -> None:
    """Remove the file at ``path``; nothing when it is already gone."""
    try:
        if not is_remote(path):
            os.remove(local_path(path))
            return
        fs, inner = _split(path)
        fs.delete_file(inner)
    except FileNotFoundError:
        pass
    except OSError as e:
        if is_remote(path) and "not found" in str(e).lower():
            return
        raise _refused(path, e, "deleting") from None


def delete_tree(path: str) -> None:
    """Remove the folder at ``path`` and everything below it; nothing when it is already gone."""
    if not is_remote(path):
        import shutil
        shutil.rmtree(local_path(path), ignore_errors=True)
        return
    fs, inner = _split(path)
    try:
        fs.delete_dir(inner)
    except OSError:
        pass  # gone already, or a store that has no such prefix: nothing of it is left to read


def read_head(path: str, size: int) -> bytes:
    with open_input(path) as f:
        return f.read(size)
