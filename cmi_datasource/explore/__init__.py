"""Exploring a capture by eye: tables, summaries and plots for terminals and notebooks.

Above ``engine`` like ``spark``: reads the views (``cmi_datasource.read`` tables, or the DataFrames of
``spark.read.format("cmi").option("view", ...)``) and draws them; parses nothing itself.

- ``summarize(paths_or_capture)``: what a capture holds and what went wrong (HTML in Jupyter,
  rich in a terminal, plain text elsewhere).
- ``labelled(df)``: a data set's first rows with its SAS labels as column headers.
- ``plots``: ``messages_over_time``, ``message_sizes``, ``completeness``, ``column_by``
  (matplotlib, from the views' DataFrames).
"""
from .frames import labelled
from .summary import CaptureSummary, Problem, summarize

__all__ = ["summarize", "CaptureSummary", "Problem", "labelled"]
