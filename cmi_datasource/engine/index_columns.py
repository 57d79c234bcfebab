"""A file's message index as the disk cache keeps it: columns of numbers and bytes, not objects.

Nearly every entry of a large capture's index has one shape: a ``Descriptor`` (its four fields),
the first bytes of its payload, its place in the file, its content key and no details
(``DETAILS_REREAD``) or none at all. Pickled one object at a time, a 5M-row dump's 20,000
entries took 0.13-0.31 s to store on its first read; as a few arrays they take milliseconds.
``IndexColumns.of`` puts those entries in columns and keeps any other (a damaged stretch, a
piece still to be joined, a message with its transport's details or a reread hint) as it is;
``messages`` makes the same list again, entry for entry equal and of the same types.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import List, Sequence, Tuple

import numpy as np

from ..frozen import made
from ..messages import DETAILS_REREAD, Descriptor, Origin, PhysicalMessage

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_NO_FULL_KEY = -1  # in ``full_length``: the payload is held whole (``full_key`` None)


def _is_int64(value: object) -> bool:
    return type(value) is int and _INT64_MIN <= value <= _INT64_MAX  # noqa: E721 (bool and int enums are kept whole)


def _in_columns(message: PhysicalMessage, source: str) -> bool:
    """Whether the entry has the shape the columns hold (anything else is kept as an object)."""
    descriptor, origin, full_key = message.descriptor, message.origin, message.full_key
    return (type(message) is PhysicalMessage and type(message.payload) is bytes  # noqa: E721
            and (message.details is DETAILS_REREAD or message.details is None)
            and message.reread_hint is None and message.problem is None and message.damage is None
            and type(origin) is Origin and origin.source == source and not origin.parts  # noqa: E721
            and not origin.repeated_parts and all(map(_is_int64, origin[1:5]))
            and (descriptor is None or (type(descriptor) is Descriptor and type(descriptor.correl_id) is bytes  # noqa: E721
                                        and _is_int64(descriptor.msg_type) and _is_int64(descriptor.encoding)
                                        and _is_int64(descriptor.ccsid)))
            and (full_key is None or (type(full_key) is tuple and len(full_key) == 2  # noqa: E721
                                      and _is_int64(full_key[0]) and full_key[0] >= 0 and _is_int64(full_key[1]))))


def _all_in_columns(messages: Sequence[PhysicalMessage], source: str) -> bool:
    """``all(_in_columns(m, source) for m in messages)`` but for the numbers being ints that fit,
    which ``IndexColumns.of`` checks on the column it makes of them: a property at a time over the
    list (message by message, the checks cost 3.5 us an entry, a third of what pickling them did)."""
    n = len(messages)
    if set(map(type, messages)) - {PhysicalMessage} or set(map(type, (m.origin for m in messages))) - {Origin}:
        return False
    values = [m.__dict__ for m in messages]
    origins = [v["origin"] for v in values]
    descriptors = [d for d in (v["descriptor"] for v in values) if d is not None]
    keys = [k for k in (v["full_key"] for v in values) if k is not None]
    return (set(type(v["payload"]) for v in values) <= {bytes} and {type(o[0]) for o in origins} <= {str}
            and all(v["details"] is DETAILS_REREAD or v["details"] is None for v in values)
            and all(v["reread_hint"] is None and v["problem"] is None and v["damage"] is None for v in values)
            and {o[0] for o in origins} <= {source} and [o[5] for o in origins].count(()) == n
            and [o[6] for o in origins].count(()) == n
            and set(map(type, descriptors)) <= {Descriptor} and {type(d.correl_id) for d in descriptors} <= {bytes}
            and set(map(type, keys)) <= {tuple} and set(map(len, keys)) <= {2}
            and all(type(k[0]) is int and k[0] >= 0 for k in keys))  # noqa: E721


_NUMBERS = 9  # of an entry, in ``IndexColumns.of``'s order


def _joined(pieces: Sequence[bytes]) -> Tuple[bytes, np.ndarray]:
    """The pieces end to end, and where each starts (one more offset: the end)."""
    ends = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces)).cumsum()
    return b"".join(pieces), np.concatenate([np.zeros(1, dtype=np.int64), ends])


def _cut(data: bytes, starts: np.ndarray) -> List[bytes]:
    bounds = starts.tolist()
    return [data[a:b] for a, b in zip(bounds, bounds[1:])]


@dataclass(frozen=True)
class IndexColumns:
    """The entries of one file's index: those of the common shape in columns (row i: the i-th such
    entry), the others whole with their places in the list (``others``)."""

    source: str
    count: int  # entries in all
    others: Tuple[Tuple[int, PhysicalMessage], ...]
    message_index: np.ndarray  # int64 columns of the entries' origins
    file_offset: np.ndarray
    file_end: np.ndarray
    header_length: np.ndarray
    has_descriptor: np.ndarray  # bool
    msg_type: np.ndarray  # int64 columns of the descriptors (0 where there is none)
    encoding: np.ndarray
    ccsid: np.ndarray
    correl_ids: bytes
    correl_starts: np.ndarray
    payloads: bytes  # what each entry holds of its payload, end to end
    payload_starts: np.ndarray
    full_length: np.ndarray  # int64, _NO_FULL_KEY for a payload held whole
    full_crc: np.ndarray  # int64
    details_reread: np.ndarray  # bool: details DETAILS_REREAD, else None

    @classmethod
    def of(cls, messages: Sequence[PhysicalMessage], source: str, one_by_one: bool = False) -> "IndexColumns":
        """The entries of ``messages``, the index of the file ``source``; ``one_by_one``: each
        entry checked on its own (the list as a whole holds one that is kept whole)."""
        others: Tuple[Tuple[int, PhysicalMessage], ...] = ()
        if one_by_one or not _all_in_columns(messages, source):
            others = tuple((i, m) for i, m in enumerate(messages) if not _in_columns(m, source))
        if others:
            apart = {i for i, _ in others}
            plain = [m for i, m in enumerate(messages) if i not in apart]
        else:
            plain = list(messages)
        n = len(plain)
        descriptors = [m.descriptor for m in plain]
        no_descriptor = Descriptor(0, b"", 0, 0)
        described = [no_descriptor if d is None else d for d in descriptors]
        no_key = (_NO_FULL_KEY, 0)
        flat = list(itertools.chain.from_iterable(
            (o[1], o[2], o[3], o[4], d.msg_type, d.encoding, d.ccsid) + (k or no_key)
            for o, d, k in zip([m.origin for m in plain], described, [m.full_key for m in plain])))
        try:
            if set(map(type, flat)) - {int}:  # a bool or an int enum would come back an int
                raise OverflowError
            numbers = np.array(flat, dtype=np.int64).reshape(n, _NUMBERS)
        except OverflowError:  # a number that is no int, or past 64 bits: such entries are kept whole
            if one_by_one:
                raise AssertionError("entries checked one by one hold only int64 numbers") from None
            return cls.of(messages, source, one_by_one=True)
        correl_ids, correl_starts = _joined([d.correl_id for d in described])
        payloads, payload_starts = _joined([m.payload for m in plain])
        (message_index, file_offset, file_end, header_length, msg_type, encoding, ccsid, full_length,
         full_crc) = (numbers[:, i].copy() for i in range(_NUMBERS))
        return cls(source=source, count=len(messages), others=others, message_index=message_index,
                   file_offset=file_offset, file_end=file_end, header_length=header_length,
                   has_descriptor=np.array([d is not None for d in descriptors], dtype=bool), msg_type=msg_type,
                   encoding=encoding, ccsid=ccsid, correl_ids=correl_ids, correl_starts=correl_starts,
                   payloads=payloads, payload_starts=payload_starts, full_length=full_length, full_crc=full_crc,
                   details_reread=np.array([m.details is DETAILS_REREAD for m in plain], dtype=bool))

    def messages(self) -> List[PhysicalMessage]:
        """The entries, as ``of`` was given them."""
        source = self.source
        descriptors = [made(Descriptor, {"msg_type": t, "correl_id": c, "encoding": e, "ccsid": s}) if has else None
                       for has, t, c, e, s in zip(self.has_descriptor.tolist(), self.msg_type.tolist(),
                                                  _cut(self.correl_ids, self.correl_starts),
                                                  self.encoding.tolist(), self.ccsid.tolist())]
        plain = [made(PhysicalMessage, {"descriptor": d, "payload": p,
                                        "origin": Origin(source, i, o, e, h),
                                        "details": DETAILS_REREAD if reread else None,
                                        "full_key": None if length == _NO_FULL_KEY else (length, crc)})
                 for d, p, i, o, e, h, reread, length, crc in zip(
                     descriptors, _cut(self.payloads, self.payload_starts), self.message_index.tolist(),
                     self.file_offset.tolist(), self.file_end.tolist(), self.header_length.tolist(),
                     self.details_reread.tolist(), self.full_length.tolist(), self.full_crc.tolist())]
        if not self.others:
            return plain
        found: List[PhysicalMessage] = []
        taken = 0  # entries of ``plain`` placed
        for place, message in self.others:
            gap = place - len(found)
            found.extend(plain[taken:taken + gap])
            taken += gap
            found.append(message)
        found.extend(plain[taken:])
        return found
