"""Errors that stand alone (problem, what to do, where), read back from text by ``spark.errors.unwrap``, and
options checked by name and value before any work starts."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import traceback

import pyarrow as pa
import pytest

import cmi_datasource
from cmi_datasource.engine.capture import Capture
from cmi_datasource.engine.options import READ_OPTIONS, WRITE_OPTIONS, ReadOptions, SaveOptions
from cmi_datasource.engine.write import DatasetToWrite, WriteOptions
from cmi_datasource.errors import (CmiEncodeError, CmiFormatError, CmiOptionError, Location, TruncatedError,
                                   ValueConversionError)
from cmi_datasource.spark.errors import StagingLostError, typed_errors, unwrap, unwrap_text
from cmi_datasource.transports.mq.dmpmqmsg import write_dump
from cmi_datasource.transports.mq.errors import DumpSyntaxError
from cmi_datasource.transports.sapdb.packet import SqlPacketError

from conftest import ROOT
from support import build_mq_messages

PLACE = Location("/data/q.dmp", 4, 1234, 20, "0123456789ABCDEF0123456789ABCDEF", 3)


def test_an_error_names_the_problem_first_then_what_to_do_then_where():
    e = TruncatedError("the observation record declares 900 bytes; 12 remain", PLACE)
    lines = str(e).split("\n")
    assert lines[0] == "the observation record declares 900 bytes; 12 remain"
    assert lines[1].startswith("  what to do: ") and "capture it again" in lines[1]
    assert lines[2:] == ["  file: /data/q.dmp", "  message: 5", "  file offset: 1234", "  payload offset: 20",
                         "  attachment: 0123456789ABCDEF0123456789ABCDEF", "  sequence: 3"]
    # Counted from 1 like dmpmqmsg's "* Index 5"; the index inside stays 0-based.
    assert e.message_number == 5 and e.message_index == 4 and e.offset == 20


def test_unknown_parts_of_the_place_are_left_out():
    e = DumpSyntaxError("line 3 is not hex", Location("a.dmp", None, 0))
    assert str(e).split("\n")[2:] == ["  file: a.dmp", "  file offset: 0"]
    assert e.summary() == "line 3 is not hex (file a.dmp, file offset 0)"


def test_a_problem_spread_over_lines_is_kept_on_the_first():
    assert str(CmiFormatError("two\nlines")).split("\n")[0] == "two lines"


def test_the_typed_error_comes_back_from_the_text_spark_shows():
    original = TruncatedError("cut short", PLACE)
    shown = ("[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance: "
             f"cmi_datasource.errors.TruncatedError: {original}\n SQLSTATE: 38000")
    back = unwrap(RuntimeError(shown))
    assert type(back) is TruncatedError
    assert (back.problem, back.location, back.hint) == (original.problem, original.location, original.hint)


def test_a_task_failure_text_with_a_traceback_still_unwraps():
    e = ValueConversionError("variable S, observation 2: b'\\xe9' is not valid utf-8", Location("x.dmp", 7, 99))
    shown = ("An exception was thrown from the Python worker. Please see the stack trace below.\n"
             "Traceback (most recent call last):\n  File \"/x/decode.py\", line 3, in read\n    raise ...\n"
             f"cmi_datasource.errors.ValueConversionError: {e}\n")
    back = unwrap_text(shown)
    assert isinstance(back, ValueConversionError) and back.location == e.location and back.problem == e.problem


def _as_spark_shows(e: BaseException) -> str:
    """The text a worker sends for an exception when its traceback is hidden."""
    return "".join(traceback.format_exception_only(type(e), e))


def test_transport_errors_and_plain_errors_unwrap_by_their_class():
    shown = _as_spark_shows(SqlPacketError("bad part", Location("s.rte", 1, 8)))
    assert shown.startswith("cmi_datasource.transports.sapdb.packet.SqlPacketError: bad part")
    packet = unwrap_text("[PYTHON_DATA_SOURCE_ERROR] Failed: " + shown)
    assert type(packet) is SqlPacketError and packet.message_number == 2 and packet.source == "s.rte"
    option = unwrap_text("x: cmi_datasource.errors.CmiOptionError: option view 'a' is not known; valid: dataset")
    assert type(option) is CmiOptionError and str(option) == "option view 'a' is not known; valid: dataset"
    assert unwrap(ValueError("no cmi error here")) is None


def test_a_cmi_error_in_the_cause_chain_is_returned_as_it_is():
    inner = CmiEncodeError("column X: cannot be written")
    try:
        try:
            raise inner
        except CmiEncodeError as e:
            raise RuntimeError("wrapped") from e
    except RuntimeError as outer:
        assert unwrap(outer) is inner


def test_typed_errors_raises_the_cmi_error_a_spark_exception_carries():
    with pytest.raises(DumpSyntaxError) as raised:
        with typed_errors():
            raise RuntimeError(_as_spark_shows(DumpSyntaxError("bad", PLACE)))
    assert raised.value.location == PLACE and isinstance(raised.value.__cause__, RuntimeError)
    with pytest.raises(KeyError):
        with typed_errors():
            raise KeyError("not ours")


@pytest.mark.parametrize("kind", [TruncatedError, DumpSyntaxError])  # a core error; one kept with its transport
def test_errors_cross_processes_with_their_fields(kind):
    e = kind("cut", PLACE, hint="try again")
    back = pickle.loads(pickle.dumps(e))
    assert (type(back), back.problem, back.location, back.hint, str(back)) == (kind, "cut", PLACE, "try again", str(e))


def test_errors_defined_outside_the_core_module_unwrap_by_where_they_live():
    dump = _as_spark_shows(DumpSyntaxError("X line holds 'ZZ'", PLACE))
    assert dump.startswith("cmi_datasource.transports.mq.errors.DumpSyntaxError: X line holds 'ZZ'\n")
    back = unwrap_text("[PYTHON_DATA_SOURCE_ERROR] Failed: " + dump)
    assert type(back) is DumpSyntaxError and back.location == PLACE and back.hint == DumpSyntaxError.hint
    staging = unwrap(RuntimeError("An exception was thrown from the Python worker: "
                                  + _as_spark_shows(StagingLostError("the spill of partition 3 is gone"))))
    assert type(staging) is StagingLostError and str(staging) == "the spill of partition 3 is gone"
    import cmi_datasource
    assert cmi_datasource.DumpSyntaxError is DumpSyntaxError  # still exported at the top


def test_unwrapping_needs_neither_spark_nor_the_heavy_libraries():
    """A Spark Connect client or a plain script reads the typed error back without pyspark, and the
    package's own import stays light (Spark's discovery of pyspark_cmi imports it)."""
    script = ("import sys\n"
              "import cmi_datasource\n"
              "heavy = ('pyspark', 'py4j', 'numpy', 'pyarrow', 'numba')\n"
              "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
              "from cmi_datasource.spark.errors import unwrap\n"
              "e = unwrap(RuntimeError('x: cmi_datasource.errors.TruncatedError: cut\\n  file: a.dmp'))\n"
              "print(type(e).__name__, e.source)\n"
              "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert done.stdout.splitlines() == ["[]", "TruncatedError a.dmp", "[]"], done.stderr


# -- where: the attachment and the sequence number ------------------------------------------------

def _latin1_dump(tmp_path) -> str:
    table = pa.table({"S": pa.array(["café"] * 50 + ["naïve"] * 50)})
    messages = build_mq_messages([DatasetToWrite(table, "LIB", "LATIN")],
                                 options=WriteOptions(ccsid=819, max_message_bytes=512))
    path = tmp_path / "latin.dmp"
    with open(path, "wb") as f:
        write_dump(f, messages)
    return str(path)


def test_a_bad_value_names_its_attachment_and_the_message_sequence_number(tmp_path):
    from cmi_datasource.charsets import CharsetPolicy
    path = _latin1_dump(tmp_path)
    capture = Capture.open([path], CharsetPolicy(override=1208))  # read as UTF-8: é is no UTF-8
    with pytest.raises(ValueConversionError) as raised:
        cmi_datasource.read(path, ccsid=1208)
    e = raised.value
    [att] = capture.attachments
    assert e.attachment == att.key_hex
    assert att.sequenced[e.sequence].index == e.message_index  # the message it names is that sequence number
    # The message number is the dump's own: its "* Index N" comment precedes the message's bytes.
    text = open(path, "rb").read()
    assert text.rfind(b"* Index ", 0, e.location.file_offset + 1) == text.find(f"* Index {e.message_number}\n".encode())


# -- options ---------------------------------------------------------------------------------------

def test_a_misspelled_read_option_is_refused_with_the_closest_name():
    with pytest.raises(CmiOptionError) as raised:
        ReadOptions.parse({"path": "x.dmp", "datset": "LIB.DS"})
    message = str(raised.value)
    assert "'datset' is not known (did you mean 'dataset'?)" in message
    assert all(name in message for name in READ_OPTIONS)


def test_option_names_are_matched_without_regard_to_case():
    o = ReadOptions.parse({"path": "x.dmp", "MAXPARTITIONBYTES": "1000", "defaultccsid": "819"})
    assert o.max_partition_bytes == 1000 and o.charsets.default_ccsid == 819


def test_a_misspelled_write_option_is_refused():
    with pytest.raises(CmiOptionError, match=r"'lossynumber' is not known \(did you mean 'lossyNumbers'\?\)"):
        SaveOptions.parse({"path": "/tmp/out", "lossyNumber": "true"})
    with pytest.raises(CmiOptionError) as raised:
        SaveOptions.parse({"path": "/tmp/out", "zzz": "1"})
    assert "did you mean" not in str(raised.value) and all(n in str(raised.value) for n in WRITE_OPTIONS)


def test_transport_options_are_checked_against_what_the_transport_declares():
    with pytest.raises(CmiOptionError, match=r"'sapdb.prot' is not known \(did you mean 'sapdb.port'\?\)"):
        ReadOptions.parse({"path": "x", "sapdb.prot": "7210"})
    with pytest.raises(CmiOptionError, match=r"transport 'sapbd' is not known \(did you mean 'sapdb'\?\)"):
        ReadOptions.parse({"path": "x", "sapbd.port": "7210"})
    with pytest.raises(CmiOptionError, match="mqtt.timeout must be a number of seconds above 0, not 'soon'"):
        SaveOptions.parse({"transport": "mqtt", "mqtt.broker": "localhost:1883", "mqtt.timeout": "soon"})
    with pytest.raises(CmiOptionError, match="mqtt.broker must be host:port"):
        SaveOptions.parse({"transport": "mqtt", "mqtt.broker": "localhost"})
    with pytest.raises(CmiOptionError, match="sapdb.port must be TCP port numbers"):
        ReadOptions.parse({"path": "x", "sapdb.port": "70000"})
    assert ReadOptions.parse({"path": "x", "sapdb.port": "7269"}).transport_options == (("sapdb.port", "7269"),)


@pytest.mark.parametrize("options, expected", [
    ({"format": "dmpmsg"}, "format 'dmpmsg' is not known (did you mean 'dmpmqmsg'?)"),
    ({"dataset": "A.B.C"}, "option dataset must be LIB.MEMBER or MEMBER, not 'A.B.C'"),
    ({"attachment": "12"}, "option attachment must be 32 hex digits"),
    ({"temporaltypes": "maybe"}, "option temporalTypes must be true or false, not 'maybe'"),
    ({"batchrows": "0"}, "option batchRows must be at least 1, not 0"),
    ({"ccsid": "4711"}, "CCSID 4711 is not supported"),
])
def test_read_option_values_are_checked(options, expected):
    with pytest.raises(CmiOptionError) as raised:
        ReadOptions.parse({"path": "x.dmp", **options})
    assert expected in str(raised.value)


@pytest.mark.parametrize("options, expected", [
    ({"kind": "txt"}, "kind 'txt' is not known (did you mean 'text'?); valid: dataset, text, binary"),
    ({"validvarname": "UPCAS"}, "validVarName 'UPCAS' is not known (did you mean 'upcase'?)"),
    ({"lossynumbers": "perhaps"}, "option lossyNumbers must be true or false"),
    ({"transport": "tibco"}, "transport 'tibco' is not known (did you mean 'tibrv'?)"),
])
def test_write_option_values_are_checked(options, expected):
    with pytest.raises(CmiOptionError) as raised:
        SaveOptions.parse({"path": "/tmp/out", **options})
    assert expected in str(raised.value)


def test_the_view_option_suggests_the_closest_view():
    from cmi_datasource.engine.views import view
    with pytest.raises(CmiOptionError, match=r"view 'atachments' is not known \(did you mean 'attachments'\?\)"):
        view("atachments")


def test_an_option_of_the_other_side_says_so():
    with pytest.raises(CmiOptionError, match="encoding is a write option, not a read option; read options: format,"):
        ReadOptions.parse({"path": "x.dmp", "encoding": "273"})
    with pytest.raises(CmiOptionError, match="view is a read option, not a write option; write options: dataset,"):
        SaveOptions.parse({"path": "/tmp/out", "view": "messages"})


def test_paths_must_be_the_list_spark_makes():
    assert ReadOptions.parse({"paths": '["a.dmp", "b.dmp"]'}).paths == ("a.dmp", "b.dmp")
    for raw in ("a.dmp,b.dmp", '"a.dmp"', "[1, 2]"):
        with pytest.raises(CmiOptionError, match="option paths must be a JSON list of paths"):
            ReadOptions.parse({"paths": raw})


def test_a_catalog_table_location_is_its_path():
    # CREATE TABLE t USING cmi LOCATION /data/q hands over owner, provider and location (at creation).
    o = ReadOptions.parse({"owner": "me", "provider": "cmi", "location": "file:/data/q"})
    assert o.paths == ("file:/data/q",)


def test_a_format_named_by_option_that_does_not_fit_says_it_may_be_the_wrong_one(samples_dir):
    import os
    with pytest.raises(CmiFormatError) as raised:
        Capture.open([os.path.join(samples_dir, "mixed_types.dmp")], format="tibrv", use_index_cache=False)
    assert raised.value.hint.startswith("the file may be no tibrv capture: leave out option('format')")
    back = unwrap_text(_as_spark_shows(raised.value))
    assert type(back) is type(raised.value) and back.hint == raised.value.hint


def test_traffic_without_cmi_points_to_its_transports_view(samples_dir):
    import os
    from cmi_datasource.errors import AttachmentError
    with pytest.raises(AttachmentError) as raised:
        cmi_datasource.read(os.path.join(samples_dir, "sapdb_session.rte"))
    assert raised.value.hint == "read the traffic with option('view', 'sapdb')"


def test_a_capture_of_files_only_points_to_the_files_view(samples_dir):
    import os
    with pytest.raises(CmiOptionError, match="its attachments are external files: read them with "
                                             "option\\('view', 'files'\\)"):
        cmi_datasource.read(os.path.join(samples_dir, "files.dmp"))
