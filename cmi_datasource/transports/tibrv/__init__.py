"""TIB/Rendezvous: captures of RV wire-format messages carrying CMI attachments (docs/spec/tibrv.md)."""
from .transport import TRANSPORT

__all__ = ["TRANSPORT"]
