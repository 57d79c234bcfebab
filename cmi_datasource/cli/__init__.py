"""The ``cmi`` console command: explore captures of SAS CMI traffic from the terminal.

``cmi ls``, ``contents``, ``head``, ``messages`` and ``extract`` read the capture in this process
through the engine's views, exactly as ``spark.read.format("cmi")`` does (same option names,
same tables, same errors) but without starting a JVM; only ``cmi convert`` starts a local Spark
session (it alone imports pyspark). ``cmi cache info`` and ``cmi cache clear`` show and empty
the disk cache of message indexes and plans (``cache.py``); ``cmi spool`` spools a live MQTT
broker into a folder until stopped. ``cmi --help`` and each command's
``--help`` give examples on the bundled ``sample_queues/``.

Exit codes, for scripts:

- 0: success.
- 1: the capture is damaged or cannot be read as asked (``CmiFormatError`` and its subclasses,
  or an input file the system refuses); ``ls`` listed an attachment with a problem or a damaged
  stretch (after printing the listing, or its JSON); ``extract`` left out an incomplete or
  damaged attachment in FAILFAST mode.
- 2: usage: click's usage errors, and ``CmiOptionError`` (a path that does not exist, an unknown
  data set, an unknown option or a bad option value; several data sets where one is to be named,
  listed one a line).
- 3: output: the destination of ``extract`` or ``convert`` cannot be written, or ``spool``'s
  folder (or another spooler writes it).
- 4: ``spool``: the MQTT broker cannot be reached, or refuses the connection or the subscription.

A ``CmiError`` is shown on stderr as its class and text (the problem, ``what to do:``, then one
labelled line per known place: file, message, offsets, attachment, sequence), without a
traceback. Any other exception is a bug and keeps its traceback.
"""
from __future__ import annotations

from . import caches, convert, extract, spool  # noqa: F401  (each adds its command to the group)
from .commands import cli


def main(args=None) -> None:
    """The console script ``cmi``."""
    cli.main(args=args, prog_name="cmi")


__all__ = ["cli", "main"]
