"""``cmi cache info`` and ``cmi cache clear``: the disk cache of message indexes and plans
(``cache.py``), as the environment (``CMI_DATASOURCE_CACHE``) or ``--dir`` (what option cacheDir
would say) places it."""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional

import click

from .. import cache
from .commands import _examples, cli, json_flag
from .exits import writing
from .output import console, print_json, warn


@cli.group("cache", short_help="Show or empty the disk cache of message indexes and plans.")
def cache_group() -> None:
    """The disk cache where reads keep each large capture file's message index and each load's
    plan for the next Python worker. It is a directory of this user's with mode 0700:
    $XDG_CACHE_HOME/cmi-datasource or ~/.cache/cmi-datasource, else cmi-datasource-<uid> in the
    temporary directory; CMI_DATASOURCE_CACHE (or a read's option cacheDir) moves it, or turns it
    off with off. A directory others made or may open is never used."""


def dir_setting(f: Callable) -> Callable:
    return click.option("--dir", "directory", metavar="DIR",
                        help=f"The cache a read with option cacheDir=DIR uses (an absolute directory, or off), "
                             f"instead of {cache.ENVIRONMENT_VARIABLE}'s or the default.")(f)


def _setting(directory: Optional[str]) -> Optional[str]:
    if directory is None:
        return None
    try:
        return cache.setting_of(directory, "--dir")
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--dir") from None


def _size(count: int) -> str:
    return f"{count / (1 << 20):.1f} MiB" if count >= 1 << 20 else f"{count} bytes"


def _source(where: cache.Location) -> str:
    return "the default" if where.source == "default" else where.source


@cache_group.command("info", short_help="Where the disk cache is, whether it is private, what it holds.",
                     epilog=_examples("cmi cache info", "cmi cache info --json",
                                      "CMI_DATASOURCE_CACHE=/scratch/me/cmi cmi cache info"))
@dir_setting
@json_flag
def info(directory: Optional[str], as_json: bool) -> None:
    """Where the disk cache is (and what chose it), whether it is ready, not made yet or not
    private (then not used), and how many entries and bytes it holds. A candidate directory
    that is not private is named with why; the default then falls back to the next one."""
    with cache.chosen(_setting(directory)):
        where, surveyed = cache.survey()
    used = cache.in_use(surveyed)
    if as_json:
        print_json({"source": where.source, "off": not where.directories,
                    "directory": used.directory if used else None, "state": used.state if used else None,
                    "entries": used.entries if used else 0, "bytes": used.bytes if used else 0,
                    "candidates": [dataclasses.asdict(s) for s in surveyed]})
        return
    out = console()
    if not where.directories:
        out.print(f"the disk cache is off ({_source(where)})")
        return
    for skipped in surveyed:
        if skipped is used:
            break
        out.print(f"not used: {skipped.problem}")
    if used is None:
        out.print(f"no usable cache directory ({_source(where)}): reads keep nothing on disk")
    elif used.state == "missing":
        out.print(f"cache: {used.directory} ({_source(where)}), not made yet")
    else:
        out.print(f"cache: {used.directory} ({_source(where)}), private, {used.entries} entries, "
                  f"{_size(used.bytes)}")


@cache_group.command("clear", short_help="Remove every entry of the disk cache.",
                     epilog=_examples("cmi cache clear", "cmi cache clear --dir /scratch/me/cmi"))
@dir_setting
def clear(directory: Optional[str]) -> None:
    """Remove every entry of the disk cache (each candidate directory of the default that is
    private); reads build them again. A directory that is not private is left alone, with a
    warning: nothing of ours is written there."""
    with cache.chosen(_setting(directory)):
        where = cache.location()
        if not where.directories:
            console().print(f"the disk cache is off ({_source(where)}): nothing to clear")
            return
        with writing(f"the cache {', '.join(where.directories)}"):
            cleared = cache.clear()
    for left in cleared.skipped:
        warn(f"left alone: {left.problem}")
    console().print(f"removed {cleared.entries} entries ({_size(cleared.bytes)})"
                    + (f" from {' and '.join(cleared.directories)}" if cleared.directories else ""))
