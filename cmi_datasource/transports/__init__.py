"""The transport registry: which capture formats there are and which one a file is in.

A transport is one package that exposes ``TRANSPORT`` (a ``base.Transport``), plus one line in
``BUILTIN`` below: the package and the names of its capture formats, so that a Spark task that
re-reads one format imports that transport alone. A transport outside this package is added at
run time with ``register``, or for every process (Spark's Python workers included) by an entry
point in the group ``cmi_datasource.transports`` naming its ``Transport`` object. Files are matched to formats by
their first bytes, in registration order (built-in transports first); the read option
``format`` names one instead.
"""
from __future__ import annotations

import importlib
from typing import Dict, List, Optional

from ..containers import open_capture
from ..errors import Location, UnknownCaptureFormatError, not_one_of
from .base import CaptureFormat, FileView, SpanPayloads, Transport

# One line per transport package shipped with cmi-datasource (each exposes TRANSPORT): its formats.
BUILTIN = {
    "cmi_datasource.transports.mq": ("mqget", "amqsbcg", "dmpmqmsg"),
    "cmi_datasource.transports.tibrv": ("tibrv",),
    "cmi_datasource.transports.mqtt": ("mqtt", "pcap"),
    "cmi_datasource.transports.sapdb": ("sapdb",),
}
# What df.write uses when no option("transport", ...) is given (and write_capture by default).
DEFAULT_TRANSPORT = "mq"
ENTRY_POINT_GROUP = "cmi_datasource.transports"
SNIFF_BYTES = 4096  # what a format's sniff() sees of a file

_TRANSPORTS: Dict[str, Transport] = {}
_FORMATS: Dict[str, CaptureFormat] = {}  # by name, in sniffing order
_CONFIGURED: Dict[str, CaptureFormat] = {}  # formats with read options, by name: one copy per process
_state = {"builtin": False, "entry_points": False}


def register(transport: Transport) -> Transport:
    """Make ``transport`` and its capture formats known in this process; returns it."""
    _load_builtin()
    return _register(transport)


def _register(transport: Transport) -> Transport:
    _check_options(transport)
    for fmt in transport.formats:
        owner = _FORMATS.get(fmt.name)
        if owner is not None and owner.transport is not transport:
            raise ValueError(f"capture format {fmt.name!r} is already registered by transport "
                             f"{owner.transport.name!r}")
    _TRANSPORTS[transport.name] = transport
    for fmt in transport.formats:
        fmt.transport = transport
        _FORMATS[fmt.name] = fmt
    return transport


def _check_options(transport: Transport) -> None:
    """A transport's options are its own ("<transport>.<name>"), and the ones its formats and
    views read are among those it declares."""
    prefix = f"{transport.name}."
    for option in transport.options:
        if not option.key.startswith(prefix) or option.transport != transport.name:
            raise ValueError(f"transport {transport.name!r} declares option {option.name!r} of transport "
                             f"{option.transport!r}: its options are named {prefix}<name>")
    declared = {o.key for o in transport.options if o.side == "read"}
    read = [name for fmt in transport.formats for name in fmt.read_options]
    read += [name for view in transport.views for name in view.options]
    missing = sorted(name for name in read if name.lower() not in declared)
    if missing:
        raise ValueError(f"transport {transport.name!r} reads options it does not declare: {missing}")


def unregister(transport: Transport) -> None:
    """Forget a transport registered with ``register`` (tests, notebooks trying one out)."""
    if _TRANSPORTS.get(transport.name) is transport:
        del _TRANSPORTS[transport.name]
        for fmt in transport.formats:
            if _FORMATS.get(fmt.name) is fmt:
                del _FORMATS[fmt.name]


def _load_builtin(format_name: Optional[str] = None) -> None:
    """Import the built-in transports: all of them, or only the one with format ``format_name``."""
    if _state["builtin"]:
        return
    for module, names in BUILTIN.items():
        if format_name is None or format_name in names:
            transport = importlib.import_module(module).TRANSPORT
            if transport.name not in _TRANSPORTS:
                _register(transport)
    if format_name is None:
        _state["builtin"] = True
    # Whatever was imported first, the order is BUILTIN's: it is the sniffing order.
    ranked = sorted(_FORMATS.items(), key=lambda item: (_rank(item[1].transport),
                                                        list(item[1].transport.formats).index(item[1])))
    _FORMATS.clear()
    _FORMATS.update(ranked)


def _rank(transport: Transport) -> int:
    """BUILTIN's order, then the others: the same in every process, whichever it imported first."""
    module = type(transport).__module__.rsplit(".", 1)[0]
    order = list(BUILTIN)
    return order.index(module) if module in order else len(order)


def _load_entry_points() -> None:
    """Transports other packages declare. Looked up only when needed (a name or a file the
    built-in formats do not know, or the list of all transports): it scans every installed
    distribution, which a Spark task should not pay for."""
    _load_builtin()
    if _state["entry_points"]:
        return
    _state["entry_points"] = True
    from importlib.metadata import entry_points
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        transport = entry.load()
        if transport.name not in _TRANSPORTS:
            register(transport)


def transports() -> List[Transport]:
    """Every known transport in one order for every process (BUILTIN's, then the others in the
    order registered): Spark lays out the messages view's columns from it in one process and
    fills them in another."""
    _load_entry_points()
    return sorted(_TRANSPORTS.values(), key=_rank)


def builtin_transports() -> List[Transport]:
    """The transports shipped with cmi-datasource, in BUILTIN's order (what the options
    documentation lists: the same on every machine, whatever else is installed)."""
    _load_builtin()
    return sorted((t for t in _TRANSPORTS.values() if _rank(t) < len(BUILTIN)), key=_rank)


def file_view(name: str) -> Optional[FileView]:
    """The view called ``name`` that a transport adds (SAP DB's "sapdb"), if one does."""
    return next((view for transport in transports() for view in transport.views if view.name == name), None)


def capture_format(name: str) -> CaptureFormat:
    """The capture format called ``name`` (option ``format``, or recorded in a plan: then it may
    carry read options, ``pcap[mqtt.port=1884]``, ``CaptureFormat.configured``)."""
    if name.endswith("]") and "[" in name:
        found = _CONFIGURED.get(name)
        if found is None:
            base, settings = name[:-1].split("[", 1)
            given = dict(setting.split("=", 1) for setting in settings.split(";") if "=" in setting)
            found = _CONFIGURED[name] = capture_format(base).configured(given)
        return found
    if name not in _FORMATS:
        _load_builtin(name if any(name in names for names in BUILTIN.values()) else None)
    if name not in _FORMATS:
        _load_entry_points()
    found = _FORMATS.get(name)
    if found is None:
        raise not_one_of("format", name, list(_FORMATS))
    return found


def write_format(transport: str) -> CaptureFormat:
    """The capture format ``df.write.option("transport", transport)`` writes."""
    _load_builtin()
    if transport not in _TRANSPORTS:
        _load_entry_points()
    found = _TRANSPORTS.get(transport)
    writable = [t.name for t in _TRANSPORTS.values() if t.write_format]
    if found is None or not found.write_format:
        raise not_one_of("transport", transport, writable)
    return capture_format(found.write_format)


def transport_of_option(key: str) -> Transport:
    """The transport a "<transport>.<name>" option belongs to (``sapdb.port``: SAP DB's)."""
    prefix = key.split(".", 1)[0].lower()
    _load_builtin()
    if prefix not in _TRANSPORTS:
        _load_entry_points()
    found = _TRANSPORTS.get(prefix)
    if found is None:
        raise not_one_of(f"option {key}: transport", prefix, [t.name for t in transports()])
    return found


def _sniffed(head: bytes) -> Optional[CaptureFormat]:
    return next((fmt for fmt in _FORMATS.values() if fmt.sniff(head)), None)


def detect_format(path: str) -> CaptureFormat:
    """The format of the capture file at ``path``, from its first bytes."""
    _load_builtin()
    with open_capture(path) as f:  # a compressed capture: by what it holds
        head = f.read(SNIFF_BYTES)
    found = _sniffed(head)
    if found is None:
        _load_entry_points()
        found = _sniffed(head)
    if found is None:
        raise UnknownCaptureFormatError(
            f"no capture format recognises this file, which starts with {head[:16]!r}; known formats: "
            f"{', '.join(_FORMATS)}", Location(path, None, 0))
    return found


__all__ = ["BUILTIN", "DEFAULT_TRANSPORT", "CaptureFormat", "FileView", "SpanPayloads", "Transport",
           "builtin_transports", "capture_format", "detect_format", "file_view", "register", "transports",
           "unregister", "write_format"]
