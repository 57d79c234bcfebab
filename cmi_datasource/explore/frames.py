"""The views' rows as pandas, whatever holds them: a Spark DataFrame, a pyarrow Table or a pandas
DataFrame. The plots and previews convert through here, once, taking only the columns they draw,
so a Spark DataFrame ships those columns to the driver and nothing else.

pandas is imported when first needed: the package itself does not depend on it
(``pip install ".[notebook]"`` brings it).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Optional, Sequence

import pyarrow as pa

if TYPE_CHECKING:
    import pandas as pd

NOTEBOOK_EXTRA = 'pip install ".[notebook]"'  # what installs pandas and matplotlib


def _pandas():
    try:
        import pandas
    except ImportError:
        raise ImportError(f"exploring views needs pandas: {NOTEBOOK_EXTRA} (or pip install pandas)") from None
    return pandas


def is_spark(data: Any) -> bool:
    """A Spark DataFrame (classic or Connect), told apart without importing pyspark."""
    return type(data).__module__.startswith("pyspark.") and hasattr(data, "toPandas")


def column_names(data: Any) -> Sequence[str]:
    if is_spark(data):
        return list(data.columns)
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        return list(data.schema.names)
    if hasattr(data, "columns") and hasattr(data, "iloc"):  # pandas
        return [str(c) for c in data.columns]
    raise TypeError(f"expected a Spark DataFrame, a pyarrow Table or a pandas DataFrame, not {type(data).__name__}")


def require_columns(data: Any, columns: Sequence[str], purpose: str) -> None:
    """A ``ValueError`` naming what is missing and what ``purpose`` (which view) needs, before
    any conversion: a wrong view handed to a plot is the likely mistake."""
    present = set(column_names(data))
    missing = [c for c in columns if c not in present]
    if missing:
        raise ValueError(f"{purpose} needs the column{'s' if len(missing) > 1 else ''} {', '.join(missing)}, "
                         f"which the data lacks (it has: {', '.join(column_names(data)) or 'no columns'})")


def to_pandas(data: Any, columns: Sequence[str], purpose: str = "this", max_rows: Optional[int] = None
              ) -> "pd.DataFrame":
    """``columns`` of ``data`` (and at most ``max_rows`` rows) as a pandas DataFrame; dates and
    timestamps become pandas datetimes whatever the input, so callers see one kind of value."""
    _pandas()  # says how to install pandas before any conversion needs it
    require_columns(data, columns, purpose)
    columns = list(dict.fromkeys(columns))
    if is_spark(data):
        chosen = data.select(*columns)
        frame = (chosen.limit(max_rows) if max_rows is not None else chosen).toPandas()
    elif isinstance(data, (pa.Table, pa.RecordBatch)):
        chosen = data.select(columns)
        frame = (chosen.slice(0, max_rows) if max_rows is not None else chosen).to_pandas(date_as_object=False)
    else:
        frame = data[columns] if max_rows is None else data[columns].head(max_rows)
    return frame.reset_index(drop=True)


def labels_of(data: Any) -> Dict[str, str]:
    """Each column's SAS label where it has one: Spark field metadata ``label`` or Arrow field
    metadata ``b"label"`` (both set by the dataset view); a pandas frame has none."""
    if is_spark(data):
        return {f.name: f.metadata["label"] for f in data.schema.fields if f.metadata.get("label")}
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        return {f.name: f.metadata[b"label"].decode("utf-8") for f in data.schema
                if f.metadata and f.metadata.get(b"label")}
    return {}


def heading(name: str, labels: Dict[str, str]) -> str:
    """How a column is named to a person: ``Net sales (AMOUNT)``, or the name alone without a label."""
    label = labels.get(name)
    return f"{label} ({name})" if label else name


def labelled(data: Any, max_rows: Optional[int] = 10) -> "pd.DataFrame":
    """A preview of a data set (the first ``max_rows`` rows; ``None`` for all) whose column
    headers are the SAS labels with the names: ``Net sales (AMOUNT)``."""
    names = list(column_names(data))
    frame = to_pandas(data, names, "labelled", max_rows)
    labels = labels_of(data)
    return frame.rename(columns={name: heading(name, labels) for name in names})
