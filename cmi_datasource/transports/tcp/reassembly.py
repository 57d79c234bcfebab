"""TCP streams rebuilt from captured segments: each direction of each connection as one byte stream.

Segments are placed by sequence number (relative to the SYN, or to the lowest seen), whatever
order they were captured in; a retransmission adds only the bytes not yet held; a hole in the
sequence space ends the usable stream there and is reported (``gap``), never bridged. Every byte
of a stream knows the frame that carried it, so a message read from the stream can name the
capture frames it came from.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

Endpoint = Tuple[str, int]  # (address, port)
_MOD = 1 << 32


@dataclass(frozen=True)
class Frame:
    number: int  # 1-based, as Wireshark counts frames
    offset: int  # where its record starts in the capture file
    end: int  # where its record ends


@dataclass
class _Direction:
    syn: Optional[int] = None
    initiated: bool = False  # this side sent the SYN without ACK: it is the client
    segments: List[Tuple[int, bytes, Frame]] = field(default_factory=list)  # (seq, data, frame)


@dataclass(frozen=True)
class Stream:
    source: Endpoint
    destination: Endpoint
    data: bytes
    starts: List[int]  # stream offset where each frame's bytes start ...
    frames: List[Frame]  # ... and that frame
    gap: Optional[str]  # why the stream ends early, if it does
    syn_seen: bool
    initiated: bool  # its side opened the connection (sent the first SYN)

    def frame_at(self, offset: int) -> Frame:
        return self.frames[max(bisect.bisect_right(self.starts, offset) - 1, 0)]

    def frames_of(self, start: int, end: int) -> Tuple[Frame, Frame]:
        """The frames that carried the first and the last byte of stream bytes [start, end)."""
        if not self.frames:
            return Frame(0, 0, 0), Frame(0, 0, 0)
        return self.frame_at(start), self.frame_at(max(end - 1, start))


class Reassembler:
    """Segments in, streams out (``streams``): one per direction that carried data."""

    def __init__(self):
        self._directions: Dict[Tuple[Endpoint, Endpoint], _Direction] = {}

    def add(self, source: Endpoint, destination: Endpoint, seq: int, syn: bool, data: bytes, frame: Frame,
            initiates: bool = False) -> None:
        """A captured segment; ``syn``: it carries SYN (its sequence number is the stream's origin),
        ``initiates``: without ACK, so its sender opened the connection."""
        direction = self._directions.setdefault((source, destination), _Direction())
        if syn:
            direction.syn = seq
            direction.initiated = direction.initiated or initiates
        if data:
            direction.segments.append((seq, data, frame))

    def streams(self) -> List[Stream]:
        return [stream for (src, dst), direction in self._directions.items()
                if (stream := _rebuild(src, dst, direction)) is not None]


def _rebuild(source: Endpoint, destination: Endpoint, direction: _Direction) -> Optional[Stream]:
    if not direction.segments:
        return None
    if direction.syn is not None:
        base = (direction.syn + 1) % _MOD
    else:  # no SYN captured: the lowest sequence number seen, counting around the 32-bit wrap
        first = direction.segments[0][0]
        base = min((seq for seq, _, _ in direction.segments), key=lambda seq: _signed((seq - first) % _MOD))
    placed = sorted(((_relative(seq, base), data, frame) for seq, data, frame in direction.segments),
                    key=lambda item: (item[0], item[2].number))
    parts: List[bytes] = []
    starts: List[int] = []
    frames: List[Frame] = []
    held, gap = 0, None
    for at, data, frame in placed:
        if at > held:
            gap = (f"TCP bytes {held} to {at} of {source[0]}:{source[1]} -> {destination[0]}:{destination[1]} "
                   f"were not captured (first missing after frame {frames[-1].number if frames else '-'})")
            break
        fresh = data[held - at:] if at < held else data
        if fresh:
            starts.append(held)
            frames.append(frame)
            parts.append(fresh)
            held += len(fresh)
    return Stream(source, destination, b"".join(parts), starts, frames, gap, direction.syn is not None,
                  direction.initiated)


def _signed(value: int) -> int:
    return value - _MOD if value >= _MOD // 2 else value


def _relative(seq: int, base: int) -> int:
    """The stream offset of sequence number ``seq`` (a retransmission from before ``base`` is negative)."""
    return _signed((seq - base) % _MOD)
