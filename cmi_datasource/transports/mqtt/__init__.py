"""MQTT: raw MQTT byte streams carrying CMI messages in PUBLISH packets (seed 003, contract section 4)."""
from .transport import TRANSPORT

__all__ = ["TRANSPORT"]
