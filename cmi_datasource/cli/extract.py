"""``cmi extract``: every attachment of a capture into a directory, files as sent and data sets
as Parquet or CSV, under safe names.

Files come from the files view, data sets from the dataset view read one attachment at a time
(``option("attachment", key)``), batch by batch into the output, so memory follows a batch and
not the data set. An attachment that cannot be read is left out with a warning; the rest is
still written."""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import click
import pyarrow as pa
import pyarrow.compute as pc
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from ..engine import reading
from ..engine.load import Load
from ..engine.options import FAILFAST, PERMISSIVE
from ..errors import CmiFormatError
from ..explore.render import rich_table
from ..safe_paths import open_new_file, write_new_file
from .commands import _examples, cli, json_flag, mode_setting, option_setting, paths_argument
from .exits import DAMAGED, Failure, writing
from .output import console, print_json, warn
from .reading import load_of, option_pairs

DATASET_FORMATS = ("parquet", "csv", "none")
FILE_KINDS = ("text", "binary")


@dataclass
class Extraction:
    """What an extract wrote and what it left out, in capture order."""

    directory: str
    overwrite: bool = False  # replace files of DIR of the names written (never those this extract wrote)
    written: List[Dict[str, Any]] = field(default_factory=list)
    skipped: List[Dict[str, Any]] = field(default_factory=list)

    def target(self) -> Dict[str, Any]:
        """How ``safe_paths`` chooses the next file: replacing or not, keeping what was written."""
        return {"replace": self.overwrite, "keep": frozenset(w["file"] for w in self.written)}

    def skip(self, attachment: Dict[str, Any], problem: str) -> None:
        self.skipped.append({"attachment": attachment["attachment"], "name": attachment["name"],
                             "kind": attachment["kind"], "problem": problem})


@cli.command("extract", short_help="Write the files and data sets of a capture into a directory.", epilog=_examples(
    "cmi extract sample_queues/nightly_batch.dmp out/",
    "cmi extract sample_queues/nightly_batch.dmp out/ --datasets csv --mode PERMISSIVE",
    "cmi extract sample_queues/nightly_batch.dmp out/ --overwrite",
    "cmi extract sample_queues/files.dmp sample_queues/seed000_external_file.dmp files/ --datasets none"))
@paths_argument
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False))
@click.option("--datasets", "dataset_format", type=click.Choice(DATASET_FORMATS), default="parquet",
              show_default=True, help="Write each data set as <name>.parquet or <name>.csv, or not at all.")
@click.option("--overwrite", is_flag=True,
              help="Replace files in DIR of the names written (an extract run again), instead of adding "
                   "'name (2).ext'. A directory is never replaced, a symlink only itself (never what it points to).")
@mode_setting
@option_setting
@json_flag
def extract(paths: Sequence[str], directory: str, dataset_format: str, overwrite: bool, mode: Optional[str],
            options: Sequence[str], as_json: bool) -> None:
    """Write every attachment of a capture into DIR (made when missing): each file as it was sent,
    each data set as a Parquet (or CSV) file with its variables' labels and formats in the
    column metadata. Names come from the capture and are made safe: only the last part of a path
    is kept (d:\\mytext.txt becomes mytext.txt), nothing already in DIR is replaced (report (2).txt)
    unless --overwrite: then a file of the same name is, once the new one is complete.

    An incomplete or damaged attachment is left out with a warning and, in the default FAILFAST
    mode, the exit code is 1. With --mode PERMISSIVE a damaged data set is written with the rows
    that can be trusted plus a _corrupt_record row per damaged stretch (DROPMALFORMED: the trusted
    rows only), and the exit code is 0."""
    given = option_pairs(options)
    listing = load_of(paths, given, view="attachments", mode=mode)
    # From here the mode is the command's to set on each read (it may have come as -o mode=...).
    given = {key: value for key, value in given.items() if key.lower() != "mode"}
    attachments = reading.table(listing).to_pylist()
    files = file_rows(paths, given, listing.mode.name)
    extraction = Extraction(directory, overwrite)
    with writing(directory):
        os.makedirs(directory, exist_ok=True)
    progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=console(stderr=True), transient=True)
    progress.disable = not progress.console.is_terminal
    with progress:
        overall = progress.add_task("attachments", total=len(attachments))
        for attachment in attachments:
            progress.update(overall, description=attachment["name"] or attachment["attachment"])
            if attachment["kind"] in FILE_KINDS:
                write_file(extraction, attachment, files.get(attachment["attachment"]))
            elif attachment["kind"] == "dataset":
                if dataset_format != "none":
                    load = load_of(paths, given, view="dataset", attachment=attachment["attachment"],
                                   mode=listing.mode.name)
                    write_dataset(extraction, attachment, load, dataset_format, progress)
            else:  # a header no attachment can be read from
                extraction.skip(attachment, attachment["problem"])
            progress.advance(overall)
    report(extraction, as_json)
    if extraction.skipped and listing.mode.raises:
        raise Failure(f"{len(extraction.skipped)} attachment(s) left out because they are incomplete or damaged; "
                      f"--mode PERMISSIVE writes what can be trusted of a data set", DAMAGED)


def file_rows(paths: Sequence[str], given: Dict[str, str], mode: str) -> Dict[str, Dict[str, Any]]:
    """Each file attachment's row of the files view, by attachment key: its content, or (in
    ``corrupt``) why it cannot be read. The files view reads every file at once, and only its
    PERMISSIVE mode gives an unreadable file a row of its own rather than stopping at it; in
    FAILFAST, damage no attachment can claim still stops the extract, as it stops a read."""
    if mode == FAILFAST:
        try:
            reading.plan(load_of(paths, given, view="files", mode=FAILFAST))
        except CmiFormatError as e:
            if e.attachment is None:  # it may have held any attachment: nothing can be trusted
                raise
    load = load_of(paths, given, view="files", mode=PERMISSIVE)
    column = load.options.corrupt_column
    return {row["attachment"]: dict(row, corrupt=row[column]) for row in reading.table(load).to_pylist()}


def write_file(extraction: Extraction, attachment: Dict[str, Any], row: Optional[Dict[str, Any]]) -> None:
    if row is None or row["corrupt"] is not None:
        extraction.skip(attachment, row["corrupt"] if row is not None else attachment["problem"])
        return
    with writing(f"{attachment['name']!r} into {extraction.directory}"):
        chosen = write_new_file(extraction.directory, row["name"], row["content"], **extraction.target())
    extraction.written.append({"file": chosen, "attachment": attachment["attachment"], "name": attachment["name"],
                               "kind": attachment["kind"], "bytes": len(row["content"]), "rows": None,
                               "corrupt_rows": None, "corrupt_column": None})


def write_dataset(extraction: Extraction, attachment: Dict[str, Any], load: Load, file_format: str,
                  progress: Progress) -> None:
    """The dataset view of one attachment, streamed batch by batch into a new file."""
    reports, column = load.mode.reports, load.options.corrupt_column
    try:
        plan = reading.plan(load)
    except CmiFormatError as e:
        return skip_damaged(extraction, attachment, e)
    rows = corrupt_rows = 0
    task = progress.add_task(attachment["name"], total=attachment["observations"])
    try:
        # The name is chosen, and the file made, by the one function that makes names safe; it
        # removes the file when the block raises: a partial data set is worse than none.
        with contextlib.ExitStack() as new_file:
            with writing(f"into {extraction.directory}"):
                chosen, sink = new_file.enter_context(
                    open_new_file(extraction.directory, f"{attachment['name']}.{file_format}", **extraction.target()))
            with writing(chosen):
                writer = table_writer(sink, plan.schema, file_format)
            try:
                for batch in reading.batches(load, plan):
                    with writing(chosen):
                        writer.write_batch(batch)
                    rows += batch.num_rows
                    if reports:  # its rows of nulls that say what was lost
                        corrupt_rows += pc.count(batch.column(column)).as_py()
                    progress.advance(task, batch.num_rows)
            finally:
                with writing(chosen):
                    writer.close()
            size = sink.tell()
    except CmiFormatError as e:
        return skip_damaged(extraction, attachment, e)
    finally:
        progress.remove_task(task)
    extraction.written.append({"file": chosen, "attachment": attachment["attachment"], "name": attachment["name"],
                               "kind": "dataset", "bytes": size, "rows": rows - corrupt_rows,
                               "corrupt_rows": corrupt_rows if reports else None,
                               "corrupt_column": column if reports else None})


def skip_damaged(extraction: Extraction, attachment: Dict[str, Any], error: CmiFormatError) -> None:
    """Leave out the attachment the error is in; an error placed elsewhere (damage no attachment
    claims) is the capture's, and stops the extract as it stops a read."""
    if error.attachment != attachment["attachment"]:
        raise error
    extraction.skip(attachment, error.summary())


def table_writer(sink, schema: pa.Schema, file_format: str):
    if file_format == "parquet":
        import pyarrow.parquet as pq
        return pq.ParquetWriter(sink, schema)
    import pyarrow.csv as csv
    return csv.CSVWriter(sink, schema)


def report(extraction: Extraction, as_json: bool) -> None:
    for skipped in extraction.skipped:
        warn(f"left out {skipped['kind']} {skipped['name'] or skipped['attachment']}: {skipped['problem']}")
    if as_json:
        print_json({"directory": extraction.directory, "written": extraction.written, "skipped": extraction.skipped})
        return
    out = console()
    if extraction.written:
        shown = pa.Table.from_pylist([{
            "file": w["file"], "kind": w["kind"], "rows": w["rows"], "bytes": w["bytes"],
            "note": note(w)} for w in extraction.written],
            schema=pa.schema([("file", pa.string()), ("kind", pa.string()), ("rows", pa.int64()),
                              ("bytes", pa.int64()), ("note", pa.string())]))
        out.print(rich_table(shown, title=f"written to {extraction.directory}", max_chars=100))
    out.print(f"{len(extraction.written)} written, {len(extraction.skipped)} left out")


def note(written: Dict[str, Any]) -> Optional[str]:
    """What a reader of the listing should know about a written file."""
    notes = []
    if written["kind"] == "dataset":
        if os.path.splitext(written["file"])[0] != written["name"]:
            notes.append(f"data set {written['name']}")
    elif written["file"] != written["name"]:
        notes.append(f"named \"{written['name']}\" in the capture")
    if written["corrupt_rows"]:
        notes.append(f"{written['corrupt_rows']} damaged stretch(es) reported in {written['corrupt_column']}")
    return "; ".join(notes) or None
