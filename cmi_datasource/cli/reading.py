"""Reading a capture for the ``cmi`` command exactly as Spark reads it: the same option names,
checked by ``ReadOptions``, and the same views (``engine/views.py``) planned and read in this
process, so a table and an error here are the ones ``spark.read.format("cmi")`` would give."""
from __future__ import annotations

import json
from typing import Iterator, Mapping, Optional, Sequence, Tuple

import click
import pyarrow as pa

from .. import cache
from ..engine import views
from ..engine.options import ReadOptions


def read_options(paths: Sequence[str], given: Mapping[str, str], **fixed: Optional[str]) -> ReadOptions:
    """The read options of ``load(paths)`` with the user's ``-o KEY=VALUE`` options ``given``
    and the ones the command itself decides (``fixed``: its view, its dataset argument...)."""
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
    return ReadOptions.parse(options)


def view_of(o: ReadOptions) -> views.View:
    """The view ``o`` names, each of its steps run with the disk cache ``o`` chooses (option
    cacheDir), as Spark's planning uses it."""
    chosen = views.view(o.view)
    if o.cache_dir is None:
        return chosen

    def with_cache(step):
        def run(*args):
            with cache.chosen(o.cache_dir):
                return step(*args)
        return run
    return views.View(chosen.name, with_cache(chosen.schema), with_cache(chosen.plan),
                      lambda part, options: cache.within(o.cache_dir, lambda: chosen.read(part, options)))


def view_batches(o: ReadOptions) -> Iterator[pa.RecordBatch]:
    """The view's batches, partition after partition, as Spark's tasks would read them; lazy,
    so a caller that stops early decodes no further."""
    chosen = view_of(o)
    for part in chosen.plan(o):
        yield from chosen.read(part, o)


def view_table(o: ReadOptions) -> pa.Table:
    """The whole view as one table (listings: attachments, variables, files)."""
    return pa.Table.from_batches(list(view_batches(o)), schema=view_of(o).schema(o))


def first_rows(o: ReadOptions, limit: int) -> Tuple[pa.Table, int]:
    """The first ``limit`` rows of a view, decoding only the batches that hold them, and how many
    rows the plan holds in all (the dataset view's slices know their rows; other parts count 0)."""
    chosen = view_of(o)
    schema = chosen.schema(o)
    plan = chosen.plan(o)
    planned = sum(getattr(part, "last_row", 0) - getattr(part, "first_row", 0) for part in plan)
    batches, held = [], 0
    for part in plan:
        if held >= limit:
            break
        for batch in chosen.read(part, o):
            batches.append(batch)
            held += batch.num_rows
            if held >= limit:
                break
    table = pa.Table.from_batches(batches, schema=schema).slice(0, limit)
    return table, planned


def option_pairs(pairs: Sequence[str]) -> dict:
    """``-o KEY=VALUE`` options as a dict (their names are checked later, by ReadOptions)."""
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="-o/--option")
        options[key.strip()] = value
    return options
