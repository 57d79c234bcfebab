"""The disk cache (cmi_datasource/cache.py): one private directory, checked before each use, whose
entries are authenticated before anything is unpickled (issue 26, finding 7: a cache folder in
the shared temp dir that whoever made it first could fill with pickles run by our readers)."""
from __future__ import annotations

import logging
import os
import pickle
import stat
import tempfile

import pytest
from click.testing import CliRunner

from cmi_datasource import cache
from cmi_datasource.cli import cli
from cmi_datasource.engine import capture, index, planned
from cmi_datasource.engine.load import Load
from cmi_datasource.engine.options import ReadOptions, SaveOptions
from cmi_datasource.errors import CmiOptionError
from cmi_datasource.transports import capture_format

SAMPLE = "nightly_batch.dmp"
DATASET = "FIN.DAILY_SALES"


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """No cache setting from the environment, a home and a temp dir of the test's own, no
    warning given yet, nothing kept in memory: every lookup goes to the disk."""
    home, temp = tmp_path / "home", tmp_path / "temp"
    home.mkdir()
    temp.mkdir()
    monkeypatch.delenv(cache.ENVIRONMENT_VARIABLE, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setattr(cache, "_WARNED", set())
    monkeypatch.setattr(index, "DISK_CACHED_FILE_BYTES", 0)  # the sample's index goes to disk too
    forget()
    yield tmp_path
    forget()


def forget() -> None:
    """What a new Python worker holds in memory: nothing."""
    for memory in (index._MEMORY, planned._MEMORY, capture._OPEN):
        memory.clear()


def read(samples_dir, **options) -> list:
    """Plan a read of the sample as a Spark planning worker does: its schema and partitions."""
    o = Load(ReadOptions.parse({"path": os.path.join(samples_dir, SAMPLE), "dataset": DATASET, **options}))
    names = planned.schema(o).names
    assert planned.planned(o).parts
    return names


def entries(directory) -> list:
    return sorted(n for n in os.listdir(directory) if n.endswith(cache.ENTRY_SUFFIX))


def private(path) -> bool:
    found = os.lstat(path)
    return stat.S_ISDIR(found.st_mode) and found.st_uid == os.getuid() and not found.st_mode & 0o077


def as_another_user(monkeypatch, path) -> None:
    """``path`` belongs to someone else: given away for real when the tests run as root,
    else this process takes another uid in the cache's eyes."""
    if os.getuid() == 0:
        os.chown(path, 65534, 65534)
    else:
        uid = os.getuid() + 1
        monkeypatch.setattr(os, "getuid", lambda: uid)


def test_a_read_makes_its_cache_private_in_the_home_whatever_the_umask(fresh, samples_dir):
    expected = read(samples_dir)  # default: ~/.cache/cmi-datasource
    directory = fresh / "home" / ".cache" / "cmi-datasource"
    assert private(directory) and stat.S_IMODE(os.lstat(directory).st_mode) == 0o700
    assert len(entries(directory)) == 2  # the sample's index and the load's plan
    for name in os.listdir(directory):  # entries and the key: this user's, read-write for it alone
        found = os.lstat(directory / name)
        assert stat.S_ISREG(found.st_mode) and stat.S_IMODE(found.st_mode) == 0o600
    # A permissive umask adds nothing; one that takes the owner's bits is overridden.
    for umask in (0o000, 0o277):
        made = fresh / f"umask-{umask:o}"
        previous = os.umask(umask)
        try:
            with cache.chosen(str(made)):
                cache.store(("umask", umask), "kept")
        finally:
            os.umask(previous)
        assert stat.S_IMODE(os.lstat(made).st_mode) == 0o700
        with cache.chosen(str(made)):
            assert cache.load(("umask", umask), str) == "kept"
    forget()
    assert read(samples_dir) == expected


def test_without_a_home_the_cache_is_a_private_folder_of_the_temp_dir(fresh, samples_dir, monkeypatch):
    monkeypatch.setenv("HOME", str(fresh / "no-such-home"))
    read(samples_dir)
    directory = fresh / "temp" / f"cmi-datasource-{os.getuid()}"
    assert private(directory) and len(entries(directory)) == 2
    assert not (fresh / "no-such-home").exists()


def test_a_world_writable_folder_planted_under_the_cache_name_is_not_used(fresh, samples_dir, monkeypatch, caplog):
    # Someone else made the temp dir's folder first, open to all: a read writes nothing into
    # it, reads nothing from it, still succeeds, and says why once.
    monkeypatch.setenv("HOME", str(fresh / "no-such-home"))
    planted = fresh / "temp" / f"cmi-datasource-{os.getuid()}"
    planted.mkdir()
    os.chmod(planted, 0o777)
    with caplog.at_level(logging.WARNING, logger="cmi_datasource.cache"):
        names = read(samples_dir)
        forget()
        assert read(samples_dir) == names
    assert os.listdir(planted) == []
    warnings = [r.getMessage() for r in caplog.records if r.name == "cmi_datasource.cache"]
    assert len(warnings) == 1 and "mode 0777" in warnings[0] and str(planted) in warnings[0]


def test_a_planted_default_folder_falls_back_to_the_private_temp_one(fresh, samples_dir):
    planted = fresh / "home" / ".cache" / "cmi-datasource"
    planted.mkdir(parents=True)
    os.chmod(planted, 0o755)  # others may open it: our plans would be readable
    read(samples_dir)
    assert os.listdir(planted) == []
    assert len(entries(fresh / "temp" / f"cmi-datasource-{os.getuid()}")) == 2


def test_a_folder_of_another_user_is_not_used(fresh, samples_dir, monkeypatch):
    theirs = fresh / "theirs"
    theirs.mkdir(mode=0o700)
    as_another_user(monkeypatch, theirs)
    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, str(theirs))
    read(samples_dir)
    assert os.listdir(theirs) == []
    assert cache.survey()[1][0].state == "not private"


def test_a_symbolic_link_in_place_of_the_folder_is_not_followed(fresh, samples_dir, monkeypatch):
    target = fresh / "target"
    target.mkdir(mode=0o700)
    link = fresh / "link"
    link.symlink_to(target)
    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, str(link))
    read(samples_dir)
    assert os.listdir(target) == []


class Planted:
    """A pickle that, unpickled, creates the file ``marker``: what an attacker's entry would run."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return open, (self.marker, "w")


def test_a_planted_entry_is_never_unpickled(fresh, samples_dir, monkeypatch):
    directory = fresh / "cache"
    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, str(directory))
    path = os.path.join(samples_dir, SAMPLE)
    fmt = capture_format("dmpmqmsg")
    expected = index.scan(path, fmt)
    cache.store(("warm-up",), 1)  # the folder and its key exist, as after any earlier read
    name = cache.entry_name(index.index_key(path, fmt))
    marker = fresh / "ran"
    bomb = pickle.dumps(Planted(str(marker)))
    for planted in (bomb,  # a bare pickle
                    cache.MAGIC + bytes(cache.TAG_BYTES) + bomb,  # in the entry format, without the key
                    cache.MAGIC + os.urandom(cache.TAG_BYTES) + bomb):
        (directory / name).write_bytes(planted)
        index._MEMORY.clear()
        assert index.indexed(path, fmt) == expected
        assert not marker.exists()
        stored = cache.load(index.index_key(path, fmt), index.IndexColumns)
        assert stored is not None and stored.messages() == expected  # the real index took its place


def test_a_tampered_or_moved_entry_is_rejected(fresh, monkeypatch):
    directory = fresh / "cache"
    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, str(directory))
    cache.store(("a",), {"rows": [1, 2, 3]})
    cache.store(("b",), {"rows": [4, 5, 6]})
    a, b = directory / cache.entry_name(("a",)), directory / cache.entry_name(("b",))
    assert cache.load(("a",), dict) == {"rows": [1, 2, 3]}
    # An entry copied over another keeps its tag, which names the entry it was made for.
    b.write_bytes(a.read_bytes())
    assert cache.load(("b",), dict) is None and not b.exists()
    # One byte of the pickle changed.
    data = bytearray(a.read_bytes())
    data[-3] ^= 0x01
    a.write_bytes(bytes(data))
    assert cache.load(("a",), dict) is None and not a.exists()
    # Made under another key (the key file replaced): rejected too.
    cache.store(("a",), "old key")
    os.remove(directory / cache.KEY_FILE)
    assert cache.load(("a",), str) is None
    cache.store(("a",), "new key")
    assert cache.load(("a",), str) == "new key"


def test_a_key_file_others_may_read_disables_the_cache(fresh, monkeypatch, caplog):
    directory = fresh / "cache"
    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, str(directory))
    cache.store(("a",), "kept")
    os.chmod(directory / cache.KEY_FILE, 0o644)
    with caplog.at_level(logging.WARNING, logger="cmi_datasource.cache"):
        assert cache.load(("a",), str) is None
        cache.store(("b",), "not kept")
    assert entries(directory) == [cache.entry_name(("a",))]
    assert any("mode 0644" in r.getMessage() for r in caplog.records)


def test_the_environment_variable_moves_and_disables_the_cache(fresh, samples_dir, monkeypatch):
    moved = fresh / "moved"
    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, str(moved))
    read(samples_dir)
    assert private(moved) and len(entries(moved)) == 2
    for off in ("off", "None", "0"):
        monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, off)
        forget()
        read(samples_dir)
    assert not (fresh / "home" / ".cache").exists() and os.listdir(fresh / "temp") == []
    assert cache.location().directories == ()
    # A relative directory would be another folder in each Spark worker: no cache, with a warning.
    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, "relative/dir")
    assert cache.location().directories == ()


def test_the_read_option_moves_and_disables_the_cache(fresh, samples_dir, monkeypatch):
    from_env, from_option = fresh / "env", fresh / "option"
    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, str(from_env))
    read(samples_dir, cacheDir=str(from_option))  # the option wins over the environment
    assert len(entries(from_option)) == 2 and not from_env.exists()
    forget()
    read(samples_dir, cachedir="OFF")  # Spark hands options over lower-cased
    assert len(entries(from_option)) == 2 and not from_env.exists()
    # Executors get it inside the pickled options.
    o = ReadOptions.parse({"path": samples_dir, "cacheDir": "~/x"})
    assert pickle.loads(pickle.dumps(o)).cache_dir == os.path.join(str(fresh / "home"), "x")
    with pytest.raises(CmiOptionError, match="cacheDir must be an absolute directory, or off"):
        ReadOptions.parse({"path": samples_dir, "cachedir": "relative"})


def test_the_cli_reads_with_the_cache_its_option_chooses(fresh, samples_dir):
    chosen = fresh / "chosen"
    result = CliRunner().invoke(cli, ["head", os.path.join(samples_dir, SAMPLE), DATASET, "-n", "2",
                                      "-o", f"cacheDir={chosen}"])
    assert result.exit_code == 0, result.output
    assert len(entries(chosen)) == 2  # the sample's index and the read's plan, as Spark keeps them
    assert not (fresh / "home" / ".cache").exists()


def test_a_failed_write_leaves_no_partial_file_and_the_old_entry_whole(fresh, monkeypatch):
    directory = fresh / "cache"
    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, str(directory))
    cache.store(("a",), "first")

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)  # the new entry written, its rename refused
    cache.store(("a",), "second")
    monkeypatch.undo()
    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, str(directory))
    assert sorted(os.listdir(directory)) == sorted([cache.KEY_FILE, cache.entry_name(("a",))])
    assert cache.load(("a",), str) == "first"

    class Unpicklable:
        def __reduce__(self):
            raise TypeError("cannot pickle")

    with pytest.raises(TypeError):  # a bug in what is kept is not hidden
        cache.store(("a",), [1, Unpicklable()])
    assert sorted(os.listdir(directory)) == sorted([cache.KEY_FILE, cache.entry_name(("a",))])
    # A dead writer's temporary file is removed by the next prune, a live one's is not.
    dead, live = directory / ".x.dead.tmp", directory / ".x.live.tmp"
    dead.write_bytes(b"part")
    live.write_bytes(b"part")
    os.utime(dead, (1, 1))
    cache.prune()
    assert not dead.exists() and live.exists()


def test_cmi_cache_info_and_clear(fresh, samples_dir, monkeypatch):
    directory = fresh / "cache"
    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, str(directory))
    runner = CliRunner()
    result = runner.invoke(cli, ["cache", "info"])
    assert result.exit_code == 0 and "not made yet" in result.output
    read(samples_dir)
    result = runner.invoke(cli, ["cache", "info"])
    assert result.exit_code == 0 and str(directory) in result.output and "private, 2 entries" in result.output
    result = runner.invoke(cli, ["cache", "clear"])
    assert result.exit_code == 0 and "removed 2 entries" in result.output, result.output
    assert entries(directory) == [] and os.listdir(directory) == [cache.KEY_FILE]
    result = runner.invoke(cli, ["cache", "info", "--json"])
    assert result.exit_code == 0 and '"entries": 0' in result.output
    # Another cache, named as option cacheDir would name it; a relative one is a usage error.
    other = fresh / "other"
    with cache.chosen(str(other)):
        cache.store(("x",), 1)
    assert runner.invoke(cli, ["cache", "clear", "--dir", str(other)]).exit_code == 0 and entries(other) == []
    assert runner.invoke(cli, ["cache", "clear", "--dir", "relative"]).exit_code == 2
    assert "off" in runner.invoke(cli, ["cache", "info", "--dir", "off"]).output


def test_cmi_cache_clear_leaves_a_planted_folder_alone(fresh, monkeypatch):
    planted = fresh / "planted"
    planted.mkdir()
    (planted / f"{'0' * 64}{cache.ENTRY_SUFFIX}").write_bytes(b"theirs")
    os.chmod(planted, 0o777)
    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, str(planted))
    result = CliRunner().invoke(cli, ["cache", "clear"])
    assert result.exit_code == 0 and "left alone" in result.output and "mode 0777" in result.output
    assert os.listdir(planted) == [f"{'0' * 64}{cache.ENTRY_SUFFIX}"]
    info = CliRunner().invoke(cli, ["cache", "info"])
    assert "not used" in info.output and "no usable cache directory" in info.output


def test_a_live_send_stages_in_a_private_folder(fresh, monkeypatch, caplog):
    options = {"transport": "mqtt", "mqtt.broker": "localhost:1883"}
    staged = SaveOptions.parse(options).directory
    assert staged == str(fresh / "temp" / f"cmi-datasource-{os.getuid()}" / "send")
    assert private(os.path.dirname(staged))
    # Someone else made that folder first: the spills go to a new private folder of their own.
    os.chmod(os.path.dirname(staged), 0o777)
    with caplog.at_level(logging.WARNING, logger="cmi_datasource.cache"):
        elsewhere = SaveOptions.parse(options).directory
    assert os.path.dirname(elsewhere) == str(fresh / "temp") and private(elsewhere)
    assert os.listdir(os.path.dirname(staged)) == []
    assert any("mode 0777" in r.getMessage() for r in caplog.records)


def test_an_entry_larger_than_a_piece_round_trips_and_cut_short_is_rejected(fresh, monkeypatch):
    # Entries are pickled into the file and authenticated a piece at a time (_PIECE_BYTES).
    directory = fresh / "cache"
    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, str(directory))
    value = [os.urandom(1000) for _ in range(3 * cache._PIECE_BYTES // 1000)]
    cache.store(("big",), value)
    entry = directory / cache.entry_name(("big",))
    data = entry.read_bytes()
    assert len(data) > 3 * cache._PIECE_BYTES
    # The tag, written after the pickle, is the MAC of every byte that follows it.
    head = len(cache.MAGIC) + cache.TAG_BYTES
    opened = cache._opened()
    with opened:
        mac = cache._mac(cache._secret(opened), entry.name)
    mac.update(data[head:])
    assert data.startswith(cache.MAGIC) and data[len(cache.MAGIC):head] == mac.digest()
    assert pickle.loads(data[head:]) == value
    assert cache.load(("big",), list) == value
    entry.write_bytes(data[:-cache._PIECE_BYTES])
    assert cache.load(("big",), list) is None and not entry.exists()
    entry.write_bytes(data[:head - 1])
    assert cache.load(("big",), list) is None and not entry.exists()
