"""Turning what a user passes to ``load()`` into a sorted list of capture files."""
from __future__ import annotations

import glob
import os
from typing import Iterable, List

from ..errors import CmiOptionError


def _visible(name: str) -> bool:
    # Spark's file sources skip names starting with "." or "_" (_SUCCESS, .crc files...).
    return not (name.startswith(".") or name.startswith("_"))


def resolve_paths(paths: Iterable[str]) -> List[str]:
    found: List[str] = []
    for given in paths:
        given = given[len("file:"):] if given.startswith("file:") else given
        matches = sorted(glob.glob(given)) if glob.has_magic(given) else [given]
        if not matches:
            raise CmiOptionError(f"no file matches {given!r}")
        for path in matches:
            if os.path.isdir(path):
                for root, dirs, files in os.walk(path):
                    dirs[:] = sorted(d for d in dirs if _visible(d))
                    found.extend(os.path.join(root, f) for f in sorted(files) if _visible(f))
            elif os.path.isfile(path):
                found.append(path)
            else:
                raise CmiOptionError(f"path {path!r} does not exist")
    unique = list(dict.fromkeys(os.path.abspath(p) for p in found))
    if not unique:
        raise CmiOptionError(f"no capture files under {list(paths)!r}")
    return unique
