"""Turning what a user passes to ``load()`` into a sorted list of capture files (local paths,
or URIs of object stores: ``storage.py``), as the read options ``pathGlobFilter``,
``recursiveFileLookup``, ``modifiedBefore``, ``modifiedAfter`` and ``ignoreMissingFiles``
choose them."""
from __future__ import annotations

import fnmatch
from datetime import datetime, timedelta, timezone
from typing import Callable, Iterable, List, Optional

from ..errors import CmiOptionError
from ..storage import PathNotFoundError, list_capture_files, modification_times

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def resolve_paths(paths: Iterable[str], name_glob: Optional[str] = None, recursive: bool = True,
                  modified_before: Optional[int] = None, modified_after: Optional[int] = None,
                  ignore_missing: bool = False) -> List[str]:
    """Every capture file the paths name (directories walked, globs matched, hidden names
    skipped), each once, in the order given: only the files whose names match ``name_glob``
    (option pathGlobFilter), and in directories only their own files when not ``recursive``
    (option recursiveFileLookup). Every file, named ones too (as Spark's file sources do), is
    kept only when it was modified before ``modified_before``
    and after ``modified_after`` (nanoseconds since the epoch; options modifiedBefore and
    modifiedAfter); a file gone by the time its time is asked is left out with
    ``ignore_missing`` (option ignoreMissingFiles), else a PathNotFoundError."""
    paths = list(paths)
    name_matches = None if name_glob is None else name_matcher(name_glob)
    found: List[str] = []
    for given in paths:
        found.extend(list_capture_files(given, recursive, name_matches))
    unique = list(dict.fromkeys(found))
    if modified_before is not None or modified_after is not None:
        unique = _modified_between(unique, modified_before, modified_after, ignore_missing)
    if not unique:
        chosen = ([f"whose names match pathGlobFilter {name_glob!r}"] if name_glob else []) + [
            f"modified {word} {instant_text(at)} ({option})" for word, at, option in (
                ("before", modified_before, "modifiedBefore"), ("after", modified_after, "modifiedAfter"))
            if at is not None]
        raise PathNotFoundError(f"no capture files under {paths!r}" + (" " + " and ".join(chosen) if chosen else ""))
    return unique


def _modified_between(files: List[str], before: Optional[int], after: Optional[int],
                      ignore_missing: bool) -> List[str]:
    """The files modified strictly before ``before`` and strictly after ``after`` (Spark's
    comparisons)."""
    kept = []
    for path, mtime in zip(files, modification_times(files)):
        if mtime is None:
            if ignore_missing:
                continue
            raise PathNotFoundError(f"path {path!r} does not exist (it was listed, then removed)",
                                    "option('ignoreMissingFiles', 'true') leaves out files removed while a read "
                                    "lists and plans them")
        if (before is None or mtime < before) and (after is None or mtime > after):
            kept.append(path)
    return kept


def instant_text(nanoseconds: int) -> str:
    """A modification time as the options take it, in UTC."""
    moment = EPOCH + timedelta(microseconds=nanoseconds // 1000)
    return moment.strftime("%Y-%m-%dT%H:%M:%S" + (".%f" if moment.microsecond else "") + "Z")


def instant(text: str, name: str) -> int:
    """Nanoseconds since the epoch of a timestamp as options modifiedBefore and modifiedAfter
    take it: ISO 8601 as Spark's file sources accept it (``2020-06-01T13:00:00``, a space for
    the ``T``, seconds' fractions, the date alone), in UTC unless it ends with an offset (``Z``,
    ``+02:00``). UTC because a Python data source does not see Spark's session time zone, and
    the machines that plan and read may each have a local zone of their own."""
    given = text.strip()
    try:
        moment = datetime.fromisoformat(given[:-1] + "+00:00" if given[-1:] in ("Z", "z") else given)
    except ValueError:
        raise CmiOptionError(f"option {name} must be a timestamp such as '2020-06-01T13:00:00' (UTC) or "
                             f"'2020-06-01T13:00:00+02:00', not {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return (moment - EPOCH) // timedelta(microseconds=1) * 1000


def name_matcher(glob: str) -> Callable[[str], bool]:
    """Whether a file name matches ``glob`` as Spark's pathGlobFilter reads it (Hadoop's glob:
    ``*``, ``?``, ``[abc]``, ``[^abc]`` and ``{a,b}`` alternatives; case matters); CmiOptionError
    naming the option for a glob that cannot match a name."""
    if not glob or "/" in glob:
        raise CmiOptionError(f"option pathGlobFilter is matched against file names: it must be a non-empty glob "
                             f"without '/', not {glob!r}")
    patterns = [p.replace("[^", "[!") for p in _alternatives(glob)]
    return lambda name: any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _alternatives(glob: str) -> List[str]:
    """``glob`` with its first ``{a,b}`` group (nested groups within it) expanded, recursively."""
    start = glob.find("{")
    if start < 0:
        if "}" in glob:
            raise CmiOptionError(f"option pathGlobFilter has a '}}' without its '{{': {glob!r}")
        return [glob]
    depth, cuts = 0, [start]
    for at in range(start, len(glob)):
        depth += {"{": 1, "}": -1}.get(glob[at], 0)
        if depth == 1 and glob[at] == ",":
            cuts.append(at)
        if depth == 0:
            cuts.append(at)
            break
    else:
        raise CmiOptionError(f"option pathGlobFilter has a '{{' without its '}}': {glob!r}")
    head, tail = glob[:start], glob[cuts[-1] + 1:]
    return [expanded for a, b in zip(cuts, cuts[1:])
            for expanded in _alternatives(head + glob[a + 1:b] + tail)]
