"""bench/common.py's timing loop, apart from any timing: what runs, in what order, and that each
side's input files are read through the page cache before each of its runs (untimed), so that
a warm read is warm on this machine, whose kernel pages out file pages read only now and then."""
from __future__ import annotations

import bench.common as common


def test_each_sides_inputs_are_read_before_each_of_its_runs_in_turn(tmp_path, monkeypatch):
    events = []
    monkeypatch.setattr(common, "make_resident", lambda paths: events.append(("resident", tuple(paths))))
    times = common.best_of_each({"a": lambda: events.append(("run", "a")), "b": lambda: events.append(("run", "b"))},
                                repeat=2, inputs={"a": ["dump"], "b": ["parquet", "more"]})
    turn = [("resident", ("dump",)), ("run", "a"), ("resident", ("parquet", "more")), ("run", "b")]
    assert events == turn * 3  # the warm-up, then two rounds
    assert set(times) == {"a", "b"} and all(0 <= t < float("inf") for t in times.values())
    # Without inputs nothing is read; best_of passes its own on.
    events.clear()
    common.best_of_each({"a": lambda: events.append(("run", "a"))}, repeat=1)
    common.best_of(lambda: events.append(("run", "one")), 1, warmup=False, inputs=["x"])
    assert events == [("resident", ()), ("run", "a"), ("resident", ()), ("run", "a"),
                      ("resident", ("x",)), ("run", "one")]


def test_make_resident_reads_every_file_of_a_folder_through(tmp_path, monkeypatch):
    (tmp_path / "parquet" / "nested").mkdir(parents=True)
    sizes = {tmp_path / "parquet" / "part-0": 20 << 20, tmp_path / "parquet" / "nested" / "part-1": 5,
             tmp_path / "dump": 0}
    for path, size in sizes.items():
        path.write_bytes(b"x" * size)
    read = {}
    real_open = open

    def counting_open(name, *args, **kwargs):
        f = real_open(name, *args, **kwargs)
        real_readinto = f.readinto

        def readinto(buffer):
            n = real_readinto(buffer)
            read[name] = read.get(name, 0) + n
            return n
        return type("Counted", (), {"readinto": staticmethod(readinto), "__enter__": lambda self: self,
                                    "__exit__": lambda self, *exc: f.close()})()

    monkeypatch.setattr(common, "open", counting_open, raising=False)
    common.make_resident([str(tmp_path / "parquet"), str(tmp_path / "dump")])
    assert read == {str(path): size for path, size in sizes.items()}
