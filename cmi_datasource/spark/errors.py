"""Spark's side of the typed errors: the ``CmiError`` back from the text Spark shows, and the
errors only the Spark layer raises.

Spark hands users only text: a Python worker's exception reaches the driver as the text of an
``AnalysisException`` or ``PythonException``, whose first line names the class with its module
(``spark/reporting.py`` keeps that line free of the traceback). ``unwrap`` reads that text back
into the typed error, with its fields; ``typed_errors`` raises it. Both only parse text: importing
this module starts no Spark and needs no pyspark (a Spark Connect client's text works the same).
"""
from __future__ import annotations

import contextlib
import importlib
import re
from typing import Dict, Iterator, Optional, Type

from ..errors import CmiError, CmiFormatError, Location


class StagingLostError(CmiError):
    """A write job's staging files vanished before its commit (removed by hand, by a cleanup, or by
    the job's own abort): nothing of the job was committed."""


class WorkerPythonError(CmiError):
    """Spark's Python workers run an interpreter that cannot import the source (``PYSPARK_PYTHON``
    unset or naming another Python than the one with cmi-datasource): ``spark/workers.py``."""


# Spark shows the class with its module: cmi_datasource.errors.X, or the module of the layer that raises it
# (a transport's, this one's).
_NAMED = re.compile(r"(cmi_datasource(?:\.\w+)*)\.([A-Za-z]+Error): ")
_LABELLED = re.compile(r"  (what to do|file|message|file offset|payload offset|attachment|sequence): (.*)")
_SPARK_TAIL = re.compile(r"\s*SQLSTATE: \w+\s*$")


def _error_class(module: str, name: str) -> Optional[Type[CmiError]]:
    """The CmiError subclass ``module.name``: a transport's module is imported when this process
    has not (a driver never imports the transports its workers use)."""
    try:
        found = getattr(importlib.import_module(module), name, None)
    except ImportError:
        found = None
    return found if isinstance(found, type) and issubclass(found, CmiError) else None


def unwrap(exc: BaseException) -> Optional[CmiError]:
    """The typed error inside a Spark exception, with its fields; None when there is none.

    Spark reports a failure in a Python worker as an ``AnalysisException`` (planning) or a
    ``PythonException`` (a task) whose text holds the worker's exception::

        try:
            df = spark.read.format("cmi").load(path)
        except Exception as e:
            error = cmi_datasource.spark.errors.unwrap(e)
            if isinstance(error, cmi_datasource.errors.TruncatedError):
                print(error.source, error.message_number, error.offset)

    Works with classic and Spark Connect sessions (only the text crosses); an exception that
    already is a ``CmiError`` is returned as it is.
    """
    seen = set()
    at: Optional[BaseException] = exc
    while at is not None and id(at) not in seen:
        seen.add(id(at))
        if isinstance(at, CmiError):
            return at
        typed = unwrap_text(str(at))
        if typed is not None:
            return typed
        at = at.__cause__ or at.__context__
    return None


def unwrap_text(text: str) -> Optional[CmiError]:
    """The typed error a worker's exception text names (see ``unwrap``), or None."""
    named = _NAMED.search(text)
    if named is None:
        return None
    cls = _error_class(named.group(1), named.group(2))
    if cls is None:
        return None
    body = text[named.end():].split("\n")
    first = _SPARK_TAIL.sub("", body[0])
    shown: Dict[str, str] = {}
    for line in body[1:]:
        labelled = _LABELLED.fullmatch(_SPARK_TAIL.sub("", line.rstrip("\r")))
        if labelled is None:
            break
        shown[labelled.group(1)] = labelled.group(2)
    if issubclass(cls, CmiFormatError):
        try:
            location = Location.from_lines(shown)
        except ValueError:
            location = Location()
        return cls(first, location, shown.get("what to do"))
    return cls(first)


@contextlib.contextmanager
def typed_errors() -> Iterator[None]:
    """Within the block, a Spark exception that carries a ``CmiError`` is raised as that error
    (the Spark exception as its cause)::

        with cmi_datasource.spark.errors.typed_errors():
            spark.read.format("cmi").load(path).count()
    """
    try:
        yield
    except CmiError:
        raise
    except Exception as e:
        typed = unwrap(e)
        if typed is None:
            raise
        raise typed from e
