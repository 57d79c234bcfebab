"""Safe extraction (cmi_datasource.safe_paths): an attachment name from a capture is untrusted; whatever
it is, the file written lands inside the target directory, under a plain name, and replaces nothing."""
from __future__ import annotations

import os
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cmi_datasource.safe_paths import MAX_NAME_BYTES, UNNAMED, open_new_file, safe_name, write_new_file
from symlinks import VICTIM, links_out_of

# A link to a file outside, a dangling one (O_CREAT alone would create its target), a link to a folder.
LINKS = {"passwd": "victim", "dangling": "missing", "dir": ""}


def inside(directory, relative) -> str:
    """The real path of ``relative`` under ``directory``, asserted to be a direct child of it."""
    real_dir = os.path.realpath(directory)
    path = os.path.realpath(os.path.join(directory, relative))
    assert os.path.dirname(path) == real_dir, (relative, path)
    return path


@pytest.mark.parametrize("name, expected", [
    ("../../etc/passwd", "passwd"),
    ("..\\..\\windows\\win.ini", "win.ini"),
    ("/abs", "abs"),
    ("/etc/cron.d/evil", "evil"),
    ("C:\\x", "x"),
    ("C:x", "C_x"),  # drive-relative on Windows: the colon goes
    ("C:", "C_"),
    ("\\\\server\\share\\x", "x"),
    ("\\\\?\\C:\\dir\\f.txt", "f.txt"),
    ("//server/share/y.csv", "y.csv"),
    ("a\x00b", "a_b"),
    ("a\nb\rc\td\x1b[31m\x7f\x85e", "a_b_c_d_[31m__e"),
    ("invoice\u202etxt.exe", "invoice_txt.exe"),  # a bidi override would show 'exe.txt'
    ("a:b|c?d*e<f>g\"h", "a_b_c_d_e_f_g_h"),
    ("fullwidth\uff0fslash\uff1acolon", "fullwidth_slash_colon"),  # folds to / and : in NFKC
    ("", UNNAMED),
    (None, UNNAMED),
    (".", UNNAMED),
    ("..", UNNAMED),
    ("...", UNNAMED),
    (". .", UNNAMED),
    ("../", UNNAMED),
    ("a/b/", "b"),
    ("CON", "_CON"),
    ("con", "_con"),
    ("NUL", "_NUL"),
    ("nul.txt", "_nul.txt"),
    ("COM1", "_COM1"),
    ("lpt9.log", "_lpt9.log"),
    ("AUX.tar.gz", "_AUX.tar.gz"),
    ("CON .txt", "_CON .txt"),
    ("console", "console"),  # only the exact device names
    ("COM10", "COM10"),
    ("a.txt.", "a.txt"),
    ("a.txt. . ", "a.txt"),
    ("  b  ", "b"),
    ("report.txt", "report.txt"),
    (".profile", ".profile"),
    ("e\u0301t\u00e9.txt", "\u00e9t\u00e9.txt"),  # NFC
    (b"caf\xc3\xa9.txt", "caf\u00e9.txt"),
    (b"\xff.bin", "\ufffd.bin"),
])
def test_safe_name(name, expected):
    assert safe_name(name) == expected


def test_a_very_long_name_is_cut_in_its_stem_keeping_the_extension():
    name = safe_name("x" * 1000 + ".csv")
    assert name.endswith(".csv") and name.startswith("xxx")
    assert len(name.encode("utf-8")) <= MAX_NAME_BYTES
    wide = safe_name("\u00e9" * 300 + ".txt")  # two bytes a character: cut at a character boundary
    assert wide.endswith(".txt") and set(wide[:-4]) == {"\u00e9"} and len(wide.encode()) <= MAX_NAME_BYTES


@pytest.mark.parametrize("name", ["../../etc/passwd", "/abs", "C:\\x", "\\\\server\\share\\x", "a\x00b",
                                  "", ".", "..", "CON", "x" * 400, "a\x01\x02b"])
def test_each_hostile_name_is_written_inside_the_directory(tmp_path, name):
    target = tmp_path / "out"
    chosen = write_new_file(target, name, b"payload")
    assert os.listdir(target) == [chosen]
    with open(inside(target, chosen), "rb") as f:
        assert f.read() == b"payload"
    assert sorted(os.listdir(tmp_path)) == ["out"]  # nothing beside it


def test_names_that_map_to_one_file_get_numbered_and_never_overwrite(tmp_path):
    written = [write_new_file(tmp_path, n, n.encode()) for n in
               ["a/report.txt", "b/report.txt", "../report.txt", "report.txt."]]
    assert written == ["report.txt", "report (2).txt", "report (3).txt", "report (4).txt"]
    for name, source in zip(written, ["a/report.txt", "b/report.txt", "../report.txt", "report.txt."]):
        assert (tmp_path / name).read_bytes() == source.encode()


def test_names_that_differ_only_in_case_stay_apart_even_on_a_case_sensitive_disk(tmp_path):
    first = write_new_file(tmp_path, "Data.CSV", b"1")
    second = write_new_file(tmp_path, "data.csv", b"2")
    assert (first, second) == ("Data.CSV", "data (2).csv")
    assert (tmp_path / first).read_bytes() == b"1" and (tmp_path / second).read_bytes() == b"2"


def test_names_without_extension_and_hidden_names_are_numbered_too(tmp_path):
    assert [write_new_file(tmp_path, "README", b"") for _ in range(2)] == ["README", "README (2)"]
    assert [write_new_file(tmp_path, ".env", b"") for _ in range(2)] == [".env", ".env (2)"]
    assert [write_new_file(tmp_path, "", b"") for _ in range(2)] == [UNNAMED, UNNAMED + " (2)"]


def test_a_long_name_stays_within_the_limit_when_numbered(tmp_path):
    names = [write_new_file(tmp_path, "y" * 500 + ".dat", b"") for _ in range(3)]
    assert len(set(names)) == 3 and names[2].endswith(" (3).dat")
    assert all(len(n.encode()) <= MAX_NAME_BYTES for n in names)


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
def test_an_existing_symlink_is_never_followed_or_replaced(tmp_path):
    target, outside = links_out_of(tmp_path, LINKS)
    assert write_new_file(target, "../../passwd", b"evil") == "passwd (2)"
    assert write_new_file(target, "dangling", b"evil") == "dangling (2)"
    assert write_new_file(target, "dir", b"evil") == "dir (2)"
    assert (outside / "victim").read_bytes() == VICTIM
    assert sorted(os.listdir(outside)) == ["victim"]
    assert os.path.islink(target / "passwd") and os.path.islink(target / "dangling")


def test_an_existing_file_or_folder_is_never_replaced(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"old")
    (tmp_path / "sub").mkdir()
    assert write_new_file(tmp_path, "a.txt", b"new") == "a (2).txt"
    assert write_new_file(tmp_path, "sub", b"new") == "sub (2)"
    assert (tmp_path / "a.txt").read_bytes() == b"old" and (tmp_path / "sub").is_dir()


def test_the_directory_is_made_when_missing_and_the_file_is_complete(tmp_path):
    content = os.urandom(1 << 20)
    chosen = write_new_file(tmp_path / "new" / "deeper", "blob.bin", content)
    assert (tmp_path / "new" / "deeper" / chosen).read_bytes() == content


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(), st.text(alphabet=st.sampled_from(list("./\\:C \x00.\u202e\uff0fab")), max_size=30),
                 st.binary()))
def test_any_name_is_written_inside_the_directory(name):
    with tempfile.TemporaryDirectory() as root:
        target = os.path.join(root, "out")
        first = write_new_file(target, name, b"one")
        second = write_new_file(target, name, b"two")  # the same name again: a new file beside it
        assert first != second
        for chosen, content in ((first, b"one"), (second, b"two")):
            assert chosen == os.path.basename(chosen) and chosen not in ("", ".", "..")
            assert "/" not in chosen and "\\" not in chosen and "\x00" not in chosen
            assert len(chosen.encode("utf-8")) <= MAX_NAME_BYTES
            with open(inside(target, chosen), "rb") as f:
                assert f.read() == content
        assert sorted(os.listdir(target)) == sorted([first, second])
        # Run again with replace, as an extract keeping what it has written: the same names, new contents.
        assert write_new_file(target, name, b"three", replace=True) == first
        assert write_new_file(target, name, b"four", replace=True, keep={first}) == second
        for chosen, content in ((first, b"three"), (second, b"four")):
            with open(inside(target, chosen), "rb") as f:
                assert f.read() == content
        assert sorted(os.listdir(target)) == sorted([first, second])
        assert os.listdir(root) == ["out"]


def test_a_file_written_piece_by_piece_is_removed_when_the_writing_fails(tmp_path):
    with open_new_file(tmp_path, "../part.parquet") as (chosen, out):
        out.write(b"one")
        out.write(b"two")
    assert chosen == "part.parquet" and (tmp_path / chosen).read_bytes() == b"onetwo"
    with pytest.raises(RuntimeError, match="source failed"):
        with open_new_file(tmp_path, "part.parquet") as (chosen, out):
            out.write(b"half")
            raise RuntimeError("source failed")
    assert chosen == "part (2).parquet" and sorted(os.listdir(tmp_path)) == ["part.parquet"]


# -- replace (cmi extract --overwrite) ---------------------------------------------------------------

def test_replace_writes_over_a_file_of_the_name_chosen_and_leaves_no_hidden_file(tmp_path):
    (tmp_path / "report.txt").write_bytes(b"old and longer")
    (tmp_path / "other.txt").write_bytes(b"other")
    assert write_new_file(tmp_path, "../report.txt", b"new", replace=True) == "report.txt"
    assert (tmp_path / "report.txt").read_bytes() == b"new"
    assert sorted(os.listdir(tmp_path)) == ["other.txt", "report.txt"]
    assert write_new_file(tmp_path, "fresh.bin", b"x", replace=True) == "fresh.bin"  # nothing to replace


def test_running_twice_with_replace_gives_the_same_names_and_no_copies(tmp_path):
    names = ["a/report.txt", "b/report.txt", "CON", "x" * 400 + ".csv"]
    first = [write_new_file(tmp_path, n, b"1" + n.encode()) for n in names]
    kept: set = set()
    for n in names:  # as an extract run again keeps what it has written so far
        kept.add(write_new_file(tmp_path, n, b"2" + n.encode(), replace=True, keep=kept))
    assert first[:2] == ["report.txt", "report (2).txt"] and sorted(kept) == sorted(first)
    assert sorted(os.listdir(tmp_path)) == sorted(first)
    for name, chosen in zip(names, first):
        assert (tmp_path / chosen).read_bytes() == b"2" + name.encode()


def test_replace_never_replaces_a_name_to_keep_or_a_directory(tmp_path):
    (tmp_path / "report.txt").write_bytes(b"written by this run")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "inner").write_bytes(b"inside")
    assert write_new_file(tmp_path, "report.txt", b"next", replace=True, keep={"report.txt"}) == "report (2).txt"
    assert (tmp_path / "report.txt").read_bytes() == b"written by this run"
    assert write_new_file(tmp_path, "sub", b"file", replace=True) == "sub (2)"
    assert (tmp_path / "sub" / "inner").read_bytes() == b"inside"


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
def test_replace_replaces_a_symlink_itself_and_never_writes_through_it(tmp_path):
    target, outside = links_out_of(tmp_path, LINKS)  # a link to a folder too is replaced, the folder untouched
    for name in ("../../passwd", "dangling", "dir"):
        chosen = write_new_file(target, name, b"evil", replace=True)
        assert chosen == os.path.basename(name)
        assert not os.path.islink(target / chosen) and (target / chosen).read_bytes() == b"evil"
    assert (outside / "victim").read_bytes() == VICTIM and sorted(os.listdir(outside)) == ["victim"]
    assert sorted(os.listdir(target)) == ["dangling", "dir", "passwd"]


def test_a_failed_replacing_write_leaves_the_old_file_as_it_was(tmp_path):
    (tmp_path / "part.parquet").write_bytes(b"the old content")
    with pytest.raises(RuntimeError, match="source failed"):
        with open_new_file(tmp_path, "part.parquet", replace=True) as (chosen, out):
            out.write(b"half")
            raise RuntimeError("source failed")
    assert chosen == "part.parquet" and (tmp_path / "part.parquet").read_bytes() == b"the old content"
    assert os.listdir(tmp_path) == ["part.parquet"]  # the hidden partial file is gone

