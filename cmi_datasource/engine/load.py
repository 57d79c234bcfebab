"""A load: what one read asks for (``ReadOptions``) and the capture it reads. Every view plans
and reads through one; the Spark classes, the CLI and ``cmi_datasource.read`` make them.

A load opens its capture from the files of option ``path`` (kept open within a process:
``capture.open_cached``), or reads a capture already built in memory (``given``), whose messages
it then hands to the partitions instead of their being re-read from files.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import List, Optional, Sequence

from ..messages import PhysicalMessage
from ..storage import exists
from .capture import Capture, open_cached
from .modes import ReadMode, read_mode
from .options import ReadOptions
from .reread import PlannedMessage


@dataclass(frozen=True)
class Load:
    options: ReadOptions
    given: Optional[Capture] = field(default=None, compare=False)  # a capture built in memory

    @cached_property
    def mode(self) -> ReadMode:
        return read_mode(self.options)

    def capture(self, after_planning: bool = False) -> Capture:
        """The load's capture; ``after_planning``: opened again where a partition is read, when
        a path planning found may have been removed since (option ignoreMissingFiles leaves it out)."""
        if self.given is not None:
            return self.given
        o = self.options
        paths = o.paths
        if after_planning and o.ignore_missing_files:
            paths = tuple(p for p in paths if exists(p)) or paths  # none left: the error says which
        return open_cached(paths, o.charsets, o.format, o.transport_options, o.ignore_corrupt_files,
                           listed=o.files_listed, **o.file_filters())

    def held(self, planned: Sequence[PlannedMessage]) -> Optional[List[PhysicalMessage]]:
        """The planned messages when the capture holds them in memory (a capture given whole),
        else None: a partition re-reads them from their files."""
        if self.given is None:
            return None
        held = self.given.held_messages
        found = [held.get(m.spans) for m in planned]
        return None if any(m is None for m in found) else found  # type: ignore[return-value]
