"""The options table: what it generates (docs/options.md, CmiDataSource's docstring) is current,
what it declares agrees with the option classes, transports add theirs through the seam, and the
read options pathGlobFilter and recursiveFileLookup choose the files a load reads."""
import dataclasses
import os
import shutil
import subprocess
import sys

import pytest

from cmi_datasource import transports
from cmi_datasource import read
from cmi_datasource.engine.options import OPTIONS, ReadOptions, SaveOptions, markdown
from cmi_datasource.errors import CmiOptionError
from cmi_datasource.storage import PathNotFoundError
from cmi_datasource.option_table import READ, Option, whole_number
from cmi_datasource.transports.base import Transport

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(ROOT, "docs", "options.md")


def test_docs_options_md_is_what_the_table_generates():
    with open(DOCS, encoding="utf-8") as f:
        kept = f.read()
    assert kept == markdown(), ("docs/options.md is stale: run "
                                "python -m cmi_datasource.engine.options --markdown > docs/options.md")


def test_the_generator_command_prints_it():
    printed = subprocess.run([sys.executable, "-m", "cmi_datasource.engine.options", "--markdown"], cwd=ROOT,
                             capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": ROOT})
    assert printed.stdout == markdown()


def test_every_option_is_documented_once_per_side_in_both_places():
    pytest.importorskip("pyspark")
    from cmi_datasource.spark.source import CmiDataSource
    doc = CmiDataSource.__doc__
    documented = [o for o in OPTIONS] + [o for t in transports.builtin_transports() for o in t.options]
    assert {"sapdb.port", "mqtt.port", "mqtt.broker"} <= {o.name for o in documented}
    for option in documented:
        assert f"| `{option.name}` |" in markdown()
        assert f"- ``{option.name}``" in doc
    assert 'spark.read.format("cmi").load("sample_queues/mixed_types.dmp")' in doc  # the examples stay
    assert "Transport ``tibrv`` requires ``273``" in doc  # a transport's rule, from the seam
    names = [(o.side, o.key) for o in documented]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("cls, side", [(ReadOptions, "read"), (SaveOptions, "write")])
def test_the_option_classes_default_as_the_table_does(cls, side):
    defaults = {f.name: f.default for f in dataclasses.fields(cls)}
    held = [o for o in OPTIONS if o.side == side and o.field]
    assert held
    for option in held:
        if not callable(option.default):
            assert defaults[option.field] == option.default, option.name


def test_the_default_transport_is_stated_once():
    o = SaveOptions.parse({"path": "/tmp/out"})
    assert (o.transport, o.write_format) == (transports.DEFAULT_TRANSPORT, "dmpmqmsg")


def test_the_tibrv_rule_comes_from_the_transport():
    assert SaveOptions.parse({"path": "/tmp/out", "transport": "tibrv"}).codec.encoding == 273
    assert SaveOptions.parse({"path": "/tmp/out", "transport": "tibrv", "encoding": "273"}).codec.encoding == 273
    with pytest.raises(CmiOptionError, match=r"option encoding must be 273 with transport tibrv \(RV numbers are "
                                             r"big-endian IEEE\), not 546"):
        SaveOptions.parse({"path": "/tmp/out", "transport": "tibrv", "encoding": "546"})
    assert SaveOptions.parse({"path": "/tmp/out", "transport": "mq", "encoding": "273"}).codec.encoding == 273


def test_a_transport_declares_only_its_own_options():
    class Stray(Transport):
        name = "stray"
        options = (Option("other.port", READ, whole_number(), "A port.", transport="other"),)
    with pytest.raises(ValueError, match="declares option 'other.port'"):
        transports.register(Stray())
    assert "stray" not in [t.name for t in transports.transports()]


def test_a_transport_options_value_is_parsed_by_its_entry():
    [port] = [o for o in transports.capture_format("pcap").transport.options if o.name == "mqtt.port"]
    assert port.value({}) == (1883, 8883) and port.value({"mqtt.port": "1884,8884"}) == (1884, 8884)
    with pytest.raises(CmiOptionError, match="option mqtt.port must be TCP port numbers"):
        ReadOptions.parse({"path": "x.pcap", "MQTT.PORT": "http"})


# -- recursiveFileLookup, on the sample captures -------------------------------------------------

def _files(**options):
    return [os.path.basename(f) for f in ReadOptions.parse(options).files()]


def _refusal(samples_dir, options) -> str:
    """The error of a read of the samples with ``options``, handed over as Spark does: lower-cased."""
    with pytest.raises(CmiOptionError) as raised:
        ReadOptions.parse({"path": samples_dir, **{k.lower(): v for k, v in options.items()}})
    return str(raised.value)


@pytest.fixture()
def nested(tmp_path, samples_dir):
    """Real captures in a tree: top/, top/2024/, top/2024/01/, and a hidden folder."""
    layout = {"mixed_types.dmp": "", "tibrv_capture.rv": "2024", "nightly_batch.dmp": "2024/01",
              "files.dmp": "_staging"}
    for name, folder in layout.items():
        os.makedirs(tmp_path / folder, exist_ok=True)
        shutil.copy(os.path.join(samples_dir, name), tmp_path / folder / name)
    return str(tmp_path)


def test_recursive_file_lookup_is_true_by_default_and_false_reads_the_directorys_own_files(nested):
    assert _files(path=nested) == ["mixed_types.dmp", "tibrv_capture.rv", "nightly_batch.dmp"]
    assert _files(path=nested, recursiveFileLookup="true") == _files(path=nested)
    assert _files(path=nested, recursiveFileLookup="false") == ["mixed_types.dmp"]


def test_the_plan_changes_with_the_filters(nested):
    every = read(nested, view="attachments")
    own = read(nested, view="attachments", recursiveFileLookup=False)
    assert own.num_rows < every.num_rows
    assert {os.path.basename(s) for s in own.column("source").to_pylist()} == {"mixed_types.dmp"}


@pytest.mark.parametrize("options, expected", [
    ({"recursiveFileLookup": "sometimes"}, "option recursiveFileLookup must be true or false, not 'sometimes'"),
    ({"recursiveFileLookUp": "false", "recursivefilelookupp": "x"}, "'recursivefilelookupp' is not known (did you "
                                                                     "mean 'recursiveFileLookup'?)"),
])
def test_bad_recursive_file_lookup_values_name_the_option(samples_dir, options, expected):
    assert expected in _refusal(samples_dir, options)


# -- pathGlobFilter, on the sample captures ------------------------------------------------------

def test_path_glob_filter_keeps_the_files_whose_names_match(samples_dir):
    every = _files(path=samples_dir)
    assert {"mixed_types.dmp", "tibrv_capture.rv", "amqsbcg_browse.txt"} <= set(every)
    assert _files(path=samples_dir, pathGlobFilter="*.dmp") == sorted(f for f in every if f.endswith(".dmp"))
    assert _files(path=samples_dir, pathglobfilter="*.{rv,mqtt}") == ["mqtt_stream.mqtt", "tibrv_capture.rv"]
    assert _files(path=samples_dir, pathGlobFilter="[^bfmnsz]*") == ["amqsbcg_browse.txt", "tibrv_capture.rv"]
    with pytest.raises(PathNotFoundError):  # names are matched with their case
        _files(path=samples_dir, pathGlobFilter="*.DMP")


def test_path_glob_filter_changes_what_a_view_reads(samples_dir):
    def formats(**options):
        table = read(samples_dir, view="messages", **options)
        return {os.path.basename(s) for s in table.column("source").to_pylist()}
    assert formats(pathGlobFilter="*.rv") == {"tibrv_capture.rv"}
    assert formats(pathGlobFilter="nightly_*") == {"nightly_batch.dmp"}


def test_the_filter_applies_to_a_file_named_too_as_in_spark(samples_dir):
    # spark.read.option("pathGlobFilter", "*.dmp").text(".../tibrv_capture.rv") reads no file.
    named = os.path.join(samples_dir, "tibrv_capture.rv")
    assert _files(path=named, pathGlobFilter="*.rv") == ["tibrv_capture.rv"]
    with pytest.raises(PathNotFoundError, match="whose names match pathGlobFilter"):
        _files(path=named, pathGlobFilter="*.dmp")


def test_the_two_options_together(nested):
    assert _files(path=nested, pathGlobFilter="*.dmp") == ["mixed_types.dmp", "nightly_batch.dmp"]
    assert _files(paths=f'["{nested}/2024"]', recursiveFileLookup="false") == ["tibrv_capture.rv"]
    with pytest.raises(PathNotFoundError, match="whose names match pathGlobFilter '\\*.rv'"):
        _files(path=nested, recursiveFileLookup="false", pathGlobFilter="*.rv")


@pytest.mark.parametrize("options, expected", [
    ({"pathGlobFilter": ""}, "option pathGlobFilter is matched against file names: it must be a non-empty glob"),
    ({"pathGlobFilter": "2024/*.dmp"}, "option pathGlobFilter is matched against file names"),
    ({"pathGlobFilter": "*.{dmp,rv"}, "option pathGlobFilter has a '{' without its '}'"),
    ({"pathGlobFilter": "*.dmp}"}, "option pathGlobFilter has a '}' without its '{'"),
    ({"pathGlobFliter": "*.dmp"}, "'pathglobfliter' is not known (did you mean 'pathGlobFilter'?)"),
])
def test_bad_path_glob_filter_values_name_the_option(samples_dir, options, expected):
    assert expected in _refusal(samples_dir, options)
