"""The ``cmi`` console command on the bundled samples: every subcommand's output checked against
the engine's own tables, its exit codes, its JSON, and that it starts no JVM (no pyspark)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import cmi_datasource as cmi
from cmi_datasource.cli import cli
from cmi_datasource.engine import reading, views
from appended import appended_three_times
from conftest import ROOT, SAMPLES
from damaged_nightly import HEADER_DAMAGE, header_damaged
from symlinks import VICTIM, links_out_of

NIGHTLY = os.path.join(SAMPLES, "nightly_batch.dmp")
FILES = os.path.join(SAMPLES, "files.dmp")
EXTERNAL = os.path.join(SAMPLES, "seed000_external_file.dmp")
COMMANDS = ("ls", "contents", "head", "messages", "extract", "convert")


def run(*args: str, code: int = 0):
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr, result.exception)
    return result


def run_json(*args: str, code: int = 0):
    return json.loads(run(*args, "--json", code=code).stdout)


class Tables:
    """The views of one capture as ``cmi.read`` gives them (the read path Spark uses)."""

    def __init__(self, *paths: str):
        self.paths = list(paths)

    def dataset_table(self, name: str, **options) -> pa.Table:
        return cmi.read(self.paths, dataset=name, **options)

    def __getattr__(self, view: str):
        if not view.endswith("_table"):
            raise AttributeError(view)
        return lambda: cmi.read(self.paths, view=view[:-len("_table")])


@pytest.fixture(scope="module")
def nightly() -> Tables:
    return Tables(NIGHTLY)


def damaged_copy(tmp_path) -> str:
    """nightly_batch.dmp cut short in the middle of FIN.DAILY_SALES's observations."""
    path = tmp_path / "cut.dmp"
    with open(NIGHTLY, "rb") as f:
        path.write_bytes(f.read()[:20000])
    return str(path)


# -- help ------------------------------------------------------------------------------------------

def test_help_lists_every_command_with_examples_and_exit_codes():
    text = run("--help").stdout
    for command in COMMANDS:
        assert f"  {command} " in text
    assert "cmi ls sample_queues/nightly_batch.dmp" in text
    for line in ("0  success", "1  the capture is damaged", "2  usage", "3  output",
                 "ls: an attachment has a problem or a stretch of a file is damaged", "several data sets to choose"):
        assert line in text


def test_the_packages_help_points_to_the_console_command():
    import pydoc
    text = pydoc.render_doc(cmi, renderer=pydoc.plaintext)
    assert "cmi --help" in text and 'cmi.read("sample_queues/nightly_batch.dmp"' in text


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_has_help_with_examples_on_the_samples(command):
    text = run(command, "--help").stdout
    assert "Examples:" in text
    # \b keeps each example on its own line, unwrapped
    assert any(line.strip().startswith(f"cmi {command} sample_queues/") for line in text.splitlines())


# -- ls ----------------------------------------------------------------------------------------------

def test_ls_lists_attachments_and_flags_the_incomplete_one():
    result = run("ls", NIGHTLY, code=1)  # FIN.RETURNS lost a message: the capture is damaged
    out = result.stdout
    returns = next(line for line in out.splitlines() if "FIN.RETURNS" in line)
    assert "no" in returns and "6/7" in returns and "missing [4]" in returns
    assert "nightly_batch.dmp" not in out  # one file: no source column
    sales = next(line for line in out.splitlines() if "FIN.DAILY_SALES" in line)
    assert "yes" in sales and "11/11" in sales and "543" in sales
    assert "sales_notes.txt" in out and "PROD.INVENTORY" in out
    assert "4 attachments, 3 complete, 1 with problems" in out
    assert result.stderr == "the capture is damaged: 1 attachment with a problem\n"


def test_ls_of_several_files_names_each_attachments_file():
    out = run("ls", NIGHTLY, os.path.join(SAMPLES, "files.dmp"), code=1).stdout
    assert "nightly_batch.dmp" in next(line for line in out.splitlines() if "FIN.RETURNS" in line)
    assert "files.dmp" in next(line for line in out.splitlines() if "logo.bin" in line)


def test_ls_json_is_the_attachments_view(nightly):
    document = run_json("ls", NIGHTLY, code=1)  # the document, and the exit code of a damaged capture
    expected = nightly.attachments_table()
    assert [a["name"] for a in document["attachments"]] == expected.column("name").to_pylist()
    returns = next(a for a in document["attachments"] if a["name"] == "FIN.RETURNS")
    assert returns["complete"] is False and "missing [4]" in returns["problem"]
    assert document["summary"] == {"attachments": 4, "complete": 3, "with_problems": 1, "damaged_stretches": 0}


def test_ls_of_a_whole_capture_exits_0():
    result = run("ls", os.path.join(SAMPLES, "mixed_types.dmp"))
    assert "1 attachments, 1 complete, 0 with problems" in result.stdout and result.stderr == ""


@pytest.mark.parametrize("how", HEADER_DAMAGE)
def test_ls_of_a_capture_with_a_damaged_header_exits_1_saying_so(tmp_path, how):
    path = header_damaged(str(tmp_path), how)
    result = run("ls", path, code=1)
    assert "PROD.INVENTORY" in result.stdout  # the listing first, whole
    if how == "correlid":  # no header row: the stretch is counted and placed
        assert "2 attachments, 1 complete, 1 with problems, 1 damaged stretches" in result.stdout
        assert result.stderr == ("the capture is damaged: 1 attachment with a problem and 1 damaged stretch "
                                 f"(the first stretch: file {path}, message 1, file offset "
                                 f"{open(path, encoding='latin-1').read().index('A COI ZZ')}; "
                                 "cmi messages lists them)\n")
    else:  # the header is a row of its own, with its problem
        assert "header" in result.stdout and "3 attachments, 1 complete, 2 with problems" in result.stdout
        assert result.stderr.startswith("the capture is damaged: 2 attachments with problems")
    assert run_json("ls", path, code=1)["summary"]["damaged_stretches"] == (1 if how != "cut" else 0)


def test_ls_reads_several_paths_as_one_load():
    names = [a["name"] for a in run_json("ls", FILES, EXTERNAL)["attachments"]]
    assert {"report.txt", "logo.bin", "d:\\mytext.txt"} <= set(names)


# -- contents ----------------------------------------------------------------------------------------

def test_contents_describes_every_data_set_like_proc_contents():
    out = run("contents", NIGHTLY).stdout
    assert "Data set FIN.DAILY_SALES" in out and "Daily sales by region" in out and "543" in out
    for label in ("Business day", "Sales region", "Net sales", "Units sold"):
        assert label in out
    assert "DOLLAR12.2" in out and "DATE9." in out
    assert "Data set FIN.RETURNS (incomplete)" in out and "missing [4]" in out


def test_contents_of_one_data_set_as_json_matches_the_variables_view(nightly):
    document = run_json("contents", NIGHTLY, "daily_sales")  # MEMBER alone, any case, as option dataset
    [entry] = document["datasets"]
    assert entry["name"] == "FIN.DAILY_SALES" and entry["observations"] == 543
    assert entry["label"] == "Daily sales by region"
    expected = [{k: v for k, v in row.items() if k not in ("dataset", "attachment")}
                for row in nightly.variables_table().to_pylist() if row["dataset"] == "FIN.DAILY_SALES"]
    assert entry["variables"] == expected


# -- head --------------------------------------------------------------------------------------------

def test_head_shows_the_first_rows_under_their_labels(nightly):
    out = run("head", NIGHTLY, "FIN.DAILY_SALES", "-n", "3").stdout
    assert "first 3 of 543 observations" in out
    header = next(line for line in out.splitlines() if "Business day" in line)
    assert "Net sales" in header and "AMOUNT" not in header
    expected = nightly.dataset_table("FIN.DAILY_SALES").slice(0, 3).to_pylist()
    body = [line for line in out.splitlines() if "2026-01-01" in line]
    assert len(body) == 3
    for line, row in zip(body, expected):
        assert row["REGION"] in line and f"{row['AMOUNT']:g}" in line and f"{row['UNITS']:g}" in line


def test_head_json_rows_equal_the_capture_table(nightly):
    document = run_json("head", NIGHTLY, "FIN.DAILY_SALES", "-n", "3")
    expected = nightly.dataset_table("FIN.DAILY_SALES").slice(0, 3).to_pylist()
    assert document["rows"] == json.loads(json.dumps(expected, default=str))
    assert [c["label"] for c in document["columns"]] == ["Business day", "Sales region", "Net sales", "Units sold"]
    assert document["observations"] == 543


def test_head_without_a_data_set_shows_the_one_the_capture_holds():
    """Issue 28: `cmi head FILE` said "Missing argument 'PATH...'" although the path was given."""
    mixed = os.path.join(SAMPLES, "mixed_types.dmp")
    document = run_json("head", mixed, "-n", "2")
    assert document["dataset"] == "WORK.CUSTOMERS" and document["observations"] == 6
    expected = cmi.read(mixed).slice(0, 2).to_pylist()
    assert [(r["ID"], r["NAME"], r["OPENED"]) for r in document["rows"]] == [
        (r["ID"], r["NAME"], r["OPENED"].isoformat()) for r in expected]
    assert "WORK.CUSTOMERS: first 2 of 6 observations" in run("head", mixed, "-n", "2").stdout


def test_head_without_a_data_set_lists_the_choices_one_a_line():
    result = run("head", NIGHTLY, code=2)
    lines = result.stderr.splitlines()
    assert lines[0].startswith("DatasetChoiceError: several datasets with different variables in [")
    assert lines[1] == f"  what to do: name one as DATASET, e.g. cmi head {NIGHTLY} FIN.DAILY_SALES"
    assert lines[2:] == ["  the data sets:",
                         "    FIN.DAILY_SALES  complete    attachment 0F822591EA62F28213D077827E09A774",
                         "    PROD.INVENTORY   complete    attachment 40DD390D1ABB1861D262F9896EB47E8D"]
    assert "Missing argument" not in result.stderr and result.stdout == ""


@pytest.mark.parametrize("command", ["head", "contents"])
def test_an_unknown_data_set_lists_every_data_set_the_same_way(command):
    lines = run(command, NIGHTLY, "NOPE", code=2).stderr.splitlines()
    assert lines[0].startswith("DatasetChoiceError: no dataset NOPE in [")
    assert lines[1] == f"  what to do: name one as DATASET, e.g. cmi {command} {NIGHTLY} FIN.DAILY_SALES"
    assert [line.split()[:2] for line in lines[3:]] == [
        ["FIN.DAILY_SALES", "complete"], ["PROD.INVENTORY", "complete"], ["FIN.RETURNS", "incomplete"]]


@pytest.mark.parametrize("how", HEADER_DAMAGE)
def test_a_data_set_whose_header_is_damaged_is_said_to_be_so_and_where(tmp_path, how):
    """Issue 28: a damaged header message made the data set vanish with "no dataset FIN.DAILY_SALES"."""
    path = header_damaged(str(tmp_path), how)
    for mode in ("PERMISSIVE", "DROPMALFORMED") + (("FAILFAST",) if how != "correlid" else ()):
        result = run("head", path, "FIN.DAILY_SALES", "--mode", mode, code=1)
        first, *rest = result.stderr.splitlines()
        assert first.startswith("AttachmentError: no readable header names dataset FIN.DAILY_SALES in ")
        assert "may hide its header" in first and "no dataset FIN" not in first
        assert rest[0].startswith("  what to do: option('view', 'attachments') lists every header")
        assert f"  file: {path}" in rest and "  message: 1" in rest
        assert any(line.startswith("  file offset: ") for line in rest)
    if how == "correlid":  # FAILFAST stops at damage no attachment claims, with where it is
        result = run("head", path, "FIN.DAILY_SALES", code=1)
        assert result.stderr.startswith("DumpSyntaxError: attribute COI") and "  message: 1" in result.stderr


def test_head_names_flag_shows_variable_names():
    out = run("head", NIGHTLY, "FIN.DAILY_SALES", "-n", "2", "--names").stdout
    assert "DAY" in out and "AMOUNT" in out and "Business day" not in out


def test_head_decodes_only_the_batches_it_shows(monkeypatch):
    read_batches = []

    class Counting(views.DatasetView):
        def read(self, part, load):
            for batch in super().read(part, load):
                read_batches.append(batch.num_rows)
                yield batch
    monkeypatch.setitem(views.VIEWS, "dataset", Counting())
    run("head", NIGHTLY, "FIN.DAILY_SALES", "-n", "3")
    assert read_batches == [3]


def test_head_permissive_ends_with_the_report_of_what_was_lost():
    document = run_json("head", NIGHTLY, "FIN.RETURNS", "--mode", "PERMISSIVE", "-n", "1000")
    reports = [r["_corrupt_record"] for r in document["rows"] if r["_corrupt_record"]]
    assert len(reports) == 1 and "sequenced message 4 is missing" in reports[0]


def without_message(tmp_path, source: str, index: int) -> str:
    """A copy of a dmpmqmsg dump whose block ``* Index <index>`` is deleted."""
    text = open(source, encoding="latin-1").read()
    start = text.index(f"\n* Index {index}\n")
    end = text.index("\n* Index ", start + 1)
    path = tmp_path / "lost.dmp"
    path.write_text(text[:start] + text[end:], encoding="latin-1")
    return str(path)


@pytest.mark.parametrize("mode", ["PERMISSIVE", "DROPMALFORMED"])
def test_head_and_extract_never_return_made_up_rows(tmp_path, mode):
    """Issue 26's reproducer: mixed_types.dmp without message 7 (the first of two observation
    messages). The read modes returned a row of garbage as a good row, and head exited 0."""
    clean = run_json("head", os.path.join(SAMPLES, "mixed_types.dmp"), "WORK.CUSTOMERS", "-n", "100")["rows"]
    path = without_message(tmp_path, os.path.join(SAMPLES, "mixed_types.dmp"), 7)
    shown = run_json("head", path, "WORK.CUSTOMERS", "--mode", mode, "-n", "100")["rows"]
    good = [{k: v for k, v in r.items() if k != "_corrupt_record"} for r in shown if not r.get("_corrupt_record")]
    # Message 8 holds the stream's end: its rows are placed from the end and are the clean read's last rows.
    assert good and good == clean[len(clean) - len(good):]
    reports = [r["_corrupt_record"] for r in shown if r.get("_corrupt_record")]
    lost = len(clean) - len(good)
    assert len(reports) == (1 if mode == "PERMISSIVE" else 0)
    if reports:
        assert "sequenced message 5 is missing" in reports[0]
        assert f"observations 1 to {lost} lost ({lost})" in reports[0]
    document = run_json("extract", path, str(tmp_path / "out"), "--mode", mode)
    written = pq.read_table(tmp_path / "out" / "WORK.CUSTOMERS.parquet").to_pylist()
    assert [r for r in written if not r.get("_corrupt_record")] == [
        r for r in cmi.read(path, mode=mode).to_pylist()
        if not r.get("_corrupt_record")]
    assert len([r for r in written if not r.get("_corrupt_record")]) == len(good) and document["skipped"] == []


# -- messages ----------------------------------------------------------------------------------------

def test_messages_lists_every_message(nightly):
    out = run("messages", NIGHTLY).stdout
    assert "33 messages, 0 with problems" in out
    assert run_json("messages", NIGHTLY)["count"] == nightly.messages_table().num_rows == 33


def test_messages_of_one_attachment_by_name():
    document = run_json("messages", NIGHTLY, "--attachment", "fin.returns")
    assert [m["sequence"] for m in document["messages"]] == [1, 2, 3, 5, 6, 7, 0]  # 4 was lost
    assert all(m["attachment_name"] == "FIN.RETURNS" and "payload" not in m for m in document["messages"])


def test_messages_limit_shows_the_first_rows_and_counts_all():
    out = run("messages", NIGHTLY, "-n", "2").stdout
    assert "33 messages (2 shown)" in out
    assert "2026-11-20 22:00:00.00" in out and "2026-11-20 22:00:01.00" in out  # MQ PutDate and PutTime
    assert "header" in out and "application" in out and "2026-11-20 22:00:02" not in out


# -- extract -----------------------------------------------------------------------------------------

def test_extract_writes_files_and_data_sets_and_leaves_out_the_incomplete_one(tmp_path, nightly):
    result = run("extract", NIGHTLY, str(tmp_path), code=1)  # FAILFAST: something was left out
    assert "left out dataset FIN.RETURNS" in result.stderr and "missing [4]" in result.stderr
    assert sorted(os.listdir(tmp_path)) == ["FIN.DAILY_SALES.parquet", "PROD.INVENTORY.parquet", "sales_notes.txt"]
    [notes] = [r for r in nightly.files_table().to_pylist() if r["name"] == "sales_notes.txt"]
    assert (tmp_path / "sales_notes.txt").read_bytes() == notes["content"]
    assert (tmp_path / "sales_notes.txt").read_text() == notes["text"] == (
        "Sales extract, first half of 2026.\nAmounts are net of returns; see FIN.RETURNS.\n"
        "Regions: NORTH, SOUTH, WEST.\n")
    for name in ("FIN.DAILY_SALES", "PROD.INVENTORY"):
        expected = nightly.dataset_table(name)
        written = pq.read_table(tmp_path / f"{name}.parquet")
        assert written.equals(expected)
        assert written.schema.field(0).metadata == expected.schema.field(0).metadata  # labels, formats


def test_extract_csv_reads_back_equal(tmp_path, nightly):
    run("extract", NIGHTLY, str(tmp_path), "--datasets", "csv", code=1)
    expected = nightly.dataset_table("FIN.DAILY_SALES")
    written = pacsv.read_csv(tmp_path / "FIN.DAILY_SALES.csv",
                             convert_options=pacsv.ConvertOptions(column_types=expected.schema))
    assert written.equals(expected.cast(pa.schema([f.remove_metadata() for f in expected.schema])))


def test_extract_permissive_writes_the_trusted_rows_and_the_report(tmp_path):
    document = run_json("extract", NIGHTLY, str(tmp_path), "--mode", "PERMISSIVE")
    assert document["skipped"] == []
    returns = pq.read_table(tmp_path / "FIN.RETURNS.parquet")
    corrupt = returns.column("_corrupt_record").to_pylist()
    assert sum(c is not None for c in corrupt) == 1 and corrupt[-1].startswith("FIN.RETURNS: sequenced message 4")
    [entry] = [w for w in document["written"] if w["name"] == "FIN.RETURNS"]
    assert entry["rows"] == returns.num_rows - 1 and entry["corrupt_rows"] == 1
    assert returns.equals(cmi.read(NIGHTLY, dataset="FIN.RETURNS", mode="PERMISSIVE"))


def test_extract_files_byte_exact_under_safe_names(tmp_path):
    document = run_json("extract", FILES, EXTERNAL, str(tmp_path))
    contents = {r["name"]: r["content"] for r in cmi.read([FILES, EXTERNAL], view="files").to_pylist()}
    by_name = {w["name"]: w["file"] for w in document["written"]}
    assert by_name["d:\\mytext.txt"] == "mytext.txt"
    for name, file in by_name.items():
        assert (tmp_path / file).read_bytes() == contents[name]
    assert {"report.txt", "logo.bin"} <= set(by_name.values())
    out = run("extract", EXTERNAL, str(tmp_path)).stdout  # again: nothing replaced
    assert "mytext (2).txt" in out and 'named "d:\\mytext.txt" in the capture' in out
    assert (tmp_path / "mytext.txt").read_bytes() == contents["d:\\mytext.txt"]


def test_extract_again_with_overwrite_replaces_its_files_and_piles_up_no_copies(tmp_path, nightly):
    """Issue 28: running extract twice piled up "(2)" copies."""
    out = tmp_path / "out"
    run("extract", FILES, EXTERNAL, str(out))
    run("extract", NIGHTLY, str(out), "--mode", "PERMISSIVE")
    before = sorted(os.listdir(out))
    (out / "report.txt").write_bytes(b"edited since")
    (out / "FIN.DAILY_SALES.parquet").write_bytes(b"not parquet")
    document = run_json("extract", FILES, EXTERNAL, str(out), "--overwrite")
    run("extract", NIGHTLY, str(out), "--mode", "PERMISSIVE", "--overwrite")
    assert sorted(os.listdir(out)) == before and not any("(2)" in name for name in before)
    contents = {r["name"]: r["content"] for r in cmi.read([FILES, EXTERNAL], view="files").to_pylist()}
    assert {w["name"]: w["file"] for w in document["written"]}["report.txt"] == "report.txt"
    assert (out / "report.txt").read_bytes() == contents["report.txt"]
    assert pq.read_table(out / "FIN.DAILY_SALES.parquet").equals(
        nightly.dataset_table("FIN.DAILY_SALES", mode="PERMISSIVE"))


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
def test_extract_overwrite_never_writes_through_a_symlink_or_over_a_directory(tmp_path):
    out, outside = links_out_of(tmp_path, {"report.txt": "victim"})  # the name a file of the capture has
    (out / "logo.bin").mkdir()
    document = run_json("extract", FILES, str(out), "--overwrite")
    files = {w["name"]: w["file"] for w in document["written"]}
    assert files["report.txt"] == "report.txt" and not os.path.islink(out / "report.txt")
    assert files["logo.bin"] == "logo (2).bin" and (out / "logo.bin").is_dir()
    assert (outside / "victim").read_bytes() == VICTIM and os.listdir(outside) == ["victim"]


def test_extract_without_data_sets(tmp_path):
    run("extract", NIGHTLY, str(tmp_path), "--datasets", "none")
    assert os.listdir(tmp_path) == ["sales_notes.txt"]


# -- errors and exit codes -----------------------------------------------------------------------------

def test_missing_path_is_a_usage_error(tmp_path):
    result = run("ls", str(tmp_path / "nope.dmp"), code=2)
    assert result.stderr.startswith("PathNotFoundError: path") and "does not exist" in result.stderr
    assert "  what to do: check the path" in result.stderr


def test_unknown_option_is_a_usage_error():
    assert "did you mean 'dataset'" in run("ls", NIGHTLY, "-o", "datset=x", code=2).stderr
    assert "set by the command" in run("head", NIGHTLY, "FIN.DAILY_SALES", "-o", "dataset=x", code=2).stderr
    assert "no attachment" in run("messages", NIGHTLY, "--attachment", "NOPE", code=2).stderr


def test_damaged_capture_in_failfast_exits_1_with_the_error_text(tmp_path):
    cut = damaged_copy(tmp_path)
    result = run("head", cut, "FIN.DAILY_SALES", code=1)
    first, *rest = result.stderr.splitlines()
    assert first.startswith("IncompleteAttachmentError: attachment") and "FIN.DAILY_SALES" in first
    assert rest[0].startswith("  what to do: ") and f"  file: {cut}" in rest
    assert "Traceback" not in result.stderr
    listed = run("ls", cut, code=1)  # the listing is printed whole, and says the capture is damaged
    assert "FIN.DAILY_SALES" in listed.stdout and listed.stderr.startswith("the capture is damaged")


def test_unwritable_destination_exits_3(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = run("extract", FILES, str(blocker / "out"), code=3)
    assert result.stderr.startswith("cannot write")
    assert "exists" in run("convert", NIGHTLY, "FIN.DAILY_SALES", str(blocker), code=3).stderr


def test_convert_quiets_the_session_it_starts_with_the_log_configuration_the_package_carries():
    """pip users have no conf/: the package carries the repository's log4j2 configuration (the
    wheel's package data, pyproject.toml), and convert's own session is started with it."""
    import importlib.resources
    from cmi_datasource.cli import convert
    carried = importlib.resources.files("cmi_datasource.cli") / convert.LOG_CONFIGURATION
    with open(os.path.join(ROOT, "conf", "log4j2.properties"), encoding="utf-8") as f:
        assert carried.read_text(encoding="utf-8") == f.read()  # one configuration: the tests' is the users'
    settings = convert.quiet_session_settings("/x/spark-log4j2.properties")
    assert settings["spark.driver.extraJavaOptions"] == "-Dlog4j2.configurationFile=/x/spark-log4j2.properties"
    assert settings["spark.ui.showConsoleProgress"] == "false"


def test_convert_lists_the_data_sets_when_none_is_chosen():
    lines = run("convert", NIGHTLY, "nope", "out dir", code=2).stderr.splitlines()
    assert lines[0].startswith("DatasetChoiceError: no dataset NOPE")
    assert lines[1] == f"  what to do: name one as DATASET, e.g. cmi convert {NIGHTLY} FIN.DAILY_SALES 'out dir'"


def test_convert_checks_the_data_set_before_starting_spark():
    # No Spark session is started (the subprocess test shows pyspark is not even imported).
    result = run("convert", NIGHTLY, "FIN.RETURNS", "out", code=1)
    assert result.stderr.startswith("IncompleteAttachmentError")


# -- as a program ----------------------------------------------------------------------------------------

def test_console_commands_do_not_import_pyspark(tmp_path):
    """ls, contents, head, messages and extract answer without pyspark (no JVM)."""
    script = (
        "import sys\n"
        "from cmi_datasource.cli import main\n"
        f"for args in (['ls', {NIGHTLY!r}], ['contents', {NIGHTLY!r}], ['head', {NIGHTLY!r}, 'FIN.DAILY_SALES'],\n"
        f"             ['messages', {NIGHTLY!r}], ['extract', {FILES!r}, {str(tmp_path / 'x')!r}],\n"
        f"             ['convert', {NIGHTLY!r}, 'NOPE', 'out']):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit as e:\n"
        "        print(args[0], e.code, file=sys.stderr)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=ROOT), timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stderr
    assert [line.split()[:2] for line in done.stderr.splitlines() if line.split()[0] in COMMANDS] == [
        ["ls", "1"], ["contents", "0"], ["head", "0"], ["messages", "0"], ["extract", "0"], ["convert", "2"]]


def test_python_dash_m_exit_codes_and_stderr(tmp_path):
    def program(*args):
        return subprocess.run([sys.executable, "-m", "cmi_datasource.cli", *args], cwd=ROOT, capture_output=True,
                              text=True, env=dict(os.environ, PYTHONPATH=ROOT), timeout=120)
    done = program("head", damaged_copy(tmp_path), "FIN.DAILY_SALES")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("IncompleteAttachmentError: ") and "Traceback" not in done.stderr
    done = program("ls", str(tmp_path / "missing"))
    assert done.returncode == 2 and "does not exist" in done.stderr
    done = program("ls", "--bogus", NIGHTLY)
    assert done.returncode == 2 and "No such option" in done.stderr


def test_the_installed_console_command_runs():
    """The `cmi` entry point pyproject.toml declares, as `make test` installs it beside this Python."""
    command = os.path.join(os.path.dirname(sys.executable), "cmi")
    assert os.access(command, os.X_OK), "the package is not installed in this environment: run make test"
    done = subprocess.run([command, "ls", NIGHTLY, "--json"], cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=ROOT), timeout=120)
    assert done.returncode == 1, done.stderr  # FIN.RETURNS lost a message
    assert json.loads(done.stdout)["summary"] == {"attachments": 4, "complete": 3, "with_problems": 1,
                                                  "damaged_stretches": 0}


# -- packed reads (issue 27) ---------------------------------------------------------------------

@pytest.mark.parametrize("options", [[], ["-o", "minPartitions=1"]])
def test_head_and_contents_count_every_attachment_of_a_packed_read(tmp_path, options):
    """Issue 27's reproducer: Spark read 18 rows; head said 6 observations (0 with
    minPartitions=1) and contents described one attachment, from plan internals a packed
    partition does not have."""
    folder = appended_three_times(tmp_path / "appended")
    given = dict(option.split("=", 1) for option in options[1::2])
    plan = reading.plan(reading.load_of(folder, options=given))
    assert any(len(part.attachments) > 1 for part in plan.parts)  # small slices packed together
    assert cmi.read(folder, **given).num_rows == 18
    head = run_json("head", folder, "WORK.DATA", "-n", "100", *options)
    assert head["observations"] == 18 and len(head["rows"]) == 18
    described = run_json("contents", folder, "WORK.DATA", *options)["datasets"]
    assert len(described) == 3 and [d["observations"] for d in described] == [6, 6, 6]
