"""TIB/Rendezvous: captures of RV wire-format messages carrying CMI attachments (seed 001)."""
from .transport import TRANSPORT

__all__ = ["TRANSPORT"]
