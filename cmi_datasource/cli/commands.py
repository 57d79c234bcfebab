"""The ``cmi`` command group and its listing commands: ls, contents, head, messages.

Each command reads a view of the capture through ``reading`` (the engine's views, in this
process: no JVM) and draws it with ``explore.render``; ``--json`` prints one JSON document."""
from __future__ import annotations

import contextlib
import glob
import os
import shlex
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import click
import pyarrow as pa
from rich.table import Table

from ..engine import reading
from ..engine.options import DEFAULT_BATCH_ROWS, READ_MODES
from ..engine.plan import Part
from ..engine.selection import DatasetChoiceError
from ..engine.views import FilePart
from ..explore.render import rich_table
from .exits import DAMAGED, EXIT_CODES_HELP, USAGE, CmiGroup, Failure
from .output import console, file_name, print_json
from .reading import load_of, option_pairs

MODES = tuple(name.upper() for name in READ_MODES)

GROUP_HELP = """Explore captures of SAS CMI message-queue traffic (IBM MQ dumps, TIB/RV, MQTT, SAP DB)
from the terminal: the attachments, data sets, files and messages they hold.

PATH is a capture file, a directory (read recursively) or a glob; give several to read them
together, as spark.read.format("cmi").load([a, b]) does. Every command reads the capture as
Spark would, with the same options (-o KEY=VALUE) and the same errors, without starting Spark;
only convert starts a local Spark session."""

GROUP_EPILOG = f"""\b
Examples:
  cmi ls sample_queues/nightly_batch.dmp
  cmi contents sample_queues/nightly_batch.dmp FIN.DAILY_SALES
  cmi head sample_queues/nightly_batch.dmp FIN.DAILY_SALES -n 5
  cmi head sample_queues/mixed_types.dmp
  cmi messages sample_queues/nightly_batch.dmp --attachment FIN.RETURNS
  cmi extract sample_queues/nightly_batch.dmp out/ --datasets csv
  cmi convert sample_queues/nightly_batch.dmp FIN.DAILY_SALES sales.parquet --to parquet
  cmi ls sample_queues/ --json | jq '.attachments[].name'
  cmi cache info

{EXIT_CODES_HELP}"""


@click.group(cls=CmiGroup, help=GROUP_HELP, epilog=GROUP_EPILOG,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="cmi-datasource", prog_name="cmi")
def cli() -> None:
    pass


# -- what every command takes ----------------------------------------------------------------------

def paths_argument(f: Callable) -> Callable:
    return click.argument("paths", nargs=-1, required=True, metavar="PATH...")(f)


def option_setting(f: Callable) -> Callable:
    return click.option(
        "-o", "--option", "options", multiple=True, metavar="KEY=VALUE",
        help="A read option as Spark takes it (format, ccsid, defaultCcsid, temporalTypes, batchRows, ...); "
             "repeatable. An unknown option is an error.")(f)


def mode_setting(f: Callable) -> Callable:
    return click.option(
        "--mode", type=click.Choice(MODES, case_sensitive=False),
        help="What to do about damage: FAILFAST (default) stops at the first; PERMISSIVE keeps what can be "
             "trusted plus a _corrupt_record row per damaged stretch; DROPMALFORMED the trusted rows only.")(f)


def json_flag(f: Callable) -> Callable:
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON document (for scripts).")(f)


def _examples(*lines: str) -> str:
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


# -- ls ----------------------------------------------------------------------------------------------

LS_COLUMNS = pa.schema([("name", pa.string()), ("kind", pa.string()), ("complete", pa.string()),
                        ("messages", pa.string()), ("observations", pa.int64()), ("variables", pa.int64()),
                        ("problem", pa.string()), ("source", pa.string())])


@cli.command("ls", short_help="List the attachments of a capture.", epilog=_examples(
    "cmi ls sample_queues/nightly_batch.dmp",
                                    "cmi ls sample_queues/ --json",
                                    "cmi ls sample_queues/tibrv_capture.rv sample_queues/files.dmp"))
@paths_argument
@option_setting
@json_flag
def list_attachments(paths: Sequence[str], options: Sequence[str], as_json: bool) -> None:
    """List the attachments of a capture: one row per data set or file sent, whether all its
    messages were captured (found/expected), its observations and variables, and why it cannot
    be read when it cannot (the attachments view).

    The exit code is 1 when the capture is damaged: an attachment has a problem, or a stretch
    of a file cannot be read (cmi messages shows where); stderr says which."""
    load = load_of(paths, option_pairs(options), view="attachments")
    rows = reading.table(load).to_pylist()
    damaged = load.capture().damaged()
    summary = {"attachments": len(rows), "complete": sum(1 for r in rows if r["complete"]),
               "with_problems": sum(1 for r in rows if r["problem"]), "damaged_stretches": len(damaged)}
    if as_json:
        print_json({"attachments": rows, "summary": summary})
    else:
        print_listing(rows, summary)
    if summary["with_problems"] or damaged:
        found = [f"{n} {one if n == 1 else several}" for n, one, several in (
            (summary["with_problems"], "attachment with a problem", "attachments with problems"),
            (len(damaged), "damaged stretch", "damaged stretches")) if n]
        where = (f" (the first stretch: {damaged[0].damage.location.describe()}; cmi messages lists them)"
                 if damaged and damaged[0].damage is not None else "")
        raise Failure(f"the capture is damaged: {' and '.join(found)}{where}", DAMAGED)


def print_listing(rows: List[Dict], summary: Dict[str, int]) -> None:
    shown = pa.Table.from_pylist([{
        "name": r["name"] or r["attachment"], "kind": r["kind"], "complete": "yes" if r["complete"] else "no",
        "messages": f"{r['found_messages']}/{r['expected_messages'] if r['expected_messages'] is not None else '?'}",
        "observations": r["observations"], "variables": r["variables"], "problem": r["problem"],
        "source": file_name(r["source"])} for r in rows], schema=LS_COLUMNS)
    # Short headers and the file only when there are several: the table fits an 80-column
    # terminal, and the long problem texts fold rather than the names.
    columns = [c for c in LS_COLUMNS.names if c != "source" or len({r["source"] for r in rows}) > 1]
    out = console()
    out.print(rich_table(shown, columns, headers={"messages": "found/expected", "observations": "obs",
                                                  "variables": "vars", "complete": "whole"}, max_chars=80))
    out.print(f"{summary['attachments']} attachments, {summary['complete']} complete, "
              f"{summary['with_problems']} with problems"
              + (f", {summary['damaged_stretches']} damaged stretches" if summary["damaged_stretches"] else ""))


# -- contents ----------------------------------------------------------------------------------------

VARIABLE_HEADERS = {"position": "#", "name": "Variable", "type": "Type", "length": "Len", "format": "Format",
                    "informat": "Informat", "label": "Label"}


@cli.command("contents", short_help="Describe data sets and their variables (PROC CONTENTS).", epilog=_examples(
    "cmi contents sample_queues/nightly_batch.dmp",
                                          "cmi contents sample_queues/nightly_batch.dmp FIN.DAILY_SALES",
                                          "cmi contents sample_queues/mixed_types.dmp --json"))
@click.argument("arguments", nargs=-1, required=True, metavar="PATH... [DATASET]")
@option_setting
@json_flag
def contents(arguments: Sequence[str], options: Sequence[str], as_json: bool) -> None:
    """Describe the data sets of a capture, like PROC CONTENTS: per data set its name, label and
    observations, then its variables (position, name, type, length, format, informat, label).

    DATASET (LIB.MEMBER or MEMBER) is the last argument when there are several and it names no
    file; it chooses as option("dataset", ...) does. Without it every data set is described, an
    incomplete one with why it cannot be read."""
    paths, dataset = paths_and_dataset(arguments)
    given = option_pairs(options)
    attachments = reading.table(load_of(paths, given, view="attachments")).to_pylist()
    variables = reading.table(load_of(paths, given, view="variables")).to_pylist()
    if dataset is None:
        chosen = [a for a in attachments if a["kind"] == "dataset"]
    else:
        # The attachments a read of this data set would return, as the dataset view chooses them.
        with choosing_a_data_set(paths, "contents"):
            keys = set(reading.plan(load_of(paths, given, view="dataset", dataset=dataset)).attachments)
        chosen = [a for a in attachments if a["attachment"] in keys]
    described = [dict(data_set_facts(a), variables=[
        {k: v for k, v in row.items() if k not in ("dataset", "attachment")}
        for row in variables if row["attachment"] == a["attachment"]]) for a in chosen]
    if as_json:
        print_json({"datasets": described})
        return
    out = console()
    for entry in described:
        facts = Table.grid(padding=(0, 2))
        for label, key in (("Label", "label"), ("Description", "description"), ("Observations", "observations"),
                           ("Variables", "variable_count"), ("Attachment", "attachment"), ("Source", "source"),
                           ("Problem", "problem")):
            if entry[key] not in (None, ""):
                facts.add_row(label, str(entry[key]))
        out.print(f"Data set {entry['name']}" + ("" if entry["complete"] else " (incomplete)"), style="bold")
        out.print(facts)
        if entry["variables"]:
            out.print(rich_table(pa.Table.from_pylist(entry["variables"]), headers=VARIABLE_HEADERS))
        out.print()
    if not described:
        out.print("no data sets")


def paths_and_dataset(arguments: Sequence[str]) -> Tuple[Sequence[str], Optional[str]]:
    """PATH... [DATASET]: a last argument that names no file (nor matches a glob) is the data set."""
    last = arguments[-1]
    if len(arguments) > 1 and not os.path.exists(last) and not (glob.has_magic(last) and glob.glob(last)):
        return arguments[:-1], last
    return arguments, None


@contextlib.contextmanager
def choosing_a_data_set(paths: Sequence[str], command: str, after: Sequence[str] = ()) -> Iterator[None]:
    """Within the block, a data set the options do not choose (none of that name, or several
    that cannot be read together) ends the command (exit code 2) with the choices one a line and
    the command that names one: ``cmi COMMAND PATH... DATASET`` (then the ``after`` arguments)."""
    try:
        yield
    except DatasetChoiceError as e:
        raise Failure(choice_text(e, f"cmi {command} {shlex.join(paths)} {{}}" + "".join(
            f" {shlex.quote(a)}" for a in after)), USAGE) from None


def choice_text(error: DatasetChoiceError, example: str) -> str:
    """A choice error for a terminal: the problem, the command naming the first complete
    candidate (``example`` with ``{}`` for its name), then the candidates, aligned."""
    lines = [f"{type(error).__name__}: {error.problem}"]
    shown = [c for c in error.candidates if c.kind == "dataset"] or list(error.candidates)
    if shown:
        first = next((c for c in shown if c.complete), shown[0])
        lines.append(f"  what to do: name one as DATASET, e.g. {example.format(shlex.quote(first.name))}")
        width = max(len(c.name) for c in shown)
        lines.append("  the data sets:" if shown[0].kind == "dataset" else "  the attachments:")
        lines += [f"    {c.name:<{width}}  {'complete  ' if c.complete else 'incomplete'}  attachment {c.attachment}"
                  for c in shown]
    return "\n".join(lines)


def data_set_facts(attachment: Dict) -> Dict:
    """What contents says of a data set attachment, from its row in the attachments view."""
    return {"name": attachment["name"], "attachment": attachment["attachment"], "label": attachment["label"],
            "description": attachment["description"], "observations": attachment["observations"],
            "variable_count": attachment["variables"], "complete": attachment["complete"],
            "problem": attachment["problem"], "source": file_name(attachment["source"])}


# -- head ----------------------------------------------------------------------------------------------

@cli.command("head", short_help="Show the first observations of a data set.", epilog=_examples(
    "cmi head sample_queues/mixed_types.dmp",
                                      "cmi head sample_queues/nightly_batch.dmp FIN.DAILY_SALES",
                                      "cmi head sample_queues/nightly_batch.dmp FIN.DAILY_SALES -n 3 --names",
                                      "cmi head sample_queues/nightly_batch.dmp FIN.RETURNS --mode PERMISSIVE",
                                      "cmi head sample_queues/zos_785_37.dmp PROD.LEDGER -o ccsid=37"))
@click.argument("arguments", nargs=-1, required=True, metavar="PATH... [DATASET]")
@click.option("-n", "--rows", default=10, show_default=True, type=click.IntRange(min=1),
              help="How many observations to show; only those are decoded.")
@click.option("--names", is_flag=True, help="Variable names as column headers instead of their labels.")
@mode_setting
@option_setting
@json_flag
def head(arguments: Sequence[str], rows: int, names: bool, mode: Optional[str],
         options: Sequence[str], as_json: bool) -> None:
    """Show the first observations of data set DATASET (LIB.MEMBER or MEMBER), with the
    variables' labels as column headers. Only the batches that hold those rows are decoded.

    DATASET is the last argument when there are several and it names no file. Without it, the
    data set a read without option("dataset") returns is shown: the capture's one complete data
    set (several when their variables are identical); when there are several, they are listed."""
    paths, dataset = paths_and_dataset(arguments)
    given = option_pairs(options)
    if not any(key.lower() == "batchrows" for key in given):
        # A first batch of exactly the rows shown: nothing past them is decoded.
        given["batchRows"] = str(min(rows, DEFAULT_BATCH_ROWS))
    load = load_of(paths, given, view="dataset", dataset=dataset, mode=mode)
    with choosing_a_data_set(paths, "head"):
        table, plan = reading.first_rows(load, rows)
    planned = plan.rows
    # The data set the read chose (the one asked for, or the default), by the attachments it planned.
    named = {a.key_hex: a.entry.name for a in load.capture().attachments}
    dataset = " + ".join(dict.fromkeys(named[key] for key in plan.attachments if key in named)) or dataset or ""
    labels = {f.name: (f.metadata or {}).get(b"label", b"").decode() for f in table.schema}
    if as_json:
        print_json({"dataset": dataset, "observations": planned,
                    "columns": [{"name": f.name, "label": labels[f.name], "type": str(f.type)} for f in table.schema],
                    "rows": table.to_pylist()})
        return
    headers = {} if names else {name: label for name, label in labels.items() if label}
    # PERMISSIVE's report rows say what was lost; they are no observations and are counted apart.
    reported = (table.num_rows - table.column(load.options.corrupt_column).null_count
                if load.mode.reports else 0)
    title = f"{dataset}: first {table.num_rows - reported} of {planned} observations"
    if reported:
        title += f", and {reported} row{'s' if reported > 1 else ''} saying what was lost"
    console().print(rich_table(table, headers=headers, title=title))


# -- messages --------------------------------------------------------------------------------------------

# What the table shows of each message; --json gives every column of the view.
MESSAGE_COLUMNS = pa.schema([("index", pa.int64()), ("put", pa.string()), ("transport", pa.string()),
                             ("role", pa.string()), ("attachment", pa.string()), ("sequence", pa.int64()),
                             ("length", pa.int64()), ("problem", pa.string())])


def put_moment(put_date: Optional[str], put_time: Optional[str]) -> Optional[str]:
    """MQ's PutDate ``YYYYMMDD`` and PutTime ``HHMMSSTH`` as ``YYYY-MM-DD HH:MM:SS.TH``, as given when
    they are not of that shape (other transports leave them empty)."""
    if not put_date and not put_time:
        return None
    date, time = put_date or "", put_time or ""
    if len(date) == 8 and date.isdigit():
        date = f"{date[:4]}-{date[4:6]}-{date[6:]}"
    if len(time) == 8 and time.isdigit():
        time = f"{time[:2]}:{time[2:4]}:{time[4:6]}.{time[6:]}"
    return f"{date} {time}".strip()


@cli.command("messages", short_help="List the physical messages of a capture.", epilog=_examples(
    "cmi messages sample_queues/nightly_batch.dmp",
                                          "cmi messages sample_queues/nightly_batch.dmp --attachment FIN.RETURNS",
                                          "cmi messages sample_queues/amqsbcg_browse.txt -n 5 --json"))
@paths_argument
@click.option("--attachment", "wanted",
              help="Only the messages of this attachment: its name (FIN.RETURNS, report.txt) or its 32-digit key.")
@click.option("-n", "--rows", type=click.IntRange(min=1), help="Show at most this many messages.")
@option_setting
@json_flag
def messages(paths: Sequence[str], wanted: Optional[str], rows: Optional[int], options: Sequence[str],
             as_json: bool) -> None:
    """List the physical messages of a capture as captured: where each lies, when it was put,
    its transport and MsgType, its role in a CMI attachment (header, application, count,
    sequenced) with the attachment and sequence number, its length, and what the capture lost
    of it (the messages view, without the payload bytes)."""
    given = option_pairs(options)
    names = {a["attachment"]: a["name"] for a in reading.table(load_of(paths, given, view="attachments")).to_pylist()
             if a["attachment"]}
    keys = None if wanted is None else attachment_keys(wanted, names)
    load = load_of(paths, given, view="messages")
    plan = reading.plan(load)
    several_files = len(set(capture_files(plan.parts or ()))) > 1
    shown: List[Dict] = []
    total = with_problems = 0
    for batch in reading.batches(load, plan):
        for row in batch.drop_columns(["payload"]).to_pylist():
            if keys is not None and row["attachment"] not in keys:
                continue
            total += 1
            with_problems += row["problem"] is not None
            if rows is None or len(shown) < rows:
                row["attachment_name"] = names.get(row["attachment"])
                shown.append(row)
    if as_json:
        print_json({"messages": shown, "count": total, "with_problems": with_problems})
        return
    # The file and the transport only when they differ between rows: the table fits a terminal.
    columns = (["source"] if several_files else []) + [
        c for c in MESSAGE_COLUMNS.names if c != "transport" or len({r["transport"] for r in shown}) > 1]
    display = pa.Table.from_pylist([dict(row, attachment=row["attachment_name"] or row["attachment"],
                                         source=file_name(row["source"]),
                                         put=put_moment(row.get("put_date"), row.get("put_time")))
                                    for row in shown],
                                   schema=pa.schema([("source", pa.string())] + list(MESSAGE_COLUMNS)))
    out = console()
    out.print(rich_table(display, columns, max_chars=80))
    out.print(f"{total} messages" + (f" ({len(shown)} shown)" if len(shown) < total else "")
              + f", {with_problems} with problems")


def capture_files(parts: Sequence[Part]) -> List[str]:
    """The capture files of the load (the messages view plans one partition per file)."""
    return [part.path for part in parts if isinstance(part, FilePart)]


def attachment_keys(wanted: str, names: Dict[str, str]) -> set:
    """The attachment keys ``--attachment`` means: a key, or every attachment of that name."""
    keys = {key for key, name in names.items() if key == wanted.strip().upper()
            or (name or "").lower() == wanted.strip().lower()}
    if not keys:
        known = ", ".join(sorted({name or key for key, name in names.items()}))
        raise click.BadParameter(f"no attachment {wanted!r} in the capture; attachments: {known}",
                                 param_hint="--attachment")
    return keys
