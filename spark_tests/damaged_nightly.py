"""Copies of sample_queues/nightly_batch.dmp damaged in message 1, the attachment header that
names FIN.DAILY_SALES (and sales_notes.txt), edited as a damaged copy of the dump would be."""
from __future__ import annotations

import os

from conftest import SAMPLES

NIGHTLY = os.path.join(SAMPLES, "nightly_batch.dmp")
# How message 1 is damaged, each a different kind of damage the capture reports:
HEADER_DAMAGE = (
    "cut",  # its last four data lines lost: the header parses as no CMI layout (a broken header)
    "hex",  # a G in its first data line: the header message is damaged (a broken header)
    "correlid",  # its CorrelId attribute is no hex: a damaged stretch no attachment claims
)


def _text() -> str:
    with open(NIGHTLY, encoding="latin-1") as f:
        return f.read()


def header_damaged(directory, how: str) -> str:
    """nightly_batch.dmp with message 1 damaged ``how`` (one of HEADER_DAMAGE), written in
    ``directory``; returns its path."""
    text = _text()
    start, end = text.index("* Index 1\n"), text.index("* Index 2\n")
    block = text[start:end]
    if how == "cut":
        lines = block.split("\n")
        data = [i for i, line in enumerate(lines) if line.startswith("X ")]
        block = "\n".join(line for i, line in enumerate(lines) if i not in data[-4:])
    elif how == "hex":
        line = block.index("\nX ") + 1
        block = block[:line] + "X 0G" + block[line + 4:]
    elif how == "correlid":
        at = block.index("A COI ") + len("A COI ")
        block = block[:at] + "ZZ" + block[at + 2:]
    else:
        raise ValueError(how)
    path = os.path.join(directory, f"header_{how}.dmp")
    with open(path, "w", encoding="latin-1") as f:
        f.write(text[:start] + block + text[end:])
    return path

