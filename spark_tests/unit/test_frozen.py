"""frozen.made / frozen.replaced: the same objects as the dataclasses' own __init__ and replace."""
from __future__ import annotations

import dataclasses
import pickle

import pytest

from cmi_datasource.frozen import made, replaced
from cmi_datasource.messages import Descriptor, Origin, PhysicalMessage
from cmi_datasource.transports.mq.message import MqDetails
from cmi_datasource.transports.mq.mqmd import MQMD


def same(a, b) -> None:
    assert a == b and type(a) is type(b)
    assert pickle.dumps(a) == pickle.dumps(b) and repr(a) == repr(b)
    assert hash(a) == hash(b)


def test_made_is_the_classes_own_init_with_defaults_kept():
    fields = {"msg_type": 100001, "correl_id": bytes(range(24)), "format": "MQSTR   ", "msg_flags": 2}
    same(made(MQMD, fields), MQMD(**fields))
    same(made(MQMD, {}), MQMD())
    same(made(Descriptor, {"msg_type": 1, "correl_id": b"c", "encoding": 546, "ccsid": 1208}),
         Descriptor(1, b"c", 546, 1208))


def test_replaced_is_dataclasses_replace():
    message = PhysicalMessage(Descriptor(1, b"c", 546, 1208), b"payload", Origin("f", 3, 10, 20),
                              details=MqDetails(MQMD(msg_type=1)))
    changes = {"payload": b"pay", "full_key": (7, 123), "origin": Origin("f", 4, 10, 20)}
    made_copy = replaced(message, changes)
    assert made_copy == dataclasses.replace(message, **changes) and made_copy is not message
    assert pickle.dumps(made_copy) == pickle.dumps(dataclasses.replace(message, **changes))
    assert message.payload == b"payload"  # the original is left as it was
    same(message.replaced(), message)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made_copy.payload = b"x"


def test_unknown_or_missing_fields_are_type_errors():
    with pytest.raises(TypeError, match="'colour'"):
        made(MQMD, {"colour": 1})
    with pytest.raises(TypeError, match="'ccsid'"):
        made(Descriptor, {"msg_type": 1, "correl_id": b"", "encoding": 546})
    with pytest.raises(TypeError, match="'colour'"):
        replaced(MQMD(), {"colour": 1})


def test_a_class_running_code_after_init_is_refused():
    @dataclasses.dataclass(frozen=True)
    class Checked:
        value: int

        def __post_init__(self) -> None:
            assert self.value >= 0

    with pytest.raises(TypeError, match="Checked"):
        made(Checked, {"value": -1})
