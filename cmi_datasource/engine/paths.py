"""Turning what a user passes to ``load()`` into a sorted list of capture files (local paths,
or URIs of object stores: ``storage.py``), as the read options ``pathGlobFilter`` and
``recursiveFileLookup`` choose them."""
from __future__ import annotations

import fnmatch
from typing import Callable, Iterable, List, Optional

from ..errors import CmiOptionError
from ..storage import PathNotFoundError, list_capture_files


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
