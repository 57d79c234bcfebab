"""The engine: from the paths a user loads to the tables of each view, transport-neutral.

Data flows one way, each module using only those before it:

- ``paths.py``, ``index.py``, ``capture.py``: a load's files, their formats and message indexes,
  the attachments assembled; a ``Capture`` is what a load holds, never changed once opened;
- ``recovery.py``: what of a damaged data set can be trusted (the trust rule);
- ``reread.py``: planned messages, re-read from their files and checked;
- ``selection.py``, ``plan.py``: which data sets a read returns, and its partitions (``Part``s);
- ``decode.py``, ``tables.py``: a partition's observations, the listing views' tables;
- ``options.py``, ``modes.py``, ``load.py``: what a read asks, its read mode as one strategy, and
  the two together with the capture;
- ``views.py``: every view as a small class (schema, plan, read);
- ``planned.py``, ``reading.py``: plans kept for the next asker, and the one way to read that the
  Spark classes, the ``cmi`` command and ``cmi_datasource.read`` share;
- ``write.py``: the way back, DataFrames to attachments.
"""
