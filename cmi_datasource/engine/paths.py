"""Turning what a user passes to ``load()`` into a sorted list of capture files (local paths,
or URIs of object stores: ``storage.py``), as the read options ``pathGlobFilter`` and
``recursiveFileLookup`` choose them."""
from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional

from ..errors import CmiOptionError
from ..storage import PathNotFoundError, list_capture_files

if TYPE_CHECKING:
    from .options import ReadOptions


def resolve_paths(paths: Iterable[str], name_glob: Optional[str] = None, recursive: bool = True) -> List[str]:
    """Every capture file the paths name (directories walked, globs matched, hidden names
    skipped), each once, in the order given. In directories only the files whose names match
    ``name_glob`` (option pathGlobFilter), and only their own files when not ``recursive``
    (option recursiveFileLookup); a file named is read as named."""
    paths = list(paths)
    name_matches = None if name_glob is None else name_matcher(name_glob)
    found: List[str] = []
    for given in paths:
        found.extend(list_capture_files(given, recursive, name_matches))
    unique = list(dict.fromkeys(found))
    if not unique:
        raise PathNotFoundError(f"no capture files under {paths!r}"
                                + (f" whose names match pathGlobFilter {name_glob!r}" if name_glob else ""))
    return unique


def file_filters(o: "ReadOptions") -> Dict[str, Any]:
    """The read options that choose the files read under a load's paths, as ``resolve_paths``
    takes them (the one place that knows which options those are)."""
    return {"name_glob": o.path_glob_filter, "recursive": o.recursive_file_lookup}


def files_to_read(o: "ReadOptions") -> List[str]:
    """The capture files of a read: its paths, resolved with its file filters."""
    return resolve_paths(o.paths, **file_filters(o))


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
