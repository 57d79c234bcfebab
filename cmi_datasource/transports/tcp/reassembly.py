"""TCP streams rebuilt from captured segments as they come: each direction of each connection one byte stream.

Segments are placed by sequence number (relative to the SYN, or to the lowest seen), whatever
order they were captured in; a retransmission adds only the bytes not yet held; a hole in the
sequence space ends the usable stream there and is reported (``gap``), never bridged. Bytes are
handed on as soon as they are in order (``Direction.add``), each piece with the frame that
carried it, so that a message read from the stream can name the capture frames it came from.

Memory is bounded, whatever the capture: what waits behind a hole (``early``) may take at most
``limit`` bytes, past which the hole is taken as lost; a direction whose SYN was not captured
keeps its segments until the end of the capture or ``NO_SYN_LOOKAHEAD`` bytes (its start is the
lowest sequence number among them), then goes on from there.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

Endpoint = Tuple[str, int]  # (address, port)
_MOD = 1 << 32
Piece = Tuple[bytes, "Frame"]  # stream bytes in order, and the frame that carried them


@dataclass(frozen=True)
class Frame:
    number: int  # 1-based, as Wireshark counts frames
    offset: int  # where its record starts in the capture file
    end: int  # where its record ends


NO_FRAME = Frame(0, 0, 0)  # where a stream lost before its first byte places what it reports
# A stream whose SYN was not captured starts at the lowest sequence number among its first this
# many bytes (segments captured out of order are so close together).
NO_SYN_LOOKAHEAD = 1 << 20


class Direction:
    """One direction of one connection: segments in (``add``), its bytes out in order."""

    def __init__(self, source: Endpoint, destination: Endpoint, limit: int):
        self.source, self.destination, self.limit = source, destination, limit
        self.lookahead = min(limit, NO_SYN_LOOKAHEAD)
        self.initiated = False  # this side sent the SYN without ACK: it is the client
        self.base: Optional[int] = None  # the sequence number of stream byte 0, once known
        self.held = 0  # stream bytes handed on
        self.last_frame: Optional[Frame] = None  # of the last bytes handed on
        self.gap: Optional[str] = None  # why the stream ended early, once it did
        # Segments not yet handed on: (stream offset, frame number, data, frame); by raw
        # sequence number while ``base`` is unknown.
        self._early: List[Tuple[int, int, bytes, Frame]] = []
        self._early_frames = FrameNumbers()  # theirs, for ``waiting_frame`` without a walk over them
        self.early_bytes = 0

    def add(self, seq: int, syn: bool, data: bytes, frame: Frame, initiates: bool = False) -> List[Piece]:
        """A captured segment; ``syn``: it carries SYN (its sequence number is the stream's
        origin), ``initiates``: without ACK, so its sender opened the connection. Returns the
        bytes now in order."""
        if syn:
            self.initiated = self.initiated or initiates
            if self.base is None:
                self._place((seq + 1) % _MOD)
        if not data or self.gap is not None:
            return self._in_order() if syn else []
        if self.base is None:
            self._keep(seq, data, frame)
            if self.early_bytes > self.lookahead:  # no SYN: the lowest sequence number held starts the stream
                self._place(self._lowest())
            return self._in_order()
        at = _signed((seq - self.base) % _MOD)
        if at + len(data) <= self.held:
            return []  # a retransmission of bytes handed on
        if at == self.held and not self._early:  # the next bytes, nothing waiting: most segments
            self.held += len(data)
            self.last_frame = frame
            return [(data, frame)]
        self._keep(at, data, frame)
        pieces = self._in_order()
        if self.early_bytes > self.limit:  # a hole with this much behind it is not filled any more
            self._lose_the_rest()
        return pieces

    def end(self) -> List[Piece]:
        """The end of the capture (or of waiting, when all streams together hold too much): a
        stream whose SYN was not captured starts now; a hole still open ends the stream
        (``gap``). Returns the bytes now in order."""
        if self.base is None and self._early:
            self._place(self._lowest())
        pieces = self._in_order()
        if self._early:
            self._lose_the_rest()
        return pieces

    @property
    def waiting_frame(self) -> Optional[int]:
        """The first frame whose bytes still wait here (a hole before them), else None: what this
        direction may yet give can start no earlier. With bytes waiting, the last frame handed on
        counts too (a gap is reported there)."""
        earliest = self._early_frames.lowest() if self._early else None
        if earliest is None:
            return None
        return min(earliest, (self.last_frame or NO_FRAME).number)

    def _keep(self, at: int, data: bytes, frame: Frame) -> None:
        heapq.heappush(self._early, (at, frame.number, data, frame))
        self._early_frames.add(frame.number)
        self.early_bytes += len(data)

    def _lowest(self) -> int:
        """The lowest sequence number held, counting around the 32-bit wrap from the first."""
        first = self._early[0][0]
        return min((seq for seq, _, _, _ in self._early), key=lambda seq: _signed((seq - first) % _MOD))

    def _place(self, base: int) -> None:
        """The stream starts at sequence number ``base``: segments held by sequence number get their offsets."""
        self.base = base
        held, self._early, self._early_frames = self._early, [], FrameNumbers()
        self.early_bytes = 0
        for seq, _, data, frame in held:
            at = _signed((seq - base) % _MOD)
            if at + len(data) > self.held:
                self._keep(at, data, frame)

    def _in_order(self) -> List[Piece]:
        if self.base is None:
            return []
        pieces: List[Piece] = []
        while self._early and self._early[0][0] <= self.held:
            at, _, data, frame = heapq.heappop(self._early)
            self._early_frames.remove(frame.number)
            self.early_bytes -= len(data)
            fresh = data[self.held - at:] if at < self.held else data
            if fresh:
                pieces.append((fresh, frame))
                self.held += len(fresh)
                self.last_frame = frame
        return pieces

    def _lose_the_rest(self) -> None:
        at = self._early[0][0]
        self.gap = (f"TCP bytes {self.held} to {at} of {self.source[0]}:{self.source[1]} -> {self.destination[0]}:"
                    f"{self.destination[1]} were not captured (first missing after frame "
                    f"{self.last_frame.number if self.last_frame else '-'})")
        self._early, self._early_frames, self.early_bytes = [], FrameNumbers(), 0


class FrameNumbers:
    """A multiset of frame numbers that knows its lowest (a heap, removals applied lazily)."""

    def __init__(self):
        self._heap: List[int] = []
        self._removed: Dict[int, int] = {}

    def add(self, number: int) -> None:
        heapq.heappush(self._heap, number)

    def remove(self, number: int) -> None:
        self._removed[number] = self._removed.get(number, 0) + 1

    def lowest(self) -> Optional[int]:
        heap, removed = self._heap, self._removed
        while heap and removed.get(heap[0]):
            removed[heap[0]] -= 1
            heapq.heappop(heap)
        return heap[0] if heap else None


def _signed(value: int) -> int:
    return value - _MOD if value >= _MOD // 2 else value
