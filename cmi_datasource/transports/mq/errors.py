"""The errors of IBM MQ's text dumps (dmpmqmsg, amqsbcg): MQ's alone, so kept with the MQ transport."""
from __future__ import annotations

from ...errors import CmiFormatError


class DumpSyntaxError(CmiFormatError):
    """A line of a text dump cannot be parsed (bad hex, stray attribute line...)."""

    hint = ("the dump was damaged or edited after dmpmqmsg (or amqsbcg) wrote it: dump the queue again, "
            "or leave the file out of the load")
