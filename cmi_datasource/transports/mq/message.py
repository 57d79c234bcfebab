"""An MQ message as the transport-neutral ``PhysicalMessage`` carries it.

The neutral descriptor takes MsgType, CorrelId, Encoding and CodedCharSetId from the MQMD that
describes the data (after the header chain, ``envelope.py``); ``MqDetails`` keeps the whole
MQMD and the headers removed, for segment joining and the messages view.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Optional, Tuple

from ...frozen import made
from ...messages import Descriptor, Origin, PhysicalMessage
from .mqmd import MQMD


@dataclass(frozen=True)
class Envelope:
    """MQ header structures found (and removed) in front of a message's data."""

    outer: MQMD  # the descriptor as captured
    headers: Tuple[str, ...] = ()  # e.g. ("MQXQH", "MQMDE")
    remote_queue: Optional[str] = None  # MQXQH: where the message was going
    remote_qmgr: Optional[str] = None
    dead_letter_reason: Optional[int] = None  # MQDLH
    dead_letter_queue: Optional[str] = None  # MQDLH: the queue it could not reach
    dead_letter_qmgr: Optional[str] = None
    properties: Tuple[str, ...] = ()  # MQRFH2 name/value folders, as text
    problem: Optional[str] = None  # a header that could not be walked; the data is left as it was


@dataclass(frozen=True)
class MqDetails:
    mqmd: MQMD  # the descriptor that describes the data
    envelope: Optional[Envelope] = None  # headers found in front of the data, if any


# The MQMD fields a neutral Descriptor carries, under the same names.
DESCRIPTOR_FIELDS = ("msg_type", "correl_id", "encoding", "ccsid")
_descriptor_values = operator.attrgetter(*DESCRIPTOR_FIELDS)


def neutral_descriptor(mqmd: Optional[MQMD]) -> Optional[Descriptor]:
    if mqmd is None:
        return None
    return made(Descriptor, dict(zip(DESCRIPTOR_FIELDS, _descriptor_values(mqmd))))


def mq_message(mqmd: Optional[MQMD], payload: bytes, source: str, index: int, file_offset: int,
               file_end: int) -> PhysicalMessage:
    """A message as captured (``None``: a dump written with -dN has no descriptor). Made by
    ``frozen.made``: one a message of every MQ capture (5.7 us each by the dataclasses' __init__, 2.5 by it)."""
    return made(PhysicalMessage, {"descriptor": neutral_descriptor(mqmd), "payload": payload,
                                  "origin": Origin(source, index, file_offset, file_end),
                                  "details": None if mqmd is None else made(MqDetails, {"mqmd": mqmd})})


def mqmd_of(message: PhysicalMessage) -> Optional[MQMD]:
    """The MQMD that describes the message's data, or None."""
    details = message.details
    return details.mqmd if isinstance(details, MqDetails) else None
