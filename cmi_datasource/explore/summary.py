"""What a capture holds, at a glance: its files, its attachments (which transfers are complete,
each data set's observations, variables and label, each external file) and what went wrong.

Built from a ``Capture`` without Spark, from the same attachments view a Spark read gives, so
its numbers are that view's. It shows itself as an HTML table in a notebook (``_repr_html_``),
as a rich table in a terminal (``__rich__``) and as plain text anywhere else (``str``).
"""
from __future__ import annotations

import html
import os
from dataclasses import dataclass
from typing import Iterable, List, Sequence, Union

import pyarrow as pa
from rich.console import Group, RenderableType
from rich.text import Text

from ..cmi.assembly import ROLE_OTHER
from ..engine.capture import Capture
from ..engine.reading import read
from ..errors import CmiFormatError, message_number
from .render import as_text, html_table, rich_table

# The attachments as the summary shows them: the view's columns, said for a person.
_ATTACHMENT_COLUMNS = ["name", "kind", "status", "messages", "duplicates", "observations", "variables",
                       "label", "file"]
_ATTACHMENT_HEADERS = {"duplicates": "duplicate messages", "label": "label / description"}
_PROBLEM_COLUMNS = ["subject", "problem", "consequence"]
_PROBLEM_HEADERS = {"subject": "where", "consequence": "what a read gets"}


@dataclass(frozen=True)
class Problem:
    """One thing that went wrong: where (an attachment, or a file's message), what, and what a
    read makes of it (for a data set, what ``PERMISSIVE`` returns)."""

    subject: str
    problem: str
    consequence: str = ""


@dataclass(frozen=True)
class CaptureSummary:
    files: Sequence[str]  # the capture files read, paths as given to Capture
    formats: Sequence[str]  # each file's capture format
    messages: int  # physical messages, as the messages view counts them
    unclaimed_messages: int  # messages no attachment claims (not CMI, or its header is lost)
    attachments: pa.Table  # the attachments view, less its message bytes
    problems: Sequence[Problem]

    # -- what the view says, by name ----------------------------------------------------------

    def _names(self, wanted) -> List[str]:
        return [row["name"] for row in self.attachments.to_pylist() if wanted(row)]

    @property
    def complete(self) -> List[str]:
        return self._names(lambda row: row["complete"])

    @property
    def incomplete(self) -> List[str]:
        return self._names(lambda row: not row["complete"])

    @property
    def datasets(self) -> List[str]:
        return self._names(lambda row: row["kind"] == "dataset")

    @property
    def external_files(self) -> List[str]:
        return self._names(lambda row: row["kind"] in ("text", "binary"))

    # -- showing it -----------------------------------------------------------------------------

    def headline(self) -> str:
        rows = self.attachments.num_rows
        files = ", ".join(f"{os.path.basename(f)} ({fmt})" for f, fmt in zip(self.files, self.formats))
        unclaimed = (f"; {self.unclaimed_messages} in no attachment (the messages view lists them)"
                     if self.unclaimed_messages else "")
        return (f"{len(self.files)} file{'s' if len(self.files) != 1 else ''}: {files}\n"
                f"{self.messages} messages{unclaimed}\n"
                f"{rows} attachment{'s' if rows != 1 else ''}: {len(self.datasets)} data sets, "
                f"{len(self.external_files)} external file{'s' if len(self.external_files) != 1 else ''}; "
                f"{len(self.complete)} complete, "
                f"{len(self.incomplete)} incomplete; "
                + (f"{len(self.problems)} problem{'s' if len(self.problems) != 1 else ''}"
                   if self.problems else "no problems"))

    def attachment_rows(self) -> pa.Table:
        """One display row per attachment (the view's numbers put in words)."""
        rows = []
        for row in self.attachments.to_pylist():
            if row["kind"] == "header":
                status = "unreadable"
            else:
                status = "complete" if row["complete"] else "incomplete"
            expected = row["expected_messages"]
            rows.append({
                "name": row["name"] or row["attachment"], "kind": row["kind"], "status": status,
                "messages": f"{row['found_messages']} of {expected}" if expected is not None
                else str(row["found_messages"]),
                "duplicates": row["duplicate_messages"], "observations": row["observations"],
                "variables": row["variables"], "label": row["label"] or row["description"],
                "file": os.path.basename(row["source"] or ""),
            })
        return pa.Table.from_pylist(rows, schema=pa.schema([
            ("name", pa.string()), ("kind", pa.string()), ("status", pa.string()), ("messages", pa.string()),
            ("duplicates", pa.int64()), ("observations", pa.int64()), ("variables", pa.int64()),
            ("label", pa.string()), ("file", pa.string())]))

    def problem_rows(self) -> pa.Table:
        return pa.Table.from_pylist([p.__dict__ for p in self.problems],
                                    schema=pa.schema([(c, pa.string()) for c in _PROBLEM_COLUMNS]))

    def _columns(self) -> List[str]:
        """The display columns that say something: duplicates only when there are some, the
        file only when the capture has several."""
        dropped = set()
        if not any(self.attachments.column("duplicate_messages").to_pylist()):
            dropped.add("duplicates")
        if len(self.files) < 2:
            dropped.add("file")
        return [c for c in _ATTACHMENT_COLUMNS if c not in dropped]

    def _marked(self) -> List[bool]:
        return [not complete for complete in self.attachments.column("complete").to_pylist()]

    def __rich__(self) -> Group:
        parts: List[RenderableType] = [Text(self.headline()),
                 rich_table(self.attachment_rows(), self._columns(), title="Attachments",
                            headers=_ATTACHMENT_HEADERS, marked_rows=self._marked(), max_chars=40)]
        if self.problems:  # a list, not a table: problems are sentences, which narrow columns break up
            listed = Text("What went wrong", style="bold")
            for p in self.problems:
                listed.append(f"\n- {p.subject}: ", style="bold").append(p.problem)
                if p.consequence:
                    listed.append(f"\n  {_PROBLEM_HEADERS['consequence']}: {p.consequence}")
            parts.append(listed)
        return Group(*parts)

    def __str__(self) -> str:
        return as_text(self)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        headline = "<br>".join(html.escape(line) for line in self.headline().splitlines())
        parts = [f"<p>{headline}</p>",
                 html_table(self.attachment_rows(), self._columns(), title="Attachments",
                            headers=_ATTACHMENT_HEADERS, marked_rows=self._marked(), max_chars=40)]
        if self.problems:
            parts.append(html_table(self.problem_rows(), _PROBLEM_COLUMNS, title="What went wrong",
                                    headers=_PROBLEM_HEADERS, max_chars=400))
        return "<div>" + "".join(parts) + "</div>"


def _dataset_consequence(capture: Capture, key_hex: str) -> str:
    """What PERMISSIVE and DROPMALFORMED get of an incomplete data set (recovery.py decides)."""
    att = next(a for a in capture.attachments if a.key_hex == key_hex)
    try:
        recovery = capture.recovery(att)
    except CmiFormatError as e:
        return f"nothing can be read: {e.summary()}"
    if recovery.layout is None:
        return "nothing can be read: its definitions are lost"
    declared = recovery.layout.definition.nobs  # the sender's count; negative when it gave none
    trusted = f"{recovery.rows} of {declared}" if declared >= 0 else f"{recovery.rows}"
    lost = "; ".join(lost.what_is_lost() for lost in recovery.lost)
    return f"{trusted} observations can be trusted" + (f"; {lost}" if lost else "")


def _problems(capture: Capture, attachments: pa.Table) -> List[Problem]:
    found: List[Problem] = []
    for row in attachments.to_pylist():
        if row["problem"] is None:
            continue
        if row["kind"] == "header":
            found.append(Problem(f"header {row['attachment']}", row["problem"], "no attachment it lists can be read"))
        elif row["kind"] == "dataset" and not row["complete"]:
            found.append(Problem(row["name"], row["problem"], _dataset_consequence(capture, row["attachment"])))
        elif row["kind"] == "dataset":
            found.append(Problem(row["name"], row["problem"], "its definitions do not read"))
        else:
            found.append(Problem(row["name"], row["problem"], "the files view gives it a _corrupt_record row "
                                                              "in PERMISSIVE mode"))
    for m in capture.messages:
        if m.problem is not None:
            found.append(Problem(f"{os.path.basename(m.source)} message {message_number(m.index)}", m.problem,
                                 "read as a gap of the attachment it belongs to" if m.damage is not None else ""))
    return found


def summarize(capture_or_paths: Union[Capture, str, Iterable[str]]) -> CaptureSummary:
    """The summary of a capture: a ``Capture``, or the paths ``Capture.open`` takes (a file, a
    directory, a glob, or a list of those)."""
    capture = capture_or_paths if isinstance(capture_or_paths, Capture) else Capture.open(capture_or_paths)
    attachments = read(capture, view="attachments").drop_columns(["message", "message_values"])
    unclaimed = sum(1 for m in capture.messages if capture.assembly.role_of(m)[0] == ROLE_OTHER)
    return CaptureSummary(files=list(capture.paths), formats=[capture.formats[f] for f in capture.paths],
                          messages=len(capture.messages), unclaimed_messages=unclaimed,
                          attachments=attachments, problems=_problems(capture, attachments))

