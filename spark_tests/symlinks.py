"""A target directory holding symlinks that lead out of it, for the tests that writes never follow them."""
from __future__ import annotations

import os
from typing import Mapping, Tuple

VICTIM = b"untouched"


def links_out_of(root, links: Mapping[str, str]) -> Tuple:
    """``root/out`` with a symlink per ``links`` entry (its name -> a name in ``root/outside``,
    "" for the folder itself), and ``root/outside`` holding ``victim`` (content ``VICTIM``)."""
    target, outside = root / "out", root / "outside"
    target.mkdir()
    outside.mkdir()
    (outside / "victim").write_bytes(VICTIM)
    for name, pointed in links.items():
        os.symlink(outside / pointed if pointed else outside, target / name)
    return target, outside
