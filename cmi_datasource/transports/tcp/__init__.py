"""TCP under the transports that travel over it (MQTT, SAP DB): pcap and pcapng captures read into
connections, each direction one reassembled byte stream. A transport picks its connections by
what its client sends first or by its server ports, and reads their streams itself."""
from .capture import PCAP_MAGICS, PCAPNG_MAGIC, Connection, PcapFormatError, is_pcap, read_connections, server_ports
from .reassembly import Frame, Stream

__all__ = ["PCAP_MAGICS", "PCAPNG_MAGIC", "Connection", "Frame", "PcapFormatError", "Stream", "is_pcap",
           "read_connections", "server_ports"]
