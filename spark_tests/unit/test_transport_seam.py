"""The transport seam: a transport registered from this file alone reads and writes datasets,
files are matched to formats by their first bytes, and the CMI/SAS core knows no transport."""
from __future__ import annotations

import ast
import os
import sys
import textwrap
from typing import Iterator

import pyarrow as pa
import pytest

import cmi_datasource
from cmi_datasource import Capture, read, transports
from cmi_datasource.engine.decode import slice_batches
from cmi_datasource.engine.write import DatasetToWrite, FileToWrite, WriteOptions, write_attachments_dump
from cmi_datasource.errors import CmiOptionError, TruncatedError, UnknownCaptureFormatError
from cmi_datasource.layout import BIG, Field, Layout
from cmi_datasource.messages import Descriptor, Origin, PhysicalMessage
from cmi_datasource.transports import CaptureFormat, Transport

from support import slices_of

PACKAGE = os.path.dirname(os.path.abspath(cmi_datasource.__file__))

# ---------------------------------------------------------------------------------------------
# A toy transport: a magic, then per message a fixed record and the payload.

TOY_MAGIC = b"TOYQ"
TOY_RECORD = Layout("toy record", (
    Field("msg_type", "i"), Field("correl_id", "24s", bytes(24)), Field("encoding", "i"), Field("ccsid", "i"),
    Field("length", "I"),
))


class ToyFormat(CaptureFormat):
    name = "toy"
    description = "a test's own capture format"

    def sniff(self, head: bytes) -> bool:
        return head.startswith(TOY_MAGIC)

    def parse(self, data: bytes, source: str, base_offset: int = 0, first_index: int = 0) -> Iterator[PhysicalMessage]:
        pos = len(TOY_MAGIC) if base_offset == 0 else 0
        index = first_index
        while pos < len(data):
            record = TOY_RECORD.unpack(data, pos, BIG)
            start = pos + TOY_RECORD.size
            end = start + record["length"]
            if end > len(data):
                raise TruncatedError("toy payload passes the end of the file")
            descriptor = Descriptor(record["msg_type"], record["correl_id"], record["encoding"], record["ccsid"])
            origin = Origin(source, index, base_offset + pos, base_offset + end)
            yield PhysicalMessage(descriptor, data[start:end], origin, details={"toy_offset": base_offset + start})
            pos, index = end, index + 1

    def write(self, out, messages, *, comments=(), deterministic=False, **format_options) -> int:
        out.write(TOY_MAGIC)
        count = 0
        for m in messages:
            d = m.descriptor
            out.write(TOY_RECORD.pack({"msg_type": d.msg_type, "correl_id": d.correl_id, "encoding": d.encoding,
                                       "ccsid": d.ccsid, "length": len(m.payload)}, BIG))
            out.write(m.payload)
            count += 1
        return count


class ToyTransport(Transport):
    name = "toy"
    formats = (ToyFormat(),)
    message_columns = (pa.field("toy_payload_offset", pa.int64()),)

    def message_row(self, message):
        return {"toy_payload_offset": message.details["toy_offset"]}


@pytest.fixture
def toy():
    transport = transports.register(ToyTransport())
    yield transport
    transports.unregister(transport)


TABLE = pa.table({"ID": pa.array([float(i) for i in range(500)]),
                  "NAME": pa.array([f"row {i}" if i % 7 else None for i in range(500)])})


def toy_capture(tmp_path, **options) -> str:
    path = str(tmp_path / "capture.toy")
    with open(path, "wb") as out:
        write_attachments_dump(out, [DatasetToWrite(TABLE, "LIB", "TOY", label="toy rows")],
                               [FileToWrite("notes.txt", text="one\ntwo\n")],
                               WriteOptions(max_message_bytes=600, **options), format="toy")
    return path


def test_a_transport_registered_from_a_test_reads_a_dataset(tmp_path, toy):
    path = toy_capture(tmp_path)
    assert open(path, "rb").read(4) == TOY_MAGIC  # written by the toy format's own writer
    capture = Capture.open(path)
    assert capture.formats == {os.path.abspath(path): "toy"}
    assert read(capture).equals(TABLE.replace_schema_metadata(None), check_metadata=False)
    [dataset, text] = read(capture, view="attachments").to_pylist()
    assert dataset["complete"] and dataset["observations"] == 500 and dataset["label"] == "toy rows"
    assert read(capture, view="files").column("text").to_pylist() == ["one\ntwo\n"]
    # Partitions re-read their messages through the toy format (it has no bulk fast path).
    [att] = [a for a in capture.attachments if a.entry.name == "LIB.TOY"]
    slices = slices_of(capture, att, 2000)
    assert len(slices) > 2 and all(s.formats == {os.path.abspath(path): "toy"} for s in slices)
    rows = [r for s in slices for b in slice_batches(s, batch_rows=64) for r in b.to_pylist()]
    assert rows == TABLE.to_pylist()


def test_the_messages_view_has_the_transports_own_columns(tmp_path, toy):
    capture = Capture.open(toy_capture(tmp_path))
    table = read(capture, view="messages")
    assert "toy_payload_offset" in table.schema.names and "msg_id" in table.schema.names  # MQ's stay
    rows = table.to_pylist()
    assert {r["transport"] for r in rows} == {"toy"}
    assert [r["role"] for r in rows[:2]] == ["header", "application"]
    data = open(capture.paths[0], "rb").read()
    for r in rows:  # each payload starts where the toy says, right after its record
        assert r["toy_payload_offset"] == r["offset"] + TOY_RECORD.size
        assert r["msg_id"] is None and r["headers"] is None
    assert rows[0]["correl_id"] == data[4 + 4:4 + 28].hex().upper()


def test_a_changed_toy_file_is_caught_when_a_partition_rereads_it(tmp_path, toy):
    path = toy_capture(tmp_path)
    capture = Capture.open(path, use_index_cache=False)
    [att] = [a for a in capture.attachments if a.entry.name == "LIB.TOY"]
    [part] = slices_of(capture, att, 1 << 40)
    data = open(path, "rb").read()
    assert data.count(b"row 250") == 1
    open(path, "wb").write(data.replace(b"row 250", b"row 25X"))  # one value rewritten in place
    with pytest.raises(cmi_datasource.CmiFormatError, match="differs from the one planned"):
        list(slice_batches(part))


# ---------------------------------------------------------------------------------------------
# Recognising files


def test_a_file_no_format_recognises_names_the_file_and_the_formats(tmp_path):
    picture = tmp_path / "traffic.png"  # before the seam, anything was read as a text dump
    picture.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(40))
    with pytest.raises(UnknownCaptureFormatError) as e:
        Capture.open(str(picture))
    assert e.value.source == str(picture) and e.value.offset == 0
    assert "dmpmqmsg" in str(e.value) and "mqget" in str(e.value) and "option('format'" in str(e.value)


@pytest.mark.parametrize("head, expected", [
    (b"* QLOAD Version:8.0 Created:Sat Jan  1 00:00:00 2000\n", "dmpmqmsg"),
    (b"\n\nA VER 2\nA RPT 0\n", "dmpmqmsg"),  # written with -dH: no file header
    (b"N\r\nX 41\r\n", "dmpmqmsg"),
    (b"", "dmpmqmsg"),  # an empty queue unloaded with -dH
    (b"MD  \x00\x00\x00\x02", "mqget"),
    ("MD  ".encode("cp037") + b"\x00\x00\x00\x01", "mqget"),
])
def test_capture_formats_are_recognised_by_their_first_bytes(tmp_path, head, expected):
    path = tmp_path / "capture"
    path.write_bytes(head)
    assert transports.detect_format(str(path)).name == expected


def test_option_format_names_the_format_instead(tmp_path, samples_dir):
    dump = os.path.join(samples_dir, "mixed_types.dmp")
    assert read(dump, format="dmpmqmsg").num_rows == 6
    with pytest.raises(cmi_datasource.CmiFormatError, match="expected an MQMD"):
        Capture.open(dump, format="mqget", use_index_cache=False)
    with pytest.raises(CmiOptionError, match="format must be one of dmpmqmsg|mqget"):
        Capture.open(dump, format="pcapng")


def test_a_format_name_cannot_be_taken_twice():
    class Impostor(Transport):
        name = "impostor"
        formats = (ToyFormat(),)
    Impostor.formats[0].name = "dmpmqmsg"
    with pytest.raises(ValueError, match="already registered by transport 'mq'"):
        transports.register(Impostor())
    assert transports.capture_format("dmpmqmsg").transport.name == "mq"


def test_a_transport_in_another_package_is_found_by_its_entry_point(tmp_path, monkeypatch):
    # What reaches Spark's Python workers: an installed distribution declaring the entry point.
    (tmp_path / "toyplugin.py").write_text(textwrap.dedent('''
        from cmi_datasource.transports import CaptureFormat, Transport

        class PluginFormat(CaptureFormat):
            name = "toy-plugin"
            description = "found through an entry point"

            def sniff(self, head):
                return head.startswith(b"PLUGIN")

        class PluginTransport(Transport):
            name = "toy-plugin"
            formats = (PluginFormat(),)

        TRANSPORT = PluginTransport()
    '''))
    info = tmp_path / "toyplugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toyplugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[cmi_datasource.transports]\ntoy = toyplugin:TRANSPORT\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(transports._state, "entry_points", False)
    try:
        path = tmp_path / "x.plugin"
        path.write_bytes(b"PLUGIN data")
        assert transports.detect_format(str(path)).transport.name == "toy-plugin"
        assert "toy-plugin" in [t.name for t in transports.transports()]
    finally:
        transports.unregister(sys.modules["toyplugin"].TRANSPORT)
        sys.modules.pop("toyplugin", None)


# ---------------------------------------------------------------------------------------------
# The layers


def _imports(path: str):
    tree = ast.parse(open(path, encoding="utf-8").read())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            yield "." * node.level + (node.module or "")
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


def _modules(*folders: str):
    for folder in folders:
        root = os.path.join(PACKAGE, folder)
        if os.path.isfile(root):
            yield root
            continue
        for directory, _, files in os.walk(root):
            yield from (os.path.join(directory, f) for f in files if f.endswith(".py"))


@pytest.mark.parametrize("layer, forbidden", [
    (("cmi", "payload", "arrow", "messages.py", "encoding.py", "layout.py", "charsets.py"),
     ("transports", "engine", "spark", "pyspark")),
    (("engine",), ("transports.mq", "spark", "pyspark")),
    (("transports",), ("engine", "spark", "pyspark")),
])
def test_the_core_imports_no_transport_and_no_layer_above_it(layer, forbidden):
    offenders = [(os.path.relpath(path, PACKAGE), name) for path in _modules(*layer) for name in _imports(path)
                 if any(part in name.split(".") or name.lstrip(".").startswith(part) for part in forbidden)]
    assert offenders == []


def test_the_messages_view_lays_its_columns_out_alike_in_every_process():
    # Spark takes the schema from one Python worker and the rows from another, which may have
    # imported the transports in another order: the columns must not depend on it.
    import subprocess
    code = ("import sys; from cmi_datasource import transports as t; from cmi_datasource.engine.tables import "
            "messages_schema; [t.capture_format(n) for n in sys.argv[1:]]; print(messages_schema().names)")
    root = os.path.dirname(PACKAGE)
    env = dict(os.environ, PYTHONPATH=root)
    first = subprocess.run([sys.executable, "-c", code, "tibrv", "mqtt"], capture_output=True, text=True,
                           env=env, check=True).stdout
    second = subprocess.run([sys.executable, "-c", code, "dmpmqmsg"], capture_output=True, text=True,
                            env=env, check=True).stdout
    assert first == second and "rv_type" in first and "msg_id" in first
