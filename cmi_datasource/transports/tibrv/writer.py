"""Writing CMI attachments as TIB/Rendezvous messages (docs/spec/tibrv.md), the reverse of ``records.py``.

The writer is handed the messages CMI over MQ would send (``cmi/emit.py``, in writer order:
header, application message, each attachment's sequenced messages, its count) and sends, per
attachment, the RV messages docs/spec/tibrv.md#cmi-message-types lists: HDR, MSG, then DAT, VAR,
ATO... or FDC, ATX/ATB..., then LST counting the RV messages sent for the attachment. Records
that straddle CMI messages are joined first: an RV message holds whole variables, observations
and file records. Observations must be big-endian IEEE (Encoding 273), which ATO's F64 values
are; numerics are sent as full doubles, their low-order bytes zero as stored. ATO fields are
written by a compiled kernel.
"""
from __future__ import annotations

import struct
from typing import BinaryIO, Iterable, Iterator, List, Optional

import numpy as np

from ...charsets import code_page
from ...cmi.correl import KEY, MSGTYPE_CMI_HEADER
from ...cmi.header import ATTACHMENT_DATASET, CmiHeader, parse_header
from ...cmi.records import DATASET_DEFINITION, FILE_PROLOGUE, VARIABLE_DEFINITION, read_record
from ...cmi.wire import FieldReader, WireFormat
from ...compiled import kernel
from ...encoding import ENCODING_BIG_ENDIAN, integer_order
from ...errors import CmiEncodeError, Location
from ...messages import OutgoingMessage
from .records import DAT_FIELDS, HDR_ENTRY, RECORD_TYPES, VAR_ENTRY
from .wire import INT, OPAQUE, STRING, UINT, field_bytes, message_bytes

MAX_FIELD_ID = 0xFFFF
OBSERVATION_FIELD_BYTES = 1 << 20  # the fields of one ATO message at most (about 1 MiB)
_BLANK24 = b" " * 24


def _int(kind: str, fid: int, value: int) -> bytes:
    return field_bytes(kind, fid, INT, struct.pack(">i", value))


def _string(kind: str, fid: int, value: bytes) -> bytes:
    return field_bytes(kind, fid, STRING, bytes(value) + b"\0")


def _hdr(header: CmiHeader, codepage) -> bytes:
    fields = [_string("HDR", 1, _BLANK24), field_bytes("HDR", 2, UINT, struct.pack(">I", header.original_msg_type)),
              _string("HDR", 3, _BLANK24), _string("HDR", 4, _BLANK24), _int("HDR", 5, len(header.attachments))]
    for n, e in enumerate(header.attachments):
        values = {"attachment_type": e.attachment_type, "correl_id": _BLANK24,
                  "qualifier1": codepage.encode(e.qualifier1), "qualifier2": codepage.encode(e.qualifier2),
                  "description": codepage.encode(e.description),
                  "minor_version": e.minor_version, "major_version": e.major_version}
        fid = 6 + 10 * n
        for i, name in enumerate(HDR_ENTRY):
            if name is None:  # the length of the string that follows
                fields.append(_int("HDR", fid + i, len(values[HDR_ENTRY[i + 1]])))
            elif isinstance(values[name], bytes):
                fields.append(_string("HDR", fid + i, values[name]))
            else:
                fields.append(_int("HDR", fid + i, values[name]))
    return message_bytes(fields)


def _msg(text: bytes) -> bytes:
    """The application message as one string parameter (docs/spec/tibrv.md#msg-and-data: data type 4)."""
    if not text:
        return message_bytes([_int("MSG", 1, 0)])
    return message_bytes([_int("MSG", 1, 1), _int("MSG", 2, 4), _string("MSG", 3, text)])


def _dat(definition: dict) -> bytes:
    fields = [_int("DAT", 1, RECORD_TYPES["DAT"])]
    strings = {"dataset_type": 3, "label": 5, "compress": 10, "encrypt": 13, "collating_sequence": 16}
    for fid in range(2, 26):
        name = DAT_FIELDS.get(fid)
        if name is None:  # a string's length, or max_gen (25)
            of = next((n for n, at in strings.items() if at == fid), None)
            fields.append(_int("DAT", fid, len(definition[of]) if of else 0))
        elif name in strings or name == "reuse":
            value = definition[name] if name != "reuse" else bytes([definition[name]]).rstrip(b"\0")
            fields.append(_string("DAT", fid, value))
        elif name.endswith("_password"):
            fields.append(field_bytes("DAT", fid, OPAQUE, definition[name]))
        elif name == "sort_flags":
            fields.append(field_bytes("DAT", fid, INT, struct.pack(">h", definition[name])))
        else:
            fields.append(_int("DAT", fid, definition[name]))
    return message_bytes(fields)


def _var(variables: List[dict]) -> bytes:
    fields = [_int("VAR", 1, len(variables)), _int("VAR", 2, RECORD_TYPES["VAR"])]
    for n, v in enumerate(variables):
        fid = 3 + 15 * n
        for i, name in enumerate(VAR_ENTRY):
            if name is None:
                fields.append(_int("VAR", fid + i, len(v[VAR_ENTRY[i + 1]])))
            elif name in ("name", "format_name", "informat_name", "label"):
                fields.append(_string("VAR", fid + i, v[name]))
            elif name in ("type", "nsort"):
                fields.append(_string("VAR", fid + i, b"1" if name == "type" and v[name] in (1, ord("1"))
                                      else b"2" if name == "type" else bytes([v[name]]).rstrip(b"\0")))
            else:
                fields.append(_int("VAR", fid + i, v[name]))
    return message_bytes(fields)


@kernel
def _ato_fields(rows, first, count, numeric, lengths, offsets, obs_length, fid, out):
    """The (vtype, value) fields of observations first..first+count of ``rows`` into ``out``;
    returns the bytes written. Bounds: the caller sizes ``out`` for 15 + 16 bytes a numeric and
    15 + 5 + length + 1 bytes a character value, and keeps every field id below 65536."""
    w = 0
    for r in range(first, first + count):
        base = r * obs_length
        for v in range(lengths.shape[0]):
            for pair in range(2):
                out[w] = 6  # "ATO\0" and the field id
                out[w + 1] = 65
                out[w + 2] = 84
                out[w + 3] = 79
                out[w + 4] = 0
                out[w + 5] = (fid >> 8) & 0xFF
                out[w + 6] = fid & 0xFF
                w += 7
                fid += 1
                if pair == 0:
                    out[w] = 11  # INT, 4 bytes: the vtype
                    out[w + 1] = 4
                    out[w + 2] = 0
                    out[w + 3] = 0
                    out[w + 4] = 0
                    out[w + 5] = 1 if numeric[v] else 2
                    w += 6
                elif numeric[v]:
                    out[w] = 13  # REAL, 8 bytes: the stored high-order bytes, the rest zero
                    out[w + 1] = 8
                    w += 2
                    for k in range(8):
                        out[w + k] = rows[base + offsets[v] + k] if k < lengths[v] else 0
                    w += 8
                else:
                    n = lengths[v]  # trailing blanks are not sent: the reader pads them back
                    while n > 0 and rows[base + offsets[v] + n - 1] == 32:
                        n -= 1
                    out[w] = 8  # STRING: the characters and a NUL
                    size = n + 1
                    if size < 0x78:
                        out[w + 1] = size
                        w += 2
                    elif size + 2 < 0x7530:
                        out[w + 1] = 0x79
                        out[w + 2] = ((size + 2) >> 8) & 0xFF
                        out[w + 3] = (size + 2) & 0xFF
                        w += 4
                    else:
                        out[w + 1] = 0x7A
                        out[w + 2] = ((size + 4) >> 24) & 0xFF
                        out[w + 3] = ((size + 4) >> 16) & 0xFF
                        out[w + 4] = ((size + 4) >> 8) & 0xFF
                        out[w + 5] = (size + 4) & 0xFF
                        w += 6
                    for k in range(n):
                        out[w + k] = rows[base + offsets[v] + k]
                    out[w + n] = 0
                    w += n + 1
    return w


def _ato_messages(rows: np.ndarray, numeric, lengths, obs_length: int) -> Iterator[bytes]:
    nvars = len(lengths)
    count = len(rows) // obs_length if obs_length else 0
    if not nvars or not count:
        return
    lengths_a = np.asarray(lengths, dtype=np.int64)
    offsets = (np.cumsum(lengths_a) - lengths_a).astype(np.int64)
    numeric_a = np.asarray(numeric, dtype=np.bool_)
    # Bytes of a row's fields, at most.
    per_row = int(sum(31 if n else 27 + length for n, length in zip(numeric, lengths)))
    step = max(1, min(OBSERVATION_FIELD_BYTES // per_row, (MAX_FIELD_ID - 3) // (2 * nvars)))
    for first in range(0, count, step):
        chunk = min(step, count - first)
        out = np.empty(chunk * per_row, dtype=np.uint8)
        written = _ato_fields(rows, first, chunk, numeric_a, lengths_a, offsets, obs_length, 3, out)
        yield message_bytes([_int("ATO", 1, chunk), _int("ATO", 2, RECORD_TYPES["ATO"]), out[:written].tobytes()])


class _Attachment:
    """One attachment's CMI records, gathered as its sequenced messages go by."""

    def __init__(self, key: bytes, attachment_type: int):
        self.key, self.type = key, attachment_type
        self.record_type: Optional[int] = None
        self.stream = bytearray()
        self.layout = None  # (numeric, lengths, obs_length) once the definitions are read
        self.definition: Optional[dict] = None
        self.prologue_seen = False
        self.sent = 0


def rv_messages(messages: Iterable[OutgoingMessage]) -> Iterator[bytes]:
    """RV messages for CMI messages in writer order (``cmi.emit.attachment_messages``)."""
    header: Optional[CmiHeader] = None
    attachments: List[_Attachment] = []
    for m in messages:
        d = m.descriptor
        if d.encoding != ENCODING_BIG_ENDIAN:
            raise CmiEncodeError(f"TIB/RV carries big-endian IEEE numbers: write with encoding "
                                 f"{ENCODING_BIG_ENDIAN}, not {d.encoding}")
        wire = WireFormat(integer_order(d.encoding), 4, True)
        codepage = code_page(d.ccsid or 1208)
        if d.msg_type == MSGTYPE_CMI_HEADER:
            header = parse_header(m.payload, wire.order, codepage, Location())
            attachments = [_Attachment(e.key, e.attachment_type) for e in header.attachments]
            yield _hdr(header, codepage)
            continue
        if header is not None and d.correl_id == header.message_correl_id:
            yield _msg(m.payload)
            continue
        att = next((a for a in attachments if a.key == d.correl_id[KEY]), None)
        if att is None:
            raise CmiEncodeError("a CMI message for no attachment of its header")
        sequence = int.from_bytes(d.correl_id[16:20], "big")
        if sequence == 0:  # the count message: what is gathered goes out, then LST
            yield from _flush(att, wire)
            yield message_bytes([_int("LST", 1, att.sent)])
            continue
        if att.type == ATTACHMENT_DATASET:
            record_type = FieldReader(m.payload, wire, lambda at: Location()).int32("record type")
            if record_type != att.record_type:
                yield from _flush(att, wire)
                att.record_type = record_type
            att.stream += m.payload[4:]
            if record_type == RECORD_TYPES["ATO"] and att.layout:
                yield from _observations(att, final=False)
        elif not att.prologue_seen:
            prologue = read_record(FieldReader(m.payload, wire, lambda at: Location()), FILE_PROLOGUE)
            att.prologue_seen = True
            att.sent += 1
            yield message_bytes([_int("FDC", 1, prologue["lrecl"]), _int("FDC", 2, prologue["size"])])
        else:
            att.stream += m.payload
            yield from _file_records(att, wire, final=False)


def _flush(att: _Attachment, wire: WireFormat) -> Iterator[bytes]:
    """Send what is gathered of the record stream that just ended."""
    if att.type != ATTACHMENT_DATASET:
        yield from _file_records(att, wire, final=True)
        return
    kind = {v: k for k, v in RECORD_TYPES.items()}.get(att.record_type)
    data, att.stream = bytes(att.stream), bytearray()
    if kind == "DAT":
        att.definition = read_record(FieldReader(data, wire, lambda at: Location()), DATASET_DEFINITION)
        att.sent += 1
        yield _dat(att.definition)
    elif kind == "VAR":
        reader = FieldReader(data, wire, lambda at: Location())
        variables = [read_record(reader, VARIABLE_DEFINITION) for _ in range(att.definition["nvars"])]
        for at in range(0, len(variables), 1000):  # VAR messages of at most 1000 variables
            att.sent += 1
            yield _var(variables[at:at + 1000])
        numeric = tuple(v["type"] in (1, ord("1")) for v in variables)
        att.layout = (numeric, tuple(v["length"] for v in variables), att.definition["obs_length"])
    elif kind == "ATO":
        att.stream = bytearray(data)
        yield from _observations(att, final=True)
    elif kind in ("ATI", "ATC"):
        att.sent += 1
        yield message_bytes([_int(kind, 1, att.record_type), _int(kind, 2, 0)])


def _observations(att: _Attachment, final: bool) -> Iterator[bytes]:
    numeric, lengths, obs_length = att.layout
    whole = len(att.stream) - len(att.stream) % obs_length if obs_length else 0
    if not final and whole < (64 << 10):
        return  # gather more: fewer, fuller ATO messages
    rows = np.frombuffer(bytes(att.stream[:whole]), dtype=np.uint8)
    del att.stream[:whole]
    for ato in _ato_messages(rows, numeric, lengths, obs_length):
        att.sent += 1
        yield ato


def _file_records(att: _Attachment, wire: WireFormat, final: bool) -> Iterator[bytes]:
    """ATX/ATB messages of the whole records gathered (a record may straddle CMI messages)."""
    kind = "ATX" if att.type == 2 else "ATB"
    reader = FieldReader(bytes(att.stream), wire, lambda at: Location())
    records: List[bytes] = []
    while reader.remaining >= wire.long_size:
        at = reader.pos
        length = reader.long("record length")
        if length > reader.remaining:
            reader.pos = at
            break
        records.append(reader.raw(length))
    del att.stream[:reader.pos]
    if final and att.stream:
        raise CmiEncodeError("a file record is cut short")
    for first in range(0, len(records), 1000):
        chunk = records[first:first + 1000]
        fields = [_int(kind, 1, len(chunk))]
        for n, record in enumerate(chunk):
            fields.append(_int(kind, 2 + 2 * n, len(record)))
            fields.append(_string(kind, 3 + 2 * n, record) if kind == "ATX"
                          else field_bytes(kind, 3 + 2 * n, OPAQUE, record))
        att.sent += 1
        yield message_bytes(fields)


def write_rv(out: BinaryIO, messages: Iterable[OutgoingMessage]) -> int:
    count = 0
    for rv in rv_messages(messages):
        out.write(rv)
        count += 1
    return count


__all__ = ["rv_messages", "write_rv"]
