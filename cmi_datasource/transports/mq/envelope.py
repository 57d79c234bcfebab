"""Walk the MQ header chain in front of message data and remove it (docs/spec/mq.md#the-header-chain, #mqmde).

The MQMD's Format/Encoding/CCSID describe the first structure; each header's own
Encoding/CCSID/Format describe what follows it. Recognised:

* ``MQXMIT``  MQXQH (transmission queue): its embedded version-1 MQMD becomes the descriptor.
* ``MQHMDE``  MQMDE: its version-2 fields (GroupId, MsgSeqNumber, Offset, MsgFlags,
  OriginalLength) replace the descriptor's, per IBM's table (docs/spec/mq.md#mqmde): a version-2 MQMD whose
  version-2 fields are not all default keeps them, and the MQMDE stays data; an MQMDE with
  a bad StrucId, Version, StrucLength, Encoding or CCSID is data, never an error.
* ``MQDEAD``  MQDLH (dead-letter queue): reason and destination are kept.
* ``MQHRF2``  MQRFH2: skipped by StrucLength, its name/value folders kept as text.
* any other ``MQH*`` header: skipped by StrucLength.

The walk stops at any other Format (``MQSTR``, blanks, unknown names).
"""
from __future__ import annotations

import dataclasses
import struct
from typing import List, Optional, Tuple

from ...charsets import UnknownCcsid, code_page
from ...encoding import integer_order
from ...errors import CmiFormatError, TruncatedError
from ...messages import PhysicalMessage
from .headers import (FORMAT_DEAD_LETTER, FORMAT_MD_EXTENSION, FORMAT_RFH2, FORMAT_XMIT, MQCCSI_INHERIT,
                      MQDLH, MQH_COMMON, MQMDE, MQMDE_V2_DEFAULTS, MQMDE_V2_FIELDS, MQRFH2, MQXQH,
                      struc_id_is_ebcdic, struc_id_matches)
from .message import Envelope, MqDetails, mqmd_of, neutral_descriptor
from .mqmd import MQMD, MQMD_V1, descriptor_from_bytes

_ENVELOPE_FORMATS = (FORMAT_XMIT, FORMAT_MD_EXTENSION, FORMAT_DEAD_LETTER)


def has_envelope(descriptor: Optional[MQMD]) -> bool:
    return descriptor is not None and is_envelope_format(descriptor.format)


def is_envelope_format(format_name: str) -> bool:
    """Whether data in this MQ format starts with a header ``unwrap`` removes."""
    name = format_name.strip()
    return name in _ENVELOPE_FORMATS or name.startswith("MQH")


def _text_codec(struc_id: bytes, ccsid: int) -> str:
    """Code page of a header's character fields: its CCSID, or what its StrucId is written in."""
    try:
        if ccsid > 0:
            return code_page(ccsid).codec
    except UnknownCcsid:
        pass
    return "cp037" if struc_id_is_ebcdic(struc_id) else "latin-1"


def _text(raw: bytes, codec: str) -> str:
    return raw.decode(codec, errors="replace").rstrip(" \0")


def _expects_ebcdic(ccsid: int) -> Optional[bool]:
    try:
        return code_page(ccsid).space == 0x40 if ccsid > 0 else None
    except UnknownCcsid:
        return None


def _mqmde_if_valid(payload: bytes, pos: int, order: str, ccsid: int) -> Optional[dict]:
    """The MQMDE at ``pos`` if it is one the queue manager would adopt, else None (it is data)."""
    if len(payload) - pos < MQMDE.size:
        return None
    raw_id = payload[pos:pos + 4]
    ebcdic = _expects_ebcdic(ccsid)
    if ebcdic is None:
        if not struc_id_matches(raw_id, "MDE "):
            return None
    elif raw_id != "MDE ".encode("cp037" if ebcdic else "ascii"):
        return None  # written in another character set than the structure before it says
    mde = MQMDE.unpack(payload, pos, order)
    if mde["version"] != 2 or mde["struc_length"] != MQMDE.size:
        return None  # a version or length read in the wrong byte order lands here too
    if mde["encoding"] & 0x0F not in (0, 1, 2) or (mde["encoding"] & 0xF00) > 0x400:
        return None
    if mde["ccsid"] < MQCCSI_INHERIT or mde["ccsid"] > 65535:
        return None
    return mde


def _rfh2_folders(payload: bytes, start: int, end: int, order: str, ccsid: int,
                  message: PhysicalMessage) -> Tuple[str, ...]:
    codec = _text_codec(b"", ccsid) if ccsid > 0 else "utf-8"
    folders: List[str] = []
    pos = start
    while pos + 4 <= end:
        (length,) = struct.unpack_from(order + "i", payload, pos)
        pos += 4
        if length < 0 or pos + length > end:
            raise TruncatedError(f"MQRFH2 folder of {length} bytes passes the header's end",
                                 message.location(pos - 4))
        folders.append(payload[pos:pos + length].decode(codec, errors="replace").rstrip(" \0"))
        pos += length
    return tuple(folders)


def _expect(payload: bytes, pos: int, struc_id: str, format_name: str, where) -> None:
    if not struc_id_matches(payload[pos:pos + 4], struc_id):
        raise CmiFormatError(f"Format is {format_name} but no {struc_id.strip()} structure follows", where)


def _what_follows(header: dict, ccsid: int) -> Tuple[int, int, str]:
    """(Encoding, CCSID, Format) a header gives the data after it; CCSID -2 inherits the header's own."""
    codec = _text_codec(header["struc_id"], ccsid)
    following = ccsid if header["ccsid"] == MQCCSI_INHERIT else header["ccsid"]
    return header["encoding"], following, header["format"].decode(codec)


def unwrap(message: PhysicalMessage) -> PhysicalMessage:
    """The message with its MQ headers removed and its descriptor the one that describes the data
    (``header_length`` counts the bytes removed).

    A header that cannot be walked (cut short, a length past the end) leaves the message
    as captured, with the reason in ``envelope.problem``, so the messages view shows it.
    """
    outer = mqmd_of(message)
    if not has_envelope(outer):
        return message
    payload = message.payload
    descriptor = outer
    encoding, ccsid, fmt = outer.encoding, outer.ccsid, outer.format
    pos = 0
    headers: List[str] = []
    info: dict = {}
    try:
        while True:
            name = fmt.strip()
            order = integer_order(encoding)
            where = message.location(pos)
            if name == FORMAT_XMIT:
                _expect(payload, pos, "XQH ", name, where)
                xqh = MQXQH.unpack(payload, pos, order, message.location())
                codec = _text_codec(xqh["struc_id"], ccsid)
                info["remote_queue"] = _text(xqh["remote_q_name"], codec)
                info["remote_qmgr"] = _text(xqh["remote_q_mgr_name"], codec)
                descriptor = descriptor_from_bytes(payload, pos + MQXQH.size, order, 1, codec, message.location())
                encoding, ccsid, fmt = descriptor.encoding, descriptor.ccsid, descriptor.format
                pos += MQXQH.size + MQMD_V1.size
                headers.append("MQXQH")
            elif name == FORMAT_MD_EXTENSION:
                mde = _mqmde_if_valid(payload, pos, order, ccsid)
                if mde is None:
                    break  # docs/spec/mq.md#mqmde: a wrong character set, encoding or version makes it data
                if descriptor.version >= 2 and any(getattr(descriptor, f) != MQMDE_V2_DEFAULTS[f]
                                                   for f in MQMDE_V2_FIELDS):
                    break  # docs/spec/mq.md#mqmde: a version-2 MQMD with its own values keeps them
                descriptor = dataclasses.replace(descriptor, **{f: mde[f] for f in MQMDE_V2_FIELDS})
                encoding, ccsid, fmt = _what_follows(mde, ccsid)
                pos += MQMDE.size
                headers.append("MQMDE")
            elif name == FORMAT_DEAD_LETTER:
                _expect(payload, pos, "DLH ", name, where)
                dlh = MQDLH.unpack(payload, pos, order, message.location())
                codec = _text_codec(dlh["struc_id"], ccsid)
                info["dead_letter_reason"] = dlh["reason"]
                info["dead_letter_queue"] = _text(dlh["dest_q_name"], codec)
                info["dead_letter_qmgr"] = _text(dlh["dest_q_mgr_name"], codec)
                encoding, ccsid, fmt = _what_follows(dlh, ccsid)
                pos += MQDLH.size
                headers.append("MQDLH")
            elif name.startswith("MQH"):
                common = MQH_COMMON.unpack(payload, pos, order, message.location())
                length = common["struc_length"]
                if length < MQH_COMMON.size or pos + length > len(payload):
                    raise TruncatedError(f"{name} header declares {length} bytes; {len(payload) - pos} remain",
                                         where)
                codec = _text_codec(common["struc_id"], ccsid)
                if name == FORMAT_RFH2:
                    rfh = MQRFH2.unpack(payload, pos, order, message.location())
                    info["properties"] = info.get("properties", ()) + _rfh2_folders(
                        payload, pos + MQRFH2.size, pos + length, order, rfh["name_value_ccsid"], message)
                    headers.append("MQRFH2")
                else:
                    headers.append(_text(common["struc_id"], codec) or name)
                encoding, ccsid, fmt = _what_follows(common, ccsid)
                pos += length
            else:
                break
    except (CmiFormatError, UnicodeDecodeError) as e:
        problem = e.summary() if isinstance(e, CmiFormatError) else f"a header's Format is not valid {e.encoding}"
        return dataclasses.replace(message, details=MqDetails(outer, Envelope(outer, tuple(headers),
                                                                              problem=problem)))
    if not headers:
        return message
    effective = dataclasses.replace(descriptor, encoding=encoding, ccsid=ccsid, format=fmt)
    return dataclasses.replace(message, descriptor=neutral_descriptor(effective), payload=payload[pos:],
                               origin=message.origin._replace(header_length=pos),
                               details=MqDetails(effective, Envelope(outer, tuple(headers), **info)))
