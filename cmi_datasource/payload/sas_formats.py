"""Which SAS formats mark a numeric variable as a date, a datetime or a time.

Lists from docs/spec/sas-records.md#temporal-formats (Parso, spark-sas7bdat, pandas). A format is
matched on its name; widths and decimals ("DATETIME22.3") are stripped first.
"""
from __future__ import annotations

import re
from typing import Optional

DATE_FORMATS = frozenset("""
DATE DAY DDMMYY DDMMYYB DDMMYYC DDMMYYD DDMMYYN DDMMYYP DDMMYYS JULDAY JULIAN
MMDDYY MMDDYYB MMDDYYC MMDDYYD MMDDYYN MMDDYYP MMDDYYS MMYY MMYYC MMYYD MMYYN MMYYP MMYYS
MONNAME MONTH MONYY WEEKDATE WEEKDATX WEEKDAY DOWNAME WORDDATE WORDDATX
YYMM YYMMC YYMMD YYMMN YYMMP YYMMS YYMMDD YYMMDDB YYMMDDC YYMMDDD YYMMDDN YYMMDDP YYMMDDS
YYMON YEAR YYQ QTR B8601DA E8601DA IS8601DA NENGO MINGUO
""".split())
DATETIME_FORMATS = frozenset("""
DATETIME DATEAMPM DTDATE DTMONYY DTWKDATX DTYEAR MDYAMPM TOD B8601DN B8601DT B8601DX B8601DZ
B8601LX E8601DN E8601DT E8601DX E8601DZ E8601LX IS8601DT
""".split())
TIME_FORMATS = frozenset("TIME TIMEAMPM HHMM HOUR MMSS E8601TM E8601LZ B8601TM IS8601TM".split())

KIND_DATE = "date"
KIND_DATETIME = "datetime"
KIND_TIME = "time"

_WIDTH_SUFFIX = re.compile(r"\d*\.?\d*$")


def temporal_kind(format_name: str) -> Optional[str]:
    """'date', 'datetime', 'time' or None for a SAS format name (with or without width)."""
    name = format_name.strip().upper()
    for candidate in (name, _WIDTH_SUFFIX.sub("", name)):
        if candidate in DATE_FORMATS:
            return KIND_DATE
        if candidate in DATETIME_FORMATS:
            return KIND_DATETIME
        if candidate in TIME_FORMATS:
            return KIND_TIME
    return None


def display_format(name: str, width: int, decimals: int) -> str:
    """SAS's displayed format: DATE + 9 -> 'DATE9.', BEST + 12 + 2 -> 'BEST12.2'; '' when unset."""
    name = name.strip()
    if not name and not width:
        return ""
    return f"{name}{width if width else ''}.{decimals if decimals else ''}"


def split_display_format(text: str):
    """Inverse of display_format: 'DATE9.' -> ('DATE', 9, 0)."""
    m = re.fullmatch(r"(\$?[A-Za-z_0-9]*?)(\d*)\.(\d*)", text.strip())
    if not m:
        return text.strip(), 0, 0
    return m.group(1), int(m.group(2) or 0), int(m.group(3) or 0)
