"""The options table: what it declares agrees with the option classes, and transports add
theirs through the seam."""
import dataclasses

import pytest

from cmi_datasource import transports
from cmi_datasource.engine.options import OPTIONS, ReadOptions, SaveOptions
from cmi_datasource.errors import CmiOptionError
from cmi_datasource.option_table import READ, Option, whole_number
from cmi_datasource.transports.base import Transport


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
