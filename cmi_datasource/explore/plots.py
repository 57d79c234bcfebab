"""Plots of a capture drawn from its views: when messages were put, how big they are, which
attachments arrived whole, and a column of a data set against another.

Each function takes a view's rows as a Spark DataFrame, a pyarrow Table or a pandas DataFrame
(``frames.to_pandas`` converts them, taking only the columns drawn), draws with matplotlib on
``ax`` (a new figure when omitted) and returns the Axes. matplotlib is imported when a plot is
drawn, so the package works without it; ``pip install ".[notebook]"`` installs it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Optional

from .frames import NOTEBOOK_EXTRA, heading, labels_of, to_pandas

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

COMPLETE_COLOUR = "tab:green"
INCOMPLETE_COLOUR = "tab:red"
EXPECTED_COLOUR = "0.85"  # the light grey of the messages an attachment should have had
# Words for the pandas frequencies column_by is most often given.
_PERIODS = {"D": "day", "W": "week", "MS": "month", "ME": "month", "QS": "quarter", "QE": "quarter", "YS": "year",
            "YE": "year"}
LOG_SCALE_SPREAD = 100  # message sizes spread over more than this factor get logarithmic bins


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError(f"plotting needs matplotlib: {NOTEBOOK_EXTRA} (or pip install matplotlib)") from None
    return plt


def _axes(ax: Optional["Axes"], size=(9, 4)) -> "Axes":
    if ax is not None:
        return ax
    _, ax = _pyplot().subplots(figsize=size, layout="constrained")
    return ax


def put_times(messages: "pd.DataFrame") -> "pd.Series":
    """Each message's put time as a pandas timestamp: MQ's ``put_date`` ``YYYYMMDD`` and
    ``put_time`` ``HHMMSSss`` (hundredths); NaT where the transport has none (TIB/RV, MQTT)."""
    import pandas as pd
    date, time = messages["put_date"].astype("string"), messages["put_time"].astype("string")
    seconds = pd.to_datetime(date.str.cat(time.str.slice(0, 6)), format="%Y%m%d%H%M%S", errors="coerce")
    hundredths = pd.to_numeric(time.str.slice(6, 8), errors="coerce").fillna(0)
    return seconds + pd.to_timedelta(hundredths * 10, unit="ms")


def _attachment_names(attachments: Any) -> Dict[str, str]:
    if attachments is None:
        return {}
    names = to_pandas(attachments, ["attachment", "name"], "naming the attachments")
    return dict(zip(names["attachment"], names["name"]))


def message_groups(messages: "pd.DataFrame", attachments: Any = None) -> "pd.Series":
    """What each message belongs to, for a legend: its attachment's name (from the
    attachments view when given, else the key's first 8 hex digits), or for a message that
    belongs to no one attachment (a CMI header or application message, non-CMI traffic) its
    role in brackets."""
    names = _attachment_names(attachments)
    keys = messages["attachment"]
    named = keys.map(names).fillna(keys.str.slice(0, 8) + "…")
    return named.where(keys.notna(), "(" + messages["role"].fillna("other").astype(str) + ")")


def messages_over_time(messages: Any, attachments: Any = None, ax: Optional["Axes"] = None) -> "Axes":
    """The messages view on a timeline: one lane per attachment (named from the attachments
    view when given; an incomplete attachment's name in red), a dot per message at its put
    time. Messages without a put time are left out, and the title says how many."""
    frame = to_pandas(messages, ["put_date", "put_time", "attachment", "role"],
                      "messages_over_time (the messages view)")
    frame["put"] = put_times(frame)
    frame["group"] = message_groups(frame, attachments)
    timed = frame.dropna(subset=["put"])
    if timed.empty:
        raise ValueError("messages_over_time: no message has a put time (only IBM MQ captures record one)")
    lanes = list(timed.groupby("group", sort=False)["put"].min().sort_values().index)
    lane_of = {name: i for i, name in enumerate(lanes)}
    ax = _axes(ax)
    for name, group in timed.groupby("group", sort=False):
        ax.scatter(group["put"], group["group"].map(lane_of), s=18, label=name)
    ax.set_yticks(range(len(lanes)), lanes)
    ax.set_ylim(len(lanes) - 0.5, -0.5)  # first put at the top
    _mark_incomplete(ax, attachments)
    left_out = len(frame) - len(timed)
    ax.set_title("Messages by put time" + (f" ({left_out} without a put time left out)" if left_out else ""))
    ax.set_xlabel("put time")
    ax.grid(axis="x", alpha=0.3)
    return ax


def _mark_incomplete(ax: "Axes", attachments: Any) -> None:
    """Tick labels of incomplete attachments in red."""
    if attachments is None:
        return
    frame = to_pandas(attachments, ["name", "complete"], "marking incomplete attachments")
    incomplete = set(frame.loc[~frame["complete"].astype(bool), "name"])
    for label in ax.get_yticklabels():
        if label.get_text() in incomplete:
            label.set_color(INCOMPLETE_COLOUR)


def message_sizes(messages: Any, attachments: Any = None, by: str = "attachment", bins: int = 30,
                  ax: Optional["Axes"] = None) -> "Axes":
    """A histogram of message lengths (the ``length`` column: the data as captured, MQ headers
    included), stacked by attachment (``by="attachment"``) or by CMI role (``by="role"``).
    Sizes spread over more than two decades get logarithmic bins."""
    import numpy as np
    if by not in ("attachment", "role"):
        raise ValueError(f"message_sizes: by must be 'attachment' or 'role', not {by!r}")
    frame = to_pandas(messages, ["length", "attachment", "role"], "message_sizes (the messages view)")
    frame = frame.dropna(subset=["length"])
    if frame.empty:
        raise ValueError("message_sizes: the messages view has no rows")
    groups = message_groups(frame, attachments) if by == "attachment" else frame["role"].fillna("other")
    lengths = frame["length"].astype(float)
    smallest, largest = max(lengths.min(), 1.0), max(lengths.max(), 1.0)
    logarithmic = largest / smallest > LOG_SCALE_SPREAD
    edges = (np.geomspace(smallest, largest * 1.01, bins + 1) if logarithmic
             else np.linspace(lengths.min(), lengths.max() + 1, bins + 1))
    order = list(dict.fromkeys(groups))
    ax = _axes(ax)
    ax.hist([lengths[groups == g].to_numpy() for g in order], bins=edges.tolist(), stacked=True, label=order)
    if logarithmic:
        ax.set_xscale("log")
    ax.set_xlabel("message length (bytes)")
    ax.set_ylabel("messages")
    ax.set_title(f"Message sizes by {by}")
    ax.legend(fontsize="small")
    return ax


def completeness(attachments: Any, ax: Optional["Axes"] = None) -> "Axes":
    """Messages found against messages expected, one bar per attachment of the attachments
    view: the expected count in grey behind, the found count in front, green when the attachment
    is complete and red when not, with ``found of expected`` written beside it."""
    import numpy as np
    frame = to_pandas(attachments, ["name", "attachment", "complete", "expected_messages", "found_messages"],
                      "completeness (the attachments view)")
    if frame.empty:
        raise ValueError("completeness: the attachments view has no rows")
    names = frame["name"].where(frame["name"].fillna("") != "", "header " + frame["attachment"].fillna("?"))
    expected = frame["expected_messages"].astype(float)
    found = frame["found_messages"].astype(float)
    complete = frame["complete"].astype(bool).to_numpy()
    rows = np.arange(len(frame))
    ax = _axes(ax, size=(9, 0.45 * len(frame) + 1.2))
    ax.barh(rows, expected.fillna(0), color=EXPECTED_COLOUR, label="expected")
    ax.barh(rows, found, height=0.5, color=np.where(complete, COMPLETE_COLOUR, INCOMPLETE_COLOUR), label="found")
    notes = np.where(expected.isna(), found.astype(int).astype(str) + " found, count unknown",
                     found.astype(int).astype(str) + " of " + expected.fillna(0).astype(int).astype(str))
    for row, x, note in zip(rows, np.fmax(expected.fillna(0), found), notes):  # one label per attachment
        ax.annotate(note, (x, row), xytext=(4, 0), textcoords="offset points", va="center", fontsize="small")
    ax.set_yticks(rows, names)
    ax.set_ylim(len(frame) - 0.5, -0.5)  # the view's order, top to bottom
    for label, whole in zip(ax.get_yticklabels(), complete):
        if not whole:
            label.set_color(INCOMPLETE_COLOUR)
    ax.set_xlabel("sequenced messages")
    ax.set_title("Completeness: messages found of messages expected")
    ax.margins(x=0.15)
    ax.legend(loc="lower right", fontsize="small")
    return ax


def column_by(data: Any, x: str, y: str, by: Optional[str] = None, how: str = "sum", every: Optional[str] = None,
              ax: Optional["Axes"] = None) -> "Axes":
    """A data set's column ``y`` against column ``x`` (a date, say), one line per value of
    ``by``; rows sharing an ``x`` (and ``by``) are combined with ``how`` (a pandas aggregation:
    ``sum``, ``mean``, ``count``...), over periods of ``every`` (a pandas frequency: ``"W"``,
    ``"MS"``) when given. The axes are named by the columns' SAS labels."""
    import pandas as pd
    columns = [x, y] + ([by] if by else [])
    frame = to_pandas(data, columns, f"column_by({x!r}, {y!r}{', by=' + repr(by) if by else ''})")
    labels = labels_of(data)
    frame[y] = pd.to_numeric(frame[y], errors="coerce")
    if frame[x].dtype == object:  # Spark hands dates over as datetime.date objects; strings stay strings
        as_dates = pd.to_datetime(frame[x], errors="coerce")
        if as_dates.notna().sum() == frame[x].notna().sum():
            frame[x] = as_dates
    key = pd.Grouper(key=x, freq=every) if every else x
    grouped = frame.groupby([key, by] if by else [key])[y].agg(how)
    table = grouped.unstack(by) if by else grouped.to_frame(heading(y, labels))
    ax = _axes(ax)
    for name in table.columns:  # one line per group
        ax.plot(table.index, table[name], marker="o" if len(table) <= 40 else None, markersize=3, label=str(name))
    ax.set_xlabel(heading(x, labels))
    ax.set_ylabel(heading(y, labels) if how in ("sum", "mean", "min", "max", "median", "first", "last")
                  else f"{how} of {heading(y, labels)}")
    per = f" per {_PERIODS.get(every, every)}" if every else ""
    ax.set_title(f"{heading(y, labels)}, {how}{per}" + (f", by {heading(by, labels)}" if by else ""))
    if by:
        ax.legend(title=heading(by, labels), fontsize="small")
    ax.grid(alpha=0.3)
    return ax
