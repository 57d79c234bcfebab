"""Turning what a user passes to ``load()`` into a sorted list of capture files (local paths,
or URIs of object stores: ``storage.py``), as the read option ``recursiveFileLookup`` chooses
them."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterable, List

from ..storage import PathNotFoundError, list_capture_files

if TYPE_CHECKING:
    from .options import ReadOptions


def resolve_paths(paths: Iterable[str], recursive: bool = True) -> List[str]:
    """Every capture file the paths name (directories walked, globs matched, hidden names
    skipped), each once, in the order given; of a directory only its own files when not
    ``recursive`` (option recursiveFileLookup)."""
    paths = list(paths)
    found: List[str] = []
    for given in paths:
        found.extend(list_capture_files(given, recursive))
    unique = list(dict.fromkeys(found))
    if not unique:
        raise PathNotFoundError(f"no capture files under {paths!r}")
    return unique


def file_filters(o: "ReadOptions") -> Dict[str, Any]:
    """The read options that choose the files read under a load's paths, as ``resolve_paths``
    takes them (the one place that knows which options those are)."""
    return {"recursive": o.recursive_file_lookup}


def files_to_read(o: "ReadOptions") -> List[str]:
    """The capture files of a read: its paths, resolved with its file filters."""
    return resolve_paths(o.paths, **file_filters(o))
