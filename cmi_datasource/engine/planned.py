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

import gc
from dataclasses import dataclass
from typing import Optional, Tuple

import pyarrow as pa

from .. import cache
from ..errors import CmiError
from .capture import held_open
from .index import file_key
from .load import Load
from .memo import KeptInMemory, collector_paused, return_freed_memory
from .plan import NoRows, Part, planned_message_count
from .views import view

PLAN_FORMAT = 3  # bump when what is kept changes shape


@dataclass(frozen=True)
class Plan:
    """A load's schema and partitions, and what they hold."""

    schema: pa.Schema
    parts: Optional[Tuple[Part, ...]]  # None: planning them failed (raised where they are asked for)
    attachments: Tuple[str, ...] = ()  # the attachments the view reads (the dataset view: those chosen)

    @property
    def rows(self) -> Optional[int]:
        """The rows the parts hold (a dataset's observations, PERMISSIVE's reports not counted),
        when planning knows them."""
        counts = [part.rows for part in self.parts or ()]
        return None if None in counts else sum(n or 0 for n in counts)


_MEMORY: KeptInMemory[Plan] = KeptInMemory(8)


def _key(load: Load) -> tuple:
    o = load.options
    return ("plan", PLAN_FORMAT, repr(o), tuple(file_key(f) for f in o.files()))


def _kept(key: tuple) -> Optional[Plan]:
    found = _MEMORY.get(key)
    if found is None:
        found = cache.load(key, Plan)
        if found is None:
            return None
        _MEMORY.put(key, found)
    return found


def _keep(key: tuple, found: Plan) -> Plan:
    cache.store(key, found)
    return _MEMORY.put(key, found)


def schema(load: Load) -> pa.Schema:
    """The load's Arrow schema; its partitions are planned and kept too, unless planning them
    fails: that error is then raised where the partitions are asked for, as without a cache."""
    return planned(load, plan_errors_later=True).schema


def planned(load: Load, plan_errors_later: bool = False) -> Plan:
    """The kept plan of the load, or a new one (kept); with ``plan_errors_later``, a plan that
    fails gives the schema alone (parts None), kept nowhere. A load of a capture given in memory
    is planned afresh."""
    if load.given is not None:
        return _plan(load, plan_errors_later)
    with cache.chosen(load.options.cache_dir):
        key = _key(load)
        found = _kept(key)
        if found is not None:
            return found
        with held_open(), collector_paused():
            made = _plan(load, plan_errors_later)
        if made.parts is None:
            return made
        if sum(map(planned_message_count, made.parts)) >= MEMORY_RETURNED_FROM_MESSAGES:
            gc.collect()  # the reference cycles planning made with the collector paused
            return_freed_memory()
        return _keep(key, made)


# Planning a capture of this many messages or more (a 2.5M-row dump) hands the memory its index
# build freed back to the system. The Python worker that planned stays alive, idle, for a minute
# (Spark's reuse): after planning a 20M-row dump (80,000 messages) it held 161 MB, 123 MB after a
# full collection and malloc_trim (146 MB after malloc_trim alone), which took 30-80 ms of 9-13 s.
# A small capture has little to give back for a full collection's cost: a test process plans
# thousands of them, and a collection after each made the unit suite run past 14 minutes, not 3.
MEMORY_RETURNED_FROM_MESSAGES = 10_000


def _plan(load: Load, plan_errors_later: bool) -> Plan:
    chosen = view(load.options.view)
    arrow = chosen.schema(load)
    try:
        parts = tuple(chosen.plan(load)) or (NoRows(),)
        attachments = chosen.attachments(load, parts)
    except CmiError:
        if plan_errors_later:
            return Plan(arrow, None)
        raise
    return Plan(arrow, parts, attachments)
