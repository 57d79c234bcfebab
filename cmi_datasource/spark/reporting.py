"""What a user sees first when a read or write fails in a Spark Python worker.

Spark runs every method of a Python data source in a Python worker and hands the user only the
text of the worker's exception, inside its own: an ``AnalysisException`` ("[PYTHON_DATA_SOURCE_ERROR]
Failed to create Python data source instance: ...") while planning, a ``PythonException`` ("An
exception was thrown from the Python worker...") in a task. The text is whatever
``pyspark.util.handle_worker_exception`` formats: by default the whole traceback, so the cause
came 8 to 35 lines after Spark's first line, and the driver (``recover_python_exception``) parses
that traceback and shows its frames a second time.

For a ``CmiError`` the traceback is noise: the error says what is wrong with the capture, what to
do and where. So a CmiError leaving one of our methods sets ``SPARK_HIDE_TRACEBACK`` in the worker,
the switch ``handle_worker_exception`` reads when it formats the exception (Spark sets it from
``spark.sql.execution.pyspark.udf.hideTraceback.enabled``), and the user's first line becomes
Spark's prefix followed by ``<module>.<Class>: <problem>`` (``cmi_datasource.errors.TruncatedError:
...``), which ``errors.unwrap`` reads back. A worker exits after reporting an exception, so the
switch never outlives the failure. Any other exception is a bug of ours and keeps its traceback.
"""
from __future__ import annotations

import functools
import inspect
import os
import sys
from typing import Callable, TypeVar

from ..errors import CmiError

F = TypeVar("F", bound=Callable)


def _in_spark_worker() -> bool:
    """Whether this process is a Python worker Spark started (its main module is pyspark's:
    ``pyspark.daemon``, ``pyspark.worker`` or a ``pyspark.sql.worker`` module)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    return bool(spec and spec.name.startswith("pyspark."))


def _text_only() -> None:
    if _in_spark_worker():
        os.environ["SPARK_HIDE_TRACEBACK"] = "1"


def reported(method: F) -> F:
    """A data source method whose CmiErrors reach the user as their own text, no traceback."""
    if inspect.isgeneratorfunction(method):
        @functools.wraps(method)
        def generating(*args, **kwargs):
            try:
                yield from method(*args, **kwargs)
            except CmiError:
                _text_only()
                raise
        return generating  # type: ignore[return-value]

    @functools.wraps(method)
    def calling(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except CmiError:
            _text_only()
            raise
    return calling  # type: ignore[return-value]
