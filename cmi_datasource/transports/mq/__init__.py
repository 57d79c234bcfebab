"""IBM MQ: dmpmqmsg text dumps and binary MQGET captures, the MQ header chain and segments."""
from .transport import TRANSPORT

__all__ = ["TRANSPORT"]
