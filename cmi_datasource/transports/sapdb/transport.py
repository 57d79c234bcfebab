"""SAP DB / MaxDB as a transport: RTE-framed packet logs as a capture format, the ``sapdb`` view.

Its traffic carries SQL, not CMI: in the messages view each packet is a row with no descriptor
(its direction, RTE class and what its segments are); the ``sapdb`` view (``table.py``)
decodes every part. pcaps are read by the MQTT transport's ``pcap`` format for the messages
view and by ``table.py`` for the ``sapdb`` view, both through ``transports.tcp``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterator, Optional

import pyarrow as pa

from ...errors import Location
from ...messages import Origin, PhysicalMessage
from ..base import CaptureFormat, FileView, Transport
from .codes import MESS_TYPES, RTE_CLASSES, name_of
from .packet import read_packet
from .rte import RTE_HEADER, looks_like_rte, read_rte_packets, whole_rte_packets
from .table import PORT, PORT_OPTION, RTE_STREAM_FORMAT, SQL_PARTS_SCHEMA, sql_parts_table


@dataclass(frozen=True)
class SapDbDetails:
    direction: str
    rte_class: Optional[str]
    sql: Optional[str]  # its segments: "dbs", "parse", "return -3014", ... joined by ", "


class RteStreamFormat(CaptureFormat):
    name = RTE_STREAM_FORMAT
    description = "SAP DB / MaxDB RTE frames logged back to back, as they crossed a TCP connection"
    suffix = ".rte"

    def sniff(self, head: bytes) -> bool:
        return looks_like_rte(head)

    whole_records = staticmethod(whole_rte_packets)

    def parse(self, data: bytes, source: str, base_offset: int = 0, first_index: int = 0) -> Iterator[PhysicalMessage]:
        for index, rte in enumerate(read_rte_packets(data, Location(source, None, base_offset), base_offset),
                                    start=first_index):
            problem, sql = rte.problem, None
            if rte.carries_sql:
                packet = read_packet(rte.body, Location(source, index, rte.start))
                problem = packet.problem
                sql = ", ".join(f"return {s.header['returncode']}" if s.is_return
                                else name_of(MESS_TYPES, s.header["mess_type"]) for s in packet.segments)
            details = SapDbDetails(rte.direction, None if rte.header is None else name_of(RTE_CLASSES, rte.mess_class),
                                   sql)
            yield PhysicalMessage(None, rte.body, Origin(source, index, rte.start, rte.end,
                                                         header_length=RTE_HEADER.size * rte.frames),
                                  details=details, problem=problem)


class SapDbTransport(Transport):
    name = "sapdb"
    formats = (RteStreamFormat(),)
    message_columns = (pa.field("direction", pa.string()), pa.field("rte_class", pa.string()),
                       pa.field("sql", pa.string()))
    views = (FileView("sapdb", SQL_PARTS_SCHEMA, sql_parts_table, (PORT_OPTION,)),)

    options = (PORT,)

    def message_row(self, message: PhysicalMessage) -> Dict[str, Any]:
        d = message.details
        if not isinstance(d, SapDbDetails):
            return {}
        return {"direction": d.direction, "rte_class": d.rte_class, "sql": d.sql}


TRANSPORT = SapDbTransport()
