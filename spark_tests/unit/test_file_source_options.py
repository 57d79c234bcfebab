"""Spark's file-source options on the sample captures: modifiedBefore and modifiedAfter choose files
by modification time, ignoreCorruptFiles leaves out files that are no capture (and only those),
ignoreMissingFiles leaves out files removed between planning and reading."""
import gzip
import os
import shutil
from datetime import datetime, timezone

import pytest

from cmi_datasource import read
from cmi_datasource.engine import paths
from cmi_datasource.engine.capture import Capture
from cmi_datasource.engine.options import ReadOptions
from cmi_datasource.engine.reading import load_of, plan, read_part
from cmi_datasource.errors import (CmiFormatError, CmiOptionError, CompressedStreamError,
                                   UnknownCaptureFormatError)
from cmi_datasource.storage import PathNotFoundError

CUSTOMERS_ROWS = 6  # the observations of WORK.CUSTOMERS in mixed_types.dmp


def _at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


def _files(**options):
    return [os.path.basename(f) for f in ReadOptions.parse(options).files()]


def _refusal(path, **options) -> str:
    with pytest.raises(CmiOptionError) as raised:
        ReadOptions.parse({"path": path, **{k.lower(): v for k, v in options.items()}})
    return str(raised.value)


# -- modifiedBefore, modifiedAfter ---------------------------------------------------------------

@pytest.fixture()
def dated(tmp_path, samples_dir):
    """Three real captures last modified in 2020, 2022 and 2024 (UTC), one in a subfolder."""
    when = {"mixed_types.dmp": "2020-06-01T12:00:00", "tibrv_capture.rv": "2022-06-01T12:00:00",
            "sub/nightly_batch.dmp": "2024-06-01T12:00:00"}
    for name, moment in when.items():
        target = tmp_path / name
        target.parent.mkdir(exist_ok=True)
        shutil.copy(os.path.join(samples_dir, os.path.basename(name)), target)
        os.utime(target, (_at(moment), _at(moment)))
    return str(tmp_path)


def test_modified_before_and_after_choose_files_by_their_modification_time(dated):
    assert _files(path=dated) == ["mixed_types.dmp", "tibrv_capture.rv", "nightly_batch.dmp"]
    assert _files(path=dated, modifiedBefore="2021-01-01T00:00:00") == ["mixed_types.dmp"]
    assert _files(path=dated, modifiedAfter="2021-01-01") == ["tibrv_capture.rv", "nightly_batch.dmp"]
    assert _files(path=dated, modifiedafter="2021-01-01 00:00:00", modifiedbefore="2023-01-01T00:00:00Z") == [
        "tibrv_capture.rv"]
    # Strictly before and after, as Spark compares.
    assert _files(path=dated, modifiedBefore="2020-06-01T12:00:00.000001") == ["mixed_types.dmp"]
    with pytest.raises(PathNotFoundError, match=r"modified before 2020-06-01T12:00:00Z \(modifiedBefore\)"):
        _files(path=dated, modifiedBefore="2020-06-01T12:00:00")


def test_a_timestamp_is_utc_unless_it_carries_an_offset(dated):
    # mixed_types.dmp was modified at 12:00 UTC: 14:00 at +02:00.
    assert _files(path=dated, modifiedBefore="2020-06-01T13:00:00") == ["mixed_types.dmp"]
    assert _files(path=dated, modifiedBefore="2020-06-01T14:00:01+02:00") == ["mixed_types.dmp"]
    with pytest.raises(PathNotFoundError, match=r"modified before 2020-06-01T11:00:00Z"):
        _files(path=dated, modifiedBefore="2020-06-01T13:00:00+02:00")


def test_they_apply_to_a_file_named_in_load_too_as_in_spark(dated):
    named = os.path.join(dated, "mixed_types.dmp")
    assert _files(path=named, modifiedBefore="2021-01-01") == ["mixed_types.dmp"]
    with pytest.raises(PathNotFoundError, match=r"modified after 2021-01-01T00:00:00Z \(modifiedAfter\)"):
        _files(path=named, modifiedAfter="2021-01-01")


def test_they_change_what_a_view_reads(dated):
    table = read(dated, view="attachments", modifiedAfter="2021-01-01T00:00:00")
    assert {os.path.basename(s) for s in table.column("source").to_pylist()} == {"tibrv_capture.rv",
                                                                                  "nightly_batch.dmp"}
    assert read(dated, modifiedBefore="2021-01-01T00:00:00").num_rows == CUSTOMERS_ROWS


def test_a_file_listed_then_removed_before_its_time_is_asked(dated, monkeypatch):
    listed = os.path.join(dated, "removed.dmp")  # what a listing saw, gone by the time it is stat'ed
    monkeypatch.setattr(paths, "list_capture_files", lambda given, recursive, matches: [listed, given])
    kept = os.path.join(dated, "mixed_types.dmp")
    with pytest.raises(PathNotFoundError, match="it was listed, then removed"):
        paths.resolve_paths([kept], modified_before=paths.instant("2030-01-01", "modifiedBefore"))
    assert paths.resolve_paths([kept], modified_before=paths.instant("2030-01-01", "modifiedBefore"),
                               ignore_missing=True) == [kept]


@pytest.mark.parametrize("options, expected", [
    ({"modifiedBefore": "yesterday"}, "option modifiedBefore must be a timestamp such as '2020-06-01T13:00:00' "
                                      "(UTC) or '2020-06-01T13:00:00+02:00', not 'yesterday'"),
    ({"modifiedAfter": "2020-13-01"}, "option modifiedAfter must be a timestamp"),
    ({"modifiedAfter": ""}, "option modifiedAfter must be a timestamp"),
    ({"modifiedBefore": "2020-01-01", "modifiedAfter": "2020-01-01T00:00:00Z"},
     "options modifiedBefore (2020-01-01T00:00:00Z) and modifiedAfter (2020-01-01T00:00:00Z) leave no time"),
    ({"modifiedBefor": "2020-01-01"}, "(did you mean 'modifiedBefore'?)"),
])
def test_bad_modification_times_name_the_option(samples_dir, options, expected):
    assert expected in _refusal(samples_dir, **options)


# -- ignoreCorruptFiles --------------------------------------------------------------------------

@pytest.fixture()
def with_strays(tmp_path, samples_dir):
    """A real capture beside a stray notes.txt and a gzip capture cut inside its first block."""
    shutil.copy(os.path.join(samples_dir, "mixed_types.dmp"), tmp_path)
    (tmp_path / "notes.txt").write_text("ask ops why the 02:00 transfer was resent\n")
    with open(os.path.join(samples_dir, "mixed_types.dmp"), "rb") as f:
        (tmp_path / "cut.dmp.gz").write_bytes(gzip.compress(f.read())[:20])
    return str(tmp_path)


def test_without_it_a_stray_file_fails_the_read_and_the_error_names_the_option(with_strays):
    os.remove(os.path.join(with_strays, "cut.dmp.gz"))
    with pytest.raises(UnknownCaptureFormatError) as raised:
        read(with_strays)
    assert raised.value.source.endswith("notes.txt")
    assert "option('ignoreCorruptFiles', 'true') leaves out the files that are no capture" in str(raised.value)


def test_a_compressed_file_that_breaks_before_its_format_is_known_fails_without_it(with_strays):
    with pytest.raises(CompressedStreamError):
        read(with_strays, pathGlobFilter="*.gz")


def test_with_it_the_captures_are_read_and_the_rest_left_out(with_strays, samples_dir):
    alone = read(os.path.join(samples_dir, "mixed_types.dmp"))
    assert read(with_strays, ignoreCorruptFiles=True).equals(alone)
    assert read(with_strays, ignoreCorruptFiles="TRUE", mode="DROPMALFORMED").equals(alone)


def test_the_files_left_out_are_shown_in_the_messages_and_attachments_views(with_strays):
    messages = read(with_strays, view="messages", ignoreCorruptFiles=True).to_pylist()
    left_out = {os.path.basename(r["source"]): r["problem"] for r in messages if r["index"] is None}
    assert set(left_out) == {"notes.txt", "cut.dmp.gz"}
    assert "left out of the read (option ignoreCorruptFiles): no capture format recognises this file" \
        in left_out["notes.txt"]
    assert "the gzip stream is cut short or damaged" in left_out["cut.dmp.gz"]
    assert {os.path.basename(r["source"]) for r in messages if r["index"] is not None} == {"mixed_types.dmp"}
    attachments = read(with_strays, view="attachments", ignoreCorruptFiles=True).to_pylist()
    assert [(os.path.basename(r["source"]), r["attachment"], r["complete"]) for r in attachments] == [
        ("mixed_types.dmp", "BAEE945E2359A76531B3D43625550C65", True), ("cut.dmp.gz", None, False),
        ("notes.txt", None, False)]


def test_permissive_reports_each_file_left_out_in_a_row(with_strays):
    rows = read(with_strays, ignoreCorruptFiles=True, mode="PERMISSIVE").to_pylist()
    reports = [r["_corrupt_record"] for r in rows if r["_corrupt_record"] is not None]
    assert len(rows) == CUSTOMERS_ROWS + 2
    assert sorted(os.path.basename(t.split(" left out")[0]) for t in reports) == ["cut.dmp.gz", "notes.txt"]


def test_a_file_not_of_the_format_named_is_a_corrupt_file(tmp_path, samples_dir):
    for name in ("mixed_types.dmp", "tibrv_capture.rv"):
        shutil.copy(os.path.join(samples_dir, name), tmp_path)
    with pytest.raises(CmiFormatError, match="the file may be no dmpmqmsg capture"):
        read(str(tmp_path), format="dmpmqmsg")
    assert read(str(tmp_path), format="dmpmqmsg", ignoreCorruptFiles=True).num_rows == CUSTOMERS_ROWS


def test_damage_inside_a_capture_is_for_the_read_modes_not_this_option(tmp_path, samples_dir):
    with open(os.path.join(samples_dir, "mixed_types.dmp"), "rb") as f:
        (tmp_path / "cut.dmp").write_bytes(f.read()[:5000])  # a real dump cut short
    with pytest.raises(CmiFormatError) as raised:
        read(str(tmp_path), ignoreCorruptFiles=True)
    assert raised.value.source.endswith("cut.dmp")
    assert read(str(tmp_path), view="attachments", ignoreCorruptFiles=True).column("source").to_pylist() == [
        str(tmp_path / "cut.dmp")]  # read, not left out


def test_when_every_file_is_left_out_the_first_ones_error_is_raised(with_strays):
    with pytest.raises(UnknownCaptureFormatError):
        read(os.path.join(with_strays, "notes.txt"), ignoreCorruptFiles=True)


def test_the_capture_of_a_read_that_ignores_them_is_not_the_one_of_a_read_that_does_not(with_strays):
    assert read(with_strays, ignoreCorruptFiles=True).num_rows == CUSTOMERS_ROWS
    with pytest.raises(CmiFormatError):  # not the capture opened just before, kept in memory
        read(with_strays)


@pytest.mark.parametrize("name", ["ignoreCorruptFiles", "ignoreMissingFiles"])
def test_bad_ignore_values_name_the_option(samples_dir, name):
    assert f"option {name} must be true or false, not 'sometimes'" in _refusal(samples_dir, **{name: "sometimes"})


# -- ignoreMissingFiles --------------------------------------------------------------------------

@pytest.fixture()
def two_captures(tmp_path, samples_dir):
    for name in ("mixed_types.dmp", "tibrv_capture.rv"):
        shutil.copy(os.path.join(samples_dir, name), tmp_path)
    return str(tmp_path / "mixed_types.dmp"), str(tmp_path / "tibrv_capture.rv")


def _planned_then_removed(source, removed, view="dataset", **options):
    """Every row of a read planned, then of its parts read once ``removed`` is deleted."""
    load = load_of(source, view, options)
    chosen = plan(load)
    os.remove(removed)
    return [row for part in chosen.parts for batch in read_part(load, part) for row in batch.to_pylist()]


def test_a_file_removed_after_planning_fails_the_read_without_it(two_captures):
    dump, _ = two_captures
    with pytest.raises(PathNotFoundError, match="does not exist"):
        _planned_then_removed(dump, dump)


def test_with_it_the_rows_of_the_removed_file_are_left_out(two_captures):
    dump, _ = two_captures
    assert _planned_then_removed(dump, dump, ignoreMissingFiles=True) == []


def test_permissive_says_which_observations_were_not_read(two_captures):
    dump, _ = two_captures
    rows = _planned_then_removed(dump, dump, ignoreMissingFiles=True, mode="PERMISSIVE", minPartitions=1)
    assert [r["_corrupt_record"] for r in rows] == [
        f"WORK.CUSTOMERS: observations 1 to {CUSTOMERS_ROWS} not read (option ignoreMissingFiles): "
        f"path {dump!r} does not exist"]


def test_the_messages_of_the_other_files_are_still_read(two_captures):
    dump, rv = two_captures
    every = read(list(two_captures), view="messages")
    rows = _planned_then_removed(list(two_captures), dump, "messages", ignoreMissingFiles=True)
    assert [r for r in rows if r["source"] == rv] == [r for r in every.to_pylist() if r["source"] == rv]
    [gone] = [r for r in rows if r["source"] == dump]
    assert gone["problem"] == f"{dump} left out of the read (option ignoreMissingFiles): path {dump!r} does not exist"


def test_without_it_the_messages_view_fails_too(two_captures):
    dump, _ = two_captures
    with pytest.raises(PathNotFoundError):
        _planned_then_removed(list(two_captures), dump, "messages")


def test_a_file_removed_between_listing_and_opening_is_left_out(two_captures):
    dump, rv = two_captures
    os.remove(dump)
    with pytest.raises(PathNotFoundError):
        Capture.of_files([dump, rv], use_index_cache=False)
    capture = Capture.of_files([dump, rv], use_index_cache=False, ignore_missing=True)
    assert capture.paths == [rv]
    assert [(f.path, f.option) for f in capture.left_out] == [(dump, "ignoreMissingFiles")]


def test_a_path_given_that_names_nothing_still_fails_as_in_spark(two_captures):
    dump, rv = two_captures
    with pytest.raises(PathNotFoundError, match="does not exist"):
        read([rv, dump + ".typo"], view="messages", ignoreMissingFiles=True)


def test_each_file_left_out_is_logged_as_spark_logs_the_files_it_skips(with_strays, caplog):
    read(with_strays, ignoreCorruptFiles=True, cacheDir="off")
    logged = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any(m.startswith(os.path.join(with_strays, "notes.txt") + " left out of the read") for m in logged)
