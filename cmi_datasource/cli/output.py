"""Where the ``cmi`` command writes: tables and results on stdout, progress and warnings on
stderr, and JSON documents for scripts."""
from __future__ import annotations

import datetime as dt
import decimal
import json
import os
from typing import Any

import click
from rich.console import Console
from rich.text import Text

# Piped output has no terminal to take its width from; rich would assume 80 columns and fold
# the tables. People read piped output too (| less), so it gets room; COLUMNS still decides.
PIPED_WIDTH = 160


def console(stderr: bool = False) -> Console:
    out = Console(stderr=stderr, highlight=False, markup=False, soft_wrap=False)
    if not out.is_terminal and "COLUMNS" not in os.environ:
        out.width = PIPED_WIDTH
    return out


def warn(text: str) -> None:
    # Text, not markup: a capture's text ("missing [4]") must not be read as rich tags.
    console(stderr=True).print(Text.assemble(("warning: ", "yellow"), text), soft_wrap=True)


def _json_value(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, (dt.date, dt.time, dt.datetime)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, dt.timedelta):  # a SAS TIME value: its seconds, as SAS holds it
        return value.total_seconds()
    raise TypeError(f"{type(value).__name__} is not JSON")


def print_json(document: Any) -> None:
    """One JSON document on stdout: bytes as hex, dates and times in ISO 8601."""
    click.echo(json.dumps(document, default=_json_value, indent=2, ensure_ascii=False))


def file_name(path: str) -> str:
    return os.path.basename(path) if path else path
