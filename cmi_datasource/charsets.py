"""Coded character set ids (CCSIDs) and the code pages behind them.

A ``CodePage`` decodes and encodes whole strings, and carries a 256-entry table
from each byte to its UTF-8 bytes so that single-byte text columns are
converted with numpy gathers instead of per-value Python.
"""
from __future__ import annotations

import codecs
from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, Optional

import numpy as np

import ebcdic  # noqa: F401  (registers cp1047 and the other EBCDIC codecs Python lacks)

from .errors import CmiEncodeError

UTF8_CCSID = 1208

CCSID_CODECS: Dict[int, str] = {
    1208: "utf-8",
    367: "ascii",
    819: "latin-1",
    923: "iso8859-15",
    912: "iso8859-2",
    1250: "cp1250",
    1251: "cp1251",
    1252: "cp1252",
    437: "cp437",
    850: "cp850",
    858: "cp858",
    37: "cp037",
    273: "cp273",
    277: "cp277",
    278: "cp278",
    280: "cp280",
    284: "cp284",
    285: "cp285",
    297: "cp297",
    500: "cp500",
    871: "cp871",
    1047: "cp1047",
    1140: "cp1140",
    1141: "cp1141",
    1142: "cp1142",
    1143: "cp1143",
    1144: "cp1144",
    1145: "cp1145",
    1146: "cp1146",
    1147: "cp1147",
    1148: "cp1148",
    1149: "cp1149",
}


class UnknownCcsid(LookupError):
    pass


# What to do when bytes are no text in the code page they were read in (an error's hint).
NOT_IN_CODE_PAGE = ("the sender wrote another code page: name it with option('ccsid', ...) (819 Latin-1, "
                    "1208 UTF-8, 500 or 1047 EBCDIC)")


def not_encodable(what: str, e: UnicodeEncodeError, codepage: "CodePage") -> CmiEncodeError:
    """The writer's error for a character the target code page lacks: which, where, and what to do."""
    return CmiEncodeError(f"{what}: {e.object[e.start:e.end]!r} cannot be encoded in {codepage.codec} (CCSID "
                          f"{codepage.ccsid}); write with option('ccsid', ...) naming a code page that has it "
                          f"(1208, UTF-8, has every character)")


class CodePage:
    def __init__(self, ccsid: int, codec: str):
        self.ccsid = ccsid
        self.codec = codecs.lookup(codec).name
        self.is_utf8 = self.codec == "utf-8"
        self.space = " ".encode(self.codec)[0]
        self.digit_one = "1".encode(self.codec)[0]
        if not self.is_utf8:
            chars = [self._byte_to_char(b) for b in range(256)]
            utf8 = [c.encode("utf-8") for c in chars]
            self.utf8_length = np.array([len(u) for u in utf8], dtype=np.int64)
            table = np.zeros((256, 4), dtype=np.uint8)
            for b, u in enumerate(utf8):
                table[b, :len(u)] = list(u)
            self.utf8_bytes = table
            self._decode_map = "".join(chars)

    def _byte_to_char(self, b: int) -> str:
        try:
            return bytes([b]).decode(self.codec)
        except UnicodeDecodeError:
            # Bytes a code page leaves undefined (0x81 in cp1252, ...) keep their own code
            # point, as Windows' converters do, rather than failing the whole column.
            return chr(b)

    def decode(self, raw: bytes) -> str:
        if self.is_utf8:
            return raw.decode("utf-8")
        # str.translate indexes the 256-character map by each latin-1 code point (= byte).
        return raw.decode("latin-1").translate(self._decode_map)

    def encode(self, text: str) -> bytes:
        """Raises UnicodeEncodeError for characters the code page cannot hold."""
        return text.encode(self.codec)

    def __repr__(self) -> str:
        return f"CodePage({self.ccsid}, {self.codec})"

    def __reduce__(self):
        return code_page, (self.ccsid,)


@lru_cache(maxsize=None)
def code_page(ccsid: int) -> CodePage:
    codec = CCSID_CODECS.get(int(ccsid))
    if codec is None:
        raise UnknownCcsid(f"CCSID {ccsid} is not supported; supported: {sorted(CCSID_CODECS)}")
    return CodePage(int(ccsid), codec)


@dataclass(frozen=True)
class CharsetPolicy:
    """Which code page a message's characters are in.

    The message's CodedCharSetId, unless the user overrides it; CCSID 0 (the queue
    manager's default, unknown in a dump) falls back to ``default_ccsid``.
    """

    default_ccsid: int = UTF8_CCSID
    override: Optional[int] = None

    def ccsid_for(self, message_ccsid: int) -> int:
        return self.override or message_ccsid or self.default_ccsid

    def code_page_for(self, message_ccsid: int) -> CodePage:
        return code_page(self.ccsid_for(message_ccsid))
