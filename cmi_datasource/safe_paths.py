"""Safe extraction: writing a file attachment's content to disk under a name from the capture.

An attachment's name comes from whoever sent the message: ``../../etc/passwd``, ``/etc/cron.d/x``,
``C:\\Windows\\x``, ``\\\\server\\share\\x``, ``a\\x00b``, ``CON``. ``safe_name`` maps any name to one
plain file name, and ``write_new_file`` creates that file inside a target directory, never outside
it and never over anything already there. The rules, in order:

1. Unicode text (bytes are read as UTF-8, undecodable bytes replaced), NFC-normalised; no name
   (None) is the empty name.
2. Only the last path component is kept: the name is split at ``/`` and ``\\`` whatever the
   platform (a capture names Windows and Unix files alike), so directories, ``..``, roots, drive
   letters (``C:\\``), UNC (``\\\\server\\share\\``) and ``\\\\?\\`` prefixes all fall away. Components
   that are empty, ``.`` or ``..`` (or only dots and spaces) are skipped.
3. Each character that is a control or format character (NUL, C0, DEL, C1, bidi overrides,
   surrogates, line and paragraph separators), or one that Windows refuses in names or that
   Unicode folds into one (``< > : " / \\ | ? *``, fullwidth forms), becomes ``_``.
4. Leading and trailing spaces and trailing dots are removed (Windows drops them, so
   ``a.txt. `` would be ``a.txt`` there).
5. A Windows device name (``CON``, ``PRN``, ``AUX``, ``NUL``, ``COM0``-``COM9``, ``LPT0``-``LPT9``, with
   any extension and in any case: ``nul.txt``) gets a leading ``_``.
6. An empty result is ``unnamed``; a name longer than ``MAX_NAME_BYTES`` in UTF-8 is cut in its
   stem, keeping a short extension.

``write_new_file`` then creates the file exclusively (``O_CREAT | O_EXCL``, ``O_NOFOLLOW``, relative to
the opened directory where the platform allows): an existing file, folder or symlink (dangling
or not) of that name is never opened, followed or replaced. Names already taken, compared
without case so that the result also holds on a case-insensitive file system, are skipped:
``report.txt``, ``report (2).txt``, ``report (3).txt``... The name chosen, relative to the
directory, is returned for the caller to report. A write that fails removes its partial file.

With ``replace`` (``cmi extract --overwrite``: running an extract again), an entry of the name
chosen is replaced instead: a file, or a symlink itself (never what it points to); never a
directory, nor a name in ``keep`` (the files the same extract already wrote, so that two
attachments of one name still give ``report.txt`` and ``report (2).txt``); such names are
skipped as above. The content is written to a new hidden file in the directory first and renamed
over the old entry once complete (an atomic ``rename`` in the opened directory, which replaces a
symlink rather than following it): a failed write leaves the old file as it was.
"""
from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
import unicodedata
from typing import AbstractSet, BinaryIO, Iterator, Tuple, Union

MAX_NAME_BYTES = 200  # room below the usual 255-byte limit for " (12345)" and a file system's own needs
UNNAMED = "unnamed"
_FORBIDDEN = set('<>:"/\\|?*')
_UNSAFE_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
_DEVICE = re.compile(r"^(con|prn|aux|nul|com[0-9\u00b9\u00b2\u00b3]|lpt[0-9\u00b9\u00b2\u00b3])$", re.IGNORECASE)
_SHORT_EXTENSION = 16  # characters; a longer "extension" is part of the stem when a name is cut


def _unsafe(ch: str) -> bool:
    if unicodedata.category(ch) in _UNSAFE_CATEGORIES:
        return True
    folded = unicodedata.normalize("NFKC", ch)
    return any(c in _FORBIDDEN or unicodedata.category(c) in _UNSAFE_CATEGORIES for c in folded)


def _trim(text: str) -> str:
    return text.strip(" ").rstrip(". ")


def safe_name(name: Union[str, bytes, None]) -> str:
    """The plain file name an untrusted attachment name is written under (rules in the module
    docstring): never empty, no separator, not ``.``/``..``, no device name, at most
    ``MAX_NAME_BYTES`` UTF-8 bytes."""
    if name is None:
        name = ""
    if isinstance(name, (bytes, bytearray, memoryview)):
        name = bytes(name).decode("utf-8", errors="replace")
    name = unicodedata.normalize("NFC", str(name))
    components = [_trim(c) for c in re.split(r"[/\\]", name)]
    last = next((c for c in reversed(components) if c), "")
    cleaned = _trim("".join("_" if _unsafe(ch) else ch for ch in last))
    if not cleaned:
        return UNNAMED
    if _DEVICE.match(_trim(cleaned.split(".", 1)[0])):
        cleaned = "_" + cleaned
    return _shortened(cleaned, MAX_NAME_BYTES)


def _split_extension(name: str):
    stem, extension = os.path.splitext(name)
    if not stem or len(extension) > _SHORT_EXTENSION:
        return name, ""
    return stem, extension


def _shortened(name: str, limit: int) -> str:
    """``name`` cut in its stem (at a character boundary) to at most ``limit`` UTF-8 bytes."""
    if len(name.encode("utf-8")) <= limit:
        return name
    stem, extension = _split_extension(name)
    room = limit - len(extension.encode("utf-8"))
    cut = stem.encode("utf-8")[:room].decode("utf-8", errors="ignore")
    return (_trim(cut) or "_") + extension


def _candidates(name: str) -> Iterator[str]:
    """``name``, then ``stem (2).ext``, ``stem (3).ext``... each within ``MAX_NAME_BYTES``."""
    yield name
    stem, extension = _split_extension(name)
    for n in range(2, 100_000):
        suffix = f" ({n})"
        room = MAX_NAME_BYTES - len(suffix.encode("utf-8")) - len(extension.encode("utf-8"))
        cut = stem.encode("utf-8")[:room].decode("utf-8", errors="ignore")
        yield cut + suffix + extension


def _key(name: str) -> str:
    """Names that are the same file on a case-insensitive file system have the same key."""
    return unicodedata.normalize("NFC", name).casefold()


def write_new_file(directory: Union[str, os.PathLike], name: Union[str, bytes, None], content: bytes,
                   replace: bool = False, keep: AbstractSet[str] = frozenset()) -> str:
    """Write ``content`` to a new file in ``directory`` (made when missing) named after the
    untrusted attachment ``name``; returns the file name chosen (``safe_name``, or with `` (n)``
    when that is taken), relative to ``directory``.

    Never writes outside ``directory``, never opens or replaces an existing entry of it (a symlink
    included), unless ``replace`` (then a file or symlink of the name chosen is replaced, as the
    module docstring says; never one named in ``keep``). Raises OSError when the file system
    refuses (no space, no permission)."""
    with open_new_file(directory, name, replace, keep) as (chosen, out):
        out.write(content)
    return chosen


_CREATE = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
           | getattr(os, "O_CLOEXEC", 0))
_HIDDEN_PREFIX = ".cmi-partial-"  # a file being written for ``replace``, renamed over the old one when complete


class _Folder:
    """The target directory, opened once: entries are made, renamed and removed relative to it
    where the platform allows (nothing between it and the entry can be swapped for a symlink)."""

    def __init__(self, directory: str):
        self.directory = directory
        relative = os.open in os.supports_dir_fd
        self.fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)) if relative else None

    def _at(self, name: str) -> str:
        return name if self.fd is not None else os.path.join(self.directory, name)

    def create(self, name: str) -> int:
        """A new file's descriptor; FileExistsError when any entry has that name (a symlink included)."""
        return os.open(self._at(name), _CREATE, 0o644, dir_fd=self.fd)

    def is_directory(self, name: str) -> bool:
        try:
            return stat.S_ISDIR(os.stat(self._at(name), dir_fd=self.fd, follow_symlinks=False).st_mode)
        except FileNotFoundError:
            return False

    def rename_over(self, source: str, target: str) -> None:
        os.replace(self._at(source), self._at(target), src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def remove(self, name: str) -> None:
        try:
            os.unlink(self._at(name), dir_fd=self.fd)
        except OSError:
            pass

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)


@contextlib.contextmanager
def _written(folder: _Folder, name: str, fd: int) -> Iterator[BinaryIO]:
    """The file ``fd`` (entry ``name``) open for writing; removed when the block raises."""
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
    except BaseException:
        folder.remove(name)
        raise


@contextlib.contextmanager
def _replacing(folder: _Folder, target: str) -> Iterator[BinaryIO]:
    """A new hidden file, renamed over ``target`` once the block completes."""
    while True:
        hidden = f"{_HIDDEN_PREFIX}{secrets.token_hex(8)}"
        try:
            fd = folder.create(hidden)
            break
        except FileExistsError:
            continue
    with _written(folder, hidden, fd) as out:
        yield out
    try:
        folder.rename_over(hidden, target)
    except BaseException:
        folder.remove(hidden)
        raise


@contextlib.contextmanager
def open_new_file(directory: Union[str, os.PathLike], name: Union[str, bytes, None], replace: bool = False,
                  keep: AbstractSet[str] = frozenset()) -> Iterator[Tuple[str, BinaryIO]]:
    """``write_new_file`` for content written piece by piece: yields the name chosen and the new
    file, open for writing; the file is removed when the block raises (no partial file stays,
    and with ``replace`` the old file stays as it was)."""
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    wanted = safe_name(name)
    folder = _Folder(directory)
    try:
        entries = set(os.listdir(directory))
        taken = {_key(n) for n in entries}
        for candidate in _candidates(wanted):
            if replace and candidate in entries and candidate not in keep and not folder.is_directory(candidate):
                with _replacing(folder, candidate) as out:
                    yield candidate, out
                return
            if _key(candidate) in taken:
                continue
            try:
                fd = folder.create(candidate)
            except FileExistsError:  # made since the listing: another writer got there first
                taken.add(_key(candidate))
                continue
            with _written(folder, candidate, fd) as out:
                yield candidate, out
            return
        raise FileExistsError(f"no free name for {wanted!r} in {directory}")
    finally:
        folder.close()
