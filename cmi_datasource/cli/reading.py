"""Reading a capture for the ``cmi`` command exactly as Spark reads it: the same option names,
checked by ``ReadOptions``, and the same plans and parts (``engine/reading.py``), in this
process, so a table and an error here are the ones ``spark.read.format("cmi")`` would give."""
from __future__ import annotations

import json
from typing import Mapping, Optional, Sequence

import click

from ..engine.load import Load
from ..engine.options import ReadOptions


def load_of(paths: Sequence[str], given: Mapping[str, str], **fixed: Optional[str]) -> Load:
    """The load of ``load(paths)`` with the user's ``-o KEY=VALUE`` options ``given`` and the
    ones the command itself decides (``fixed``: its view, its dataset argument...)."""
    options = dict(given)
    lowered = {key.lower() for key in options}
    for key, value in fixed.items():
        if value is None:
            continue
        if key.lower() in lowered:
            raise click.UsageError(f"option {key} is set by the command itself; leave out -o {key}=...")
        options[key] = value
    # What Spark hands over for load([a, b]); one path alike, so errors name paths the same way.
    options["paths"] = json.dumps(list(paths))
    return Load(ReadOptions.parse(options))


def option_pairs(pairs: Sequence[str]) -> dict:
    """``-o KEY=VALUE`` options as a dict (their names are checked later, by ReadOptions)."""
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="-o/--option")
        options[key.strip()] = value
    return options
