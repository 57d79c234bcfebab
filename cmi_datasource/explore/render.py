"""Arrow tables as rich tables: the one place that decides how a view's values look to a person,
in the terminal (``cmi`` command), in plain text and in a notebook's HTML.

Values are shown, not dumped: nulls as an empty cell, binary as a short hex preview with its
length, lists joined, long text cut with an ellipsis. Nothing here changes data; it only draws it.
"""
from __future__ import annotations

import datetime as dt
import html
import io
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pyarrow as pa
from rich.console import Console
from rich.table import Table
from rich.text import Text

MAX_CELL_CHARS = 60
HEX_PREVIEW_BYTES = 8
MARKED_STYLE = "bold red"  # rows a table marks (an incomplete attachment, say), in the terminal
MARKED_HTML_STYLE = "color:#b00020;font-weight:bold"  # the same in a notebook


def elapsed_time(value: dt.timedelta) -> str:
    """An interval (a SAS TIME value) as SAS's TIME format shows it: hours past 24 and a sign kept
    (``99:48:00``, ``-1:00:00.5``), not Python's ``4 days, 3:48:00``."""
    micros = abs(value) // dt.timedelta(microseconds=1)
    seconds, fraction = divmod(micros, 1_000_000)
    text = f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    if fraction:
        text += f".{fraction:06d}".rstrip("0")
    return f"-{text}" if value < dt.timedelta(0) else text


def cell(value: Any, max_chars: int = MAX_CELL_CHARS) -> str:
    """One value as the text of a table cell."""
    if value is None:
        return ""
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        more = "…" if len(raw) > HEX_PREVIEW_BYTES else ""
        text = f"{raw[:HEX_PREVIEW_BYTES].hex(' ')}{more} ({len(raw)} bytes)"
    elif isinstance(value, float):
        text = f"{value:.15g}"
    elif isinstance(value, dt.datetime):
        text = value.isoformat(sep=" ")
    elif isinstance(value, dt.timedelta):
        text = elapsed_time(value)
    elif isinstance(value, (list, tuple)):
        text = ", ".join(cell(v, max_chars) for v in value)
    elif isinstance(value, dict):
        text = ", ".join(f"{k}={cell(v, max_chars)}" for k, v in value.items())
    else:
        text = str(value)
    text = " ".join(text.splitlines()) if "\n" in text or "\r" in text else text
    return text if len(text) <= max_chars else text[:max_chars - 1] + "…"


def _shown(table: pa.Table, columns: Optional[Sequence[str]], max_rows: Optional[int]
           ) -> Tuple[List[str], pa.Table, Optional[str]]:
    """The columns drawn, the rows drawn and the caption saying how many were left out."""
    columns = list(columns) if columns is not None else table.column_names
    shown = table.select(columns)
    if max_rows is not None and shown.num_rows > max_rows:
        return columns, shown.slice(0, max_rows), f"{max_rows} of {shown.num_rows} rows"
    return columns, shown, None


def _is_numeric(table: pa.Table, name: str) -> bool:
    kind = table.schema.field(name).type
    return pa.types.is_integer(kind) or pa.types.is_floating(kind)


def rich_table(table: pa.Table, columns: Optional[Sequence[str]] = None, title: Optional[str] = None,
               headers: Optional[Dict[str, str]] = None, max_rows: Optional[int] = None,
               max_chars: int = MAX_CELL_CHARS, marked_rows: Optional[Sequence[bool]] = None) -> Table:
    """A rich ``Table`` of ``table``'s ``columns`` (all by default); ``headers`` renames columns
    for display (a data set's labels, say); ``max_rows`` cuts the rows and says how many were left out;
    ``marked_rows`` (one flag per row) draws the rows that need attention in bold red."""
    columns, shown, caption = _shown(table, columns, max_rows)
    headers = headers or {}
    out = Table(title=title, caption=caption, show_lines=False, header_style="bold")
    rows = [[cell(row[name], max_chars) for name in columns] for row in shown.to_pylist()]
    for name in columns:
        # Every column may fold: on a narrow terminal rich then narrows the widest first and
        # never drops a column (a minimum width would make it crop the table's right side).
        out.add_column(headers.get(name, name), justify="right" if _is_numeric(table, name) else "left",
                       overflow="fold")
    for i, texts in enumerate(rows):
        marked = marked_rows is not None and marked_rows[i]
        out.add_row(*(Text(t) for t in texts), style=MARKED_STYLE if marked else None)
    return out


def html_table(table: pa.Table, columns: Optional[Sequence[str]] = None, title: Optional[str] = None,
               headers: Optional[Dict[str, str]] = None, max_rows: Optional[int] = None,
               max_chars: int = MAX_CELL_CHARS, marked_rows: Optional[Sequence[bool]] = None) -> str:
    """The same table as ``rich_table`` as a plain HTML ``<table>``: a notebook styles it like
    its other tables, and it reads on GitHub's rendering of a committed notebook."""
    columns, shown, caption = _shown(table, columns, max_rows)
    headers = headers or {}
    align = {name: "right" if _is_numeric(table, name) else "left" for name in columns}
    parts = ["<table>"]
    if title:
        parts.append(f"<caption style=\"text-align:left;font-weight:bold\">{html.escape(title)}</caption>")
    parts.append("<thead><tr>" + "".join(
        f"<th style=\"text-align:{align[name]}\">{html.escape(headers.get(name, name))}</th>" for name in columns)
        + "</tr></thead><tbody>")
    for i, row in enumerate(shown.to_pylist()):
        marked = marked_rows is not None and marked_rows[i]
        style = f" style=\"{MARKED_HTML_STYLE}\"" if marked else ""
        parts.append(f"<tr{style}>" + "".join(
            f"<td style=\"text-align:{align[name]}\">{html.escape(cell(row[name], max_chars))}</td>"
            for name in columns) + "</tr>")
    parts.append("</tbody></table>")
    if caption:
        parts.append(f"<p><small>{html.escape(caption)}</small></p>")
    return "".join(parts)


def as_text(renderable: Any, width: int = 120) -> str:
    """What ``renderable`` prints as plain text (no colour codes)."""
    # force_jupyter=False: in a notebook rich would otherwise display what it renders, not just record it.
    console = Console(width=width, record=True, file=_Discard(), color_system=None, force_terminal=False,
                      force_jupyter=False)
    console.print(renderable)
    return console.export_text()


def as_html(renderable: Any, width: int = 120) -> str:
    """``renderable`` as an HTML fragment for a notebook (inline styles, no page around it)."""
    console = Console(width=width, record=True, file=_Discard(), force_terminal=True, color_system="truecolor",
                      force_jupyter=False)
    console.print(renderable)
    return console.export_html(inline_styles=True, code_format="<pre style=\"font-family:monospace\">{code}</pre>")


class _Discard(io.StringIO):
    """A file that drops what is written: recording consoles keep their own copy."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass
