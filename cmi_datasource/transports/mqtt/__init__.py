"""MQTT: raw MQTT byte streams carrying CMI messages in PUBLISH packets (docs/spec/mqtt.md#cmi-over-mqtt)."""
from .transport import TRANSPORT

__all__ = ["TRANSPORT"]
