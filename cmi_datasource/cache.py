"""The disk cache: message indexes and plans kept for the next Python worker, in one private directory.

Where it lives, the first that applies:

1. the read option ``cacheDir``: an absolute directory, or ``off`` (also ``none``, ``0``) for no
   disk cache;
2. the environment variable ``CMI_DATASOURCE_CACHE``, with the same values;
3. ``$XDG_CACHE_HOME/cmi-datasource``, else ``~/.cache/cmi-datasource`` when the home directory
   is this user's; and where that one cannot be made or used, ``<temp dir>/cmi-datasource-<uid>``.

Trust. On a shared host (a Spark executor, a login node) anyone may create a folder in the
temporary directory before us, and what the cache holds is unpickled, which runs code. So the
directory is made with mode 0700 and, before each use, opened without following a symbolic link
and checked: a directory, owned by this user, with no permission bit for group or others. One
that fails is not used (reads miss, writes do nothing) and a warning says why, once per process:
the cache never fails a read. Everything after the check goes through the opened directory
(``openat``, ``renameat``...), so it cannot be swapped between the check and the use.

Entries are pickles, because what is kept (message indexes, plans holding Arrow schemas and each
view's partition values) are rich Python objects that no data-only format holds without a codec
of its own per class. Since unpickling runs whatever code the bytes name, nothing is unpickled
unless it is authenticated: an entry carries an HMAC-SHA256 of its name and its pickle under a
key of 32 random bytes kept in the directory (file ``key``, mode 0600, made once and never
replaced, its owner and mode checked like the directory's). A file planted, altered or renamed by
anyone without the key is rejected unread, and removed.

An entry is written to a temporary file of its own in the directory (``O_EXCL``, mode 0600) and
renamed over its name: a reader sees the old entry or the new one, never part of one. Its name
is a hash of its key and of the code that wrote it (the package version and a fingerprint of its
modules), so an upgrade or an edited checkout is never handed what older classes pickled. The
newest ``CACHE_FILES_KEPT`` entries within ``CACHE_BYTES_KEPT`` are kept.
"""
from __future__ import annotations

import contextlib
import contextvars
import errno
import hashlib
import hmac
import logging
import os
import pickle
import secrets
import stat
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, List, Optional, Tuple, TypeVar

from .version import __version__

ENVIRONMENT_VARIABLE = "CMI_DATASOURCE_CACHE"
OPTION = "cacheDir"
OFF = "off"
OFF_VALUES = ("off", "none", "0")
NAME = "cmi-datasource"
KEY_FILE = "key"
KEY_BYTES = 32
ENTRY_SUFFIX = ".entry"
TEMP_SUFFIX = ".tmp"
MAGIC = b"cmi-datasource cache 1\n"
TAG_BYTES = hashlib.sha256().digest_size
PRIVATE_MODE = 0o700

# What the cache keeps, the most recently written first: a queue export of 10,000 small dumps
# must fit (or the next planning step rescans them all), and big dumps' indexes (about 400 bytes
# a message) must not fill the disk.
CACHE_FILES_KEPT = 20_000
CACHE_BYTES_KEPT = 2 << 30
# Pruning lists and stats the whole cache: done once per this many stores, it costs a few stats
# a store instead of thousands (once per 512 stores, a full cache cost 10,000 new indexes 2.9 s).
STORES_PER_PRUNE = 4096
# A process's first store prunes only when no process has within this time (the mtime of
# PRUNED_MARKER): a prune of a full cache (20,000 entries) takes 0.19 s, which the first planning
# of every new Spark Python worker paid on top of building its index.
PRUNE_INTERVAL_SECONDS = 600
PRUNED_MARKER = "pruned"
# A temporary file this old is a dead writer's, not one being written.
STALE_TEMP_SECONDS = 3600

_log = logging.getLogger(__name__)
_WARNED: set = set()
_stores_since_prune = 0
_stored_before = False  # whether this process has stored an entry
# POSIX: operations relative to an opened directory, owners and modes. Elsewhere (Windows) the
# per-user directories are protected by their ACLs: paths are used, owners and modes not checked.
_AT = hasattr(os, "O_DIRECTORY") and hasattr(os, "getuid") and os.open in os.supports_dir_fd \
    and os.rename in os.supports_dir_fd
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_BINARY = getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)

T = TypeVar("T")


class NotPrivate(Exception):
    """A directory (or the cache's key file) that others could have made, written or may read."""


# -- where ------------------------------------------------------------------------------------

def setting_of(value: str, source: str) -> str:
    """``value`` of option cacheDir or of CMI_DATASOURCE_CACHE as the cache takes it: ``OFF``, or
    an absolute directory (``~`` expanded, normalised). ValueError naming ``source`` otherwise:
    a relative path would mean another folder in each Spark worker."""
    text = str(value).strip()
    if text.lower() in OFF_VALUES:
        return OFF
    path = os.path.expanduser(text)
    if not text or not os.path.isabs(path):
        raise ValueError(f"{source} must be an absolute directory, or off for no disk cache, not {value!r}")
    return os.path.normpath(path)


_CHOSEN: "contextvars.ContextVar[Optional[str]]" = contextvars.ContextVar("cmi_datasource_cache", default=None)


@contextlib.contextmanager
def chosen(setting: Optional[str]) -> Iterator[None]:
    """Within the block, the cache is the one a read's option cacheDir chose (``setting_of``'s
    value); None (the option not given) leaves it to the environment variable and the default."""
    if setting is None:
        yield
        return
    token = _CHOSEN.set(setting)
    try:
        yield
    finally:
        _CHOSEN.reset(token)


def within(setting: Optional[str], items: Callable[[], Iterable[T]]) -> Iterator[T]:
    """``items()`` iterated with ``chosen(setting)`` in force while it is called and while each
    item is made (a view may open its capture lazily), and not while the caller holds an item."""
    with chosen(setting):
        iterator = iter(items())
    while True:
        with chosen(setting):
            try:
                item = next(iterator)
            except StopIteration:
                return
        yield item


@dataclass(frozen=True)
class Location:
    directories: Tuple[str, ...]  # the candidates in order; () when the cache is off
    source: str  # what chose them: the option, the environment variable, or "default"


def location() -> Location:
    """Where the cache is, as the option in force (``chosen``), the environment and the home
    directory say; nothing is made or checked."""
    given, source = _CHOSEN.get(), f"option {OPTION}"
    if given is None:
        given, source = os.environ.get(ENVIRONMENT_VARIABLE, "").strip() or None, ENVIRONMENT_VARIABLE
    if given is None:
        return Location(default_directories(), "default")
    try:
        setting = setting_of(given, source)
    except ValueError as e:
        _warn_once(f"{e}; no disk cache is used")
        return Location((), source)
    return Location(() if setting == OFF else (setting,), source)


def default_directories() -> Tuple[str, ...]:
    temp = user_temp_directory()
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):  # the XDG spec: a relative value is to be ignored
        return os.path.join(xdg, NAME), temp
    home = os.path.expanduser("~")
    try:
        home_stat = os.stat(home)
        usable = os.path.isabs(home) and stat.S_ISDIR(home_stat.st_mode) and (
            not _AT or home_stat.st_uid == os.getuid())
    except OSError:
        usable = False
    return (os.path.join(home, ".cache", NAME), temp) if usable else (temp,)


def user_temp_directory() -> str:
    """This user's own folder in the temporary directory (the name tells users apart; its
    owner and mode, checked at each use, tell whether it is really ours)."""
    return os.path.join(tempfile.gettempdir(), f"{NAME}-{os.getuid()}" if hasattr(os, "getuid") else NAME)


# -- a private directory ----------------------------------------------------------------------

class _Directory:
    """An opened, checked directory: files named relative to it (``dir_fd`` where the platform
    has it, so a directory swapped after the check is not the one used)."""

    def __init__(self, path: str, fd: Optional[int]):
        self.path, self.fd = path, fd

    def _at(self, name: str):
        return (os.path.join(self.path, name), {}) if self.fd is None else (name, {"dir_fd": self.fd})

    def open(self, name: str, flags: int, mode: int = 0o600) -> int:
        where, at = self._at(name)
        return os.open(where, flags | _NOFOLLOW | _BINARY, mode, **at)

    def replace(self, source: str, target: str) -> None:
        if self.fd is None:
            os.replace(os.path.join(self.path, source), os.path.join(self.path, target))
        else:
            os.replace(source, target, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def link(self, source: str, target: str) -> None:
        if self.fd is None:
            os.link(os.path.join(self.path, source), os.path.join(self.path, target))
        else:
            os.link(source, target, src_dir_fd=self.fd, dst_dir_fd=self.fd, follow_symlinks=False)

    def modified(self, name: str) -> Optional[float]:
        """The mtime of the entry (not following a link); None when there is none."""
        where, at = self._at(name)
        try:
            return os.stat(where, follow_symlinks=False, **at).st_mtime
        except OSError:
            return None

    def touch(self, name: str) -> None:
        """Create the file or set its mtime to now."""
        fd = self.open(name, os.O_WRONLY | os.O_CREAT)
        try:
            os.utime(fd)
        finally:
            os.close(fd)

    def unlink(self, name: str) -> None:
        where, at = self._at(name)
        os.unlink(where, **at)

    def files(self) -> List[Tuple[str, os.stat_result]]:
        """Name and stat (not following links) of each entry."""
        found = []
        with os.scandir(self.path if self.fd is None else self.fd) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):  # removed meanwhile
                    found.append((entry.name, entry.stat(follow_symlinks=False)))
        return found

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> "_Directory":
        return self

    def __exit__(self, *_) -> None:
        self.close()


def _not_ours(found: os.stat_result, regular: bool) -> Optional[str]:
    """Why a directory (or, ``regular``, a file) is not private to this user; None when it is."""
    if regular and not stat.S_ISREG(found.st_mode):
        return "is no regular file"
    if not regular and not stat.S_ISDIR(found.st_mode):
        return "is no directory"
    if found.st_uid != os.getuid():
        return f"belongs to uid {found.st_uid}, not to this user (uid {os.getuid()})"
    if found.st_mode & 0o077:
        return f"has mode {stat.S_IMODE(found.st_mode):04o}: group or others may open it"
    return None


def open_private(path: str, create: bool = True) -> _Directory:
    """``path``, made first when it is missing and ``create`` (mode 0700 whatever the umask; its
    parents as the umask says), opened and checked. NotPrivate when it is a symbolic link, no
    directory, not this user's or open to group or others; FileNotFoundError when it is missing
    and not ``create``; another OSError when it cannot be made or opened."""
    made = False
    if create:
        for attempt in range(2):
            try:
                os.mkdir(path, PRIVATE_MODE)
                made = True
            except FileExistsError:
                pass
            except FileNotFoundError:
                if attempt:
                    raise
                os.makedirs(os.path.dirname(path), exist_ok=True)
                continue
            break
    if not _AT:
        if os.path.islink(path) or not os.path.isdir(path):
            if not os.path.lexists(path):
                raise FileNotFoundError(errno.ENOENT, "no such directory", path)
            raise NotPrivate(f"{path} is a symbolic link or no directory")
        return _Directory(path, None)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise NotPrivate(f"{path} is a symbolic link or no directory") from None
        raise
    try:
        found = os.fstat(fd)
        if made and found.st_uid == os.getuid() and stat.S_IMODE(found.st_mode) != PRIVATE_MODE:
            os.fchmod(fd, PRIVATE_MODE)  # a umask such as 0277 took bits mkdir asked for
            found = os.fstat(fd)
        problem = _not_ours(found, regular=False)
        if problem is not None:
            raise NotPrivate(f"{path} {problem}")
    except BaseException:
        os.close(fd)
        raise
    return _Directory(path, fd)


def private_temp_directory(name: str) -> str:
    """``name`` in this user's private folder of the temporary directory (made and checked as
    the cache's is), for what must not be staged where others can plant or read it: a live
    send's spills. Where that folder is not private (someone else made it), a new private one
    of its own (``tempfile.mkdtemp``), with a warning."""
    base = user_temp_directory()
    try:
        open_private(base).close()
    except OSError as e:
        _warn_once(f"cannot use {base}: {e.strerror or e}; staging in a new temporary directory")
        return tempfile.mkdtemp(prefix=f"{NAME}-{name}-")
    except NotPrivate as e:
        _warn_once(f"{e}: someone else may have made it; staging in a new temporary directory")
        return tempfile.mkdtemp(prefix=f"{NAME}-{name}-")
    return os.path.join(base, name)


def _warn_once(text: str) -> None:
    if text not in _WARNED:
        _WARNED.add(text)
        _log.warning("cmi-datasource cache: %s", text)


def _opened(create: bool = True) -> Optional[_Directory]:
    """The cache directory, opened and checked; None when the cache is off or no candidate is
    usable (each one that is not private is warned about, once)."""
    where = location()
    for path in where.directories:
        fallback = where.source == "default" and path != where.directories[-1]
        try:
            return open_private(path, create)
        except NotPrivate as e:
            _warn_once(f"the cache directory {e}; it is not used (remove it, or choose another with "
                       f"option {OPTION} or {ENVIRONMENT_VARIABLE})")
        except FileNotFoundError:
            if not create:
                return None
        except OSError as e:
            if not fallback:  # a read-only home is no reason to warn: the temp dir serves
                _warn_once(f"cannot use the cache directory {path}: {e.strerror or e}")
    return None


# -- entries ------------------------------------------------------------------------------------

_CODE_FINGERPRINT: Optional[str] = None


def code_fingerprint() -> str:
    """What tells this package's code from other versions of it: the size and mtime of each of
    its modules. Entries are pickled objects of its classes; an upgrade, or an edit to an
    installed checkout, must not be handed what older code made."""
    global _CODE_FINGERPRINT
    if _CODE_FINGERPRINT is None:
        package = os.path.dirname(os.path.abspath(__file__))
        stats = []
        for folder, _, names in os.walk(package):
            for name in sorted(names):
                if name.endswith(".py"):
                    found = os.stat(os.path.join(folder, name))
                    stats.append((os.path.relpath(os.path.join(folder, name), package), found.st_size,
                                  found.st_mtime_ns))
        _CODE_FINGERPRINT = hashlib.sha256(repr(sorted(stats)).encode()).hexdigest()[:16]
    return _CODE_FINGERPRINT


def entry_name(key: tuple) -> str:
    """The file name of ``key``'s entry (``key``: a tuple whose repr says everything the entry
    depends on; the code that writes it is added here)."""
    return hashlib.sha256(repr((__version__, code_fingerprint(), key)).encode()).hexdigest() + ENTRY_SUFFIX


def _mac(secret: bytes, name: str) -> "hmac.HMAC":
    """What authenticates the entry ``name``: its tag is this MAC of the pickle that follows it."""
    return hmac.new(secret, name.encode() + b"\0", hashlib.sha256)


# Entries are written and read a piece at a time: a 20M-row dump's index pickles to 46 MB, which
# held whole beside the index (or the index beside the file read whole) was the high-water mark
# of the process that planned or loaded it.
_PIECE_BYTES = 1 << 20


class _Tagging:
    """A file to pickle into that feeds what it is given to the entry's MAC on the way."""

    def __init__(self, f: Any, mac: "hmac.HMAC"):
        self.f, self.mac = f, mac

    def write(self, piece: Any) -> int:
        self.mac.update(piece)
        return self.f.write(piece)


def _secret(directory: _Directory) -> bytes:
    """The directory's key, made on first use; NotPrivate when the file there is not ours."""
    for _ in range(2):
        try:
            fd = directory.open(KEY_FILE, os.O_RDONLY)
        except FileNotFoundError:
            _make_secret(directory)
            continue
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.EMLINK):
                raise NotPrivate(f"{os.path.join(directory.path, KEY_FILE)} is a symbolic link") from None
            raise
        with os.fdopen(fd, "rb") as f:
            problem = _not_ours(os.fstat(f.fileno()), regular=True) if _AT else None
            secret = f.read(KEY_BYTES + 1)
        if problem is None and len(secret) != KEY_BYTES:
            problem = f"holds {len(secret)} bytes, not a key of {KEY_BYTES}"
        if problem is not None:
            raise NotPrivate(f"{os.path.join(directory.path, KEY_FILE)} {problem}")
        return secret
    raise FileNotFoundError(errno.ENOENT, "the cache's key vanished", os.path.join(directory.path, KEY_FILE))


def _make_secret(directory: _Directory) -> None:
    """A new key, written whole under a temporary name and linked to its name, so a process
    reading it never sees part of it and two making one at once keep the first."""
    key = secrets.token_bytes(KEY_BYTES)
    temp = _write_temporary(directory, KEY_FILE, lambda f: f.write(key))
    try:
        directory.link(temp, KEY_FILE)
    except FileExistsError:
        pass
    except OSError:  # a file system without hard links: created exclusively in place
        with contextlib.suppress(FileExistsError):
            fd = directory.open(KEY_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_bytes(KEY_BYTES))
    finally:
        with contextlib.suppress(OSError):
            directory.unlink(temp)


def _write_temporary(directory: _Directory, name: str, write: Callable[[Any], Any]) -> str:
    """A new file (``O_EXCL``, mode 0600) beside ``name`` holding what ``write(file)`` writes; its
    name. A write that fails removes it."""
    temp = f".{name}.{secrets.token_hex(8)}{TEMP_SUFFIX}"
    fd = directory.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
    except BaseException:
        with contextlib.suppress(OSError):
            directory.unlink(temp)
        raise
    return temp


def load(key: tuple, kind: type) -> Any:
    """The ``kind`` that ``store`` kept under ``key``; None when there is none, it does not
    authenticate, it is no ``kind``, or the cache is off or not private."""
    directory = _opened()
    if directory is None:
        return None
    with directory:
        name = entry_name(key)
        try:
            secret = _secret(directory)
            fd = directory.open(name, os.O_RDONLY)
            with os.fdopen(fd, "rb") as f:
                if not _authentic(f, _mac(secret, name)):
                    with contextlib.suppress(OSError):  # not ours (or made under another key): never read
                        directory.unlink(name)
                    return None
                # Read again from the same open file, past its tag: an entry is never rewritten in
                # place (``store`` renames a new file over it), so these are the bytes authenticated.
                f.seek(len(MAGIC) + TAG_BYTES)
                try:
                    found = pickle.load(f)
                except Exception:  # ours, but unreadable by this code: a miss, as a missing entry is
                    return None
        except NotPrivate as e:
            _warn_once(f"{e}; the cache is not used")
            return None
        except OSError:
            return None
    return found if isinstance(found, kind) else None


def _authentic(f: Any, mac: "hmac.HMAC") -> bool:
    """Whether the open entry ``f`` is a regular file of this cache whose tag is ``mac`` of the
    rest, read a piece at a time."""
    if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
        return False
    head = f.read(len(MAGIC) + TAG_BYTES)
    if len(head) < len(MAGIC) + TAG_BYTES or not head.startswith(MAGIC):
        return False
    for piece in iter(lambda: f.read(_PIECE_BYTES), b""):
        mac.update(piece)
    return hmac.compare_digest(mac.digest(), head[len(MAGIC):])


def store(key: tuple, value: Any) -> None:
    """Keep ``value`` under ``key``, atomically (readers see the old entry or the new one). Best
    effort: a cache off, not private, read-only or full only costs the work again next time."""
    global _stores_since_prune
    directory = _opened()
    if directory is None:
        return
    with directory:
        name = entry_name(key)
        try:
            secret = _secret(directory)
            temp = _write_temporary(directory, name, lambda f: _write_entry(f, _mac(secret, name), value))
            try:
                directory.replace(temp, name)
            except BaseException:
                with contextlib.suppress(OSError):
                    directory.unlink(temp)
                raise
            _stores_since_prune += 1
            if _prune_due(directory):
                _stores_since_prune = 0
                _prune(directory)
                directory.touch(PRUNED_MARKER)
        except NotPrivate as e:
            _warn_once(f"{e}; the cache is not used")
        except OSError:
            pass


def _write_entry(f: Any, mac: "hmac.HMAC", value: Any) -> None:
    """MAGIC, the tag, then ``value`` pickled a frame at a time (the tag written last, in the
    room left for it)."""
    f.write(MAGIC + bytes(TAG_BYTES))
    pickle.dump(value, _Tagging(f, mac), protocol=pickle.HIGHEST_PROTOCOL)
    f.seek(len(MAGIC))
    f.write(mac.digest())


def _prune_due(directory: _Directory) -> bool:
    """Whether this store prunes: every STORES_PER_PRUNE stores of the process, and at its first
    unless the cache was pruned less than PRUNE_INTERVAL_SECONDS ago."""
    global _stored_before
    first, _stored_before = not _stored_before, True
    if _stores_since_prune >= STORES_PER_PRUNE:
        return True
    if not first:
        return False
    pruned = directory.modified(PRUNED_MARKER)
    return pruned is None or not 0 <= time.time() - pruned < PRUNE_INTERVAL_SECONDS


def _prune(directory: _Directory) -> None:
    """Keep the most recently written entries only, within CACHE_FILES_KEPT and CACHE_BYTES_KEPT
    (changed files leave stale ones behind), and remove dead writers' temporary files."""
    entries, now = [], time.time()
    for name, found in directory.files():
        if name.endswith(ENTRY_SUFFIX):
            entries.append((found.st_mtime, found.st_size, name))
        elif name.endswith(TEMP_SUFFIX) and now - found.st_mtime > STALE_TEMP_SECONDS:
            with contextlib.suppress(OSError):
                directory.unlink(name)
    entries.sort(reverse=True)
    held = 0
    for kept, (_, size, name) in enumerate(entries):
        held += size
        if kept >= CACHE_FILES_KEPT or held > CACHE_BYTES_KEPT:
            with contextlib.suppress(OSError):
                directory.unlink(name)


def prune() -> None:
    """``_prune`` the cache in force now (nothing when it is off or not private)."""
    directory = _opened(create=False)
    if directory is not None:
        with directory:
            _prune(directory)
            directory.touch(PRUNED_MARKER)


# -- looking and clearing (cmi cache info / clear) ---------------------------------------------

@dataclass(frozen=True)
class Survey:
    """What one candidate directory is: ``state`` "ready", "missing" or "not private", and why."""

    directory: str
    state: str
    problem: Optional[str] = None
    entries: int = 0
    bytes: int = 0


def survey() -> Tuple[Location, List[Survey]]:
    """Each candidate directory of the cache in force, made or changed in no way."""
    where = location()
    found = []
    for path in where.directories:
        try:
            with open_private(path, create=False) as directory:
                held = [(n, s) for n, s in directory.files() if n.endswith(ENTRY_SUFFIX)]
                found.append(Survey(path, "ready", None, len(held), sum(s.st_size for _, s in held)))
        except NotPrivate as e:
            found.append(Survey(path, "not private", str(e)))
        except FileNotFoundError:
            found.append(Survey(path, "missing"))
        except OSError as e:
            found.append(Survey(path, "not private", f"{path}: {e.strerror or e}"))
    return where, found


def in_use(surveyed: List[Survey]) -> Optional[Survey]:
    """The candidate reads use: the first ready one, or the first missing one (made at the first
    store)."""
    return next((s for s in surveyed if s.state in ("ready", "missing")), None)


@dataclass(frozen=True)
class Cleared:
    entries: int  # removed
    bytes: int
    directories: Tuple[str, ...]  # the ones emptied
    skipped: Tuple[Survey, ...]  # left alone: not private


def clear() -> Cleared:
    """Remove every entry (and temporary file) of each private candidate directory of the cache
    in force; the key stays."""
    removed = freed = 0
    for candidate in (found := survey()[1]):
        if candidate.state != "ready":
            continue
        with open_private(candidate.directory, create=False) as directory:
            for name, held in directory.files():
                if name.endswith((ENTRY_SUFFIX, TEMP_SUFFIX)):
                    with contextlib.suppress(FileNotFoundError):  # another clear, or a prune
                        directory.unlink(name)
                        if name.endswith(ENTRY_SUFFIX):
                            removed, freed = removed + 1, freed + held.st_size
    return Cleared(removed, freed, tuple(s.directory for s in found if s.state == "ready"),
                   tuple(s for s in found if s.state == "not private"))
