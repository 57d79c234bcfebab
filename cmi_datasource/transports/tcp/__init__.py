"""TCP under the transports that travel over it (MQTT, SAP DB): pcap and pcapng captures read frame
by frame into connections, each direction one reassembled byte stream. A transport picks its
connections by what its client sends first or by its server ports (``server_ports`` parses a
port-list option), and reads their streams itself, as their bytes come (``StreamReader``)."""
from .capture import (PCAP_MAGICS, PCAPNG_MAGIC, Connection, PcapFormatError, StreamReader, is_pcap,
                      read_connections, server_ports)
from .reassembly import Frame

__all__ = ["PCAP_MAGICS", "PCAPNG_MAGIC", "Connection", "Frame", "PcapFormatError", "StreamReader", "is_pcap",
           "read_connections", "server_ports"]
