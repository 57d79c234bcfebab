"""A load's schema and partitions, worked out once and kept for the Python workers that ask next.

Spark plans a read of a Python data source in separate Python workers: one gives the schema when
``load()`` is called, another (a fresh process unless Spark reuses an idle one) checks the schema
again and lists the partitions when a job is planned. Each would open the capture again (file
identities, message indexes, assembly, layouts): 4.5 s for a queue export of 10,000 small dumps,
against 1.3 s to load the kept plan. So the first worker plans the partitions with the schema,
and both are kept in memory and in the disk cache (``cache.py``), under everything they depend
on: the package's version and code, every read option, and the identity of every file of the
load (a new, removed or changed file is a new key). Planning uses the disk cache the read's
option cacheDir chooses.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

import pyarrow as pa

from .. import cache
from ..errors import CmiError
from .capture import held_open
from .index import file_key
from .memo import KeptInMemory
from .options import ReadOptions
from .paths import files_to_read
from .views import view

PLAN_FORMAT = 1  # bump when what is kept changes shape


@dataclass(frozen=True)
class Planned:
    schema: pa.Schema
    parts: Optional[Tuple[Any, ...]]  # one picklable value per partition (views.py)


_MEMORY: KeptInMemory[Planned] = KeptInMemory(8)


def _key(o: ReadOptions) -> tuple:
    return ("plan", PLAN_FORMAT, repr(o), tuple(file_key(f) for f in files_to_read(o)))


def _kept(key: tuple) -> Optional[Planned]:
    found = _MEMORY.get(key)
    if found is None:
        found = cache.load(key, Planned)
        if found is None:
            return None
        _MEMORY.put(key, found)
    return found


def _keep(key: tuple, found: Planned) -> Planned:
    cache.store(key, found)
    return _MEMORY.put(key, found)


def schema(o: ReadOptions) -> pa.Schema:
    """The load's Arrow schema; its partitions are planned and kept too, unless planning them
    fails: that error is then raised where Spark asks for the partitions, as without a cache."""
    return _planned(o, plan_errors_later=True).schema


def partitions(o: ReadOptions) -> Tuple[Any, ...]:
    """The load's partitions (views.py), planned with its schema."""
    return _planned(o, plan_errors_later=False).parts


def _planned(o: ReadOptions, plan_errors_later: bool) -> Planned:
    """The kept plan of the load, or a new one (kept); with ``plan_errors_later``, a plan that
    fails gives the schema alone (parts None), kept nowhere."""
    with cache.chosen(o.cache_dir):
        key = _key(o)
        found = _kept(key)
        if found is not None:
            return found
        chosen = view(o.view)
        with held_open():
            arrow = chosen.schema(o)
            try:
                parts = tuple(chosen.plan(o))
            except CmiError:
                if plan_errors_later:
                    return Planned(arrow, None)
                raise
        return _keep(key, Planned(arrow, parts))
