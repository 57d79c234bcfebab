"""A folder holding one data set written three times by our writer (issue 27's reproducer)."""
from __future__ import annotations

import pyarrow as pa

from cmi_datasource.engine.write import DatasetToWrite, WriteOptions, write_attachments_dump


def appended_three_times(directory) -> str:
    """One data set written three times into a folder, as three appends of our writer leave it:
    three dumps, three attachments of the same variables, which a read unions."""
    table = pa.table({"ID": [float(i) for i in range(6)], "NAME": [f"n{i}" for i in range(6)]})
    directory.mkdir()
    for n in range(3):
        with open(directory / f"part-{n}.dmp", "wb") as out:
            write_attachments_dump(out, [DatasetToWrite(table, "WORK", "DATA")],
                                   options=WriteOptions(deterministic_seed=f"append-{n}"))
    return str(directory)
