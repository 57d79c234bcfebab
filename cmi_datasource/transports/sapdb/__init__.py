"""SAP DB / MaxDB: the SQL packets of the order interface (docs/spec/sapdb.md), from RTE-framed streams and pcaps."""
from .transport import TRANSPORT

__all__ = ["TRANSPORT"]
