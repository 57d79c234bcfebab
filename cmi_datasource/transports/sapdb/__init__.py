"""SAP DB / MaxDB: the SQL packets of the order interface (seed 004), from RTE-framed streams and pcaps."""
from .transport import TRANSPORT

__all__ = ["TRANSPORT"]
