"""Turning what a user passes to ``load()`` into a sorted list of capture files (local paths,
or URIs of object stores: ``storage.py``)."""
from __future__ import annotations

from typing import Iterable, List

from ..storage import PathNotFoundError, list_capture_files


def resolve_paths(paths: Iterable[str]) -> List[str]:
    """Every capture file the paths name (directories walked, globs matched, hidden names
    skipped), each once, in the order given."""
    paths = list(paths)
    found: List[str] = []
    for given in paths:
        found.extend(list_capture_files(given))
    unique = list(dict.fromkeys(found))
    if not unique:
        raise PathNotFoundError(f"no capture files under {paths!r}")
    return unique
