"""Run a notebook from a clean kernel, as CI does; ``--write`` saves it with its outputs.

    python -m cmi_datasource.explore.run_notebook notebooks/explore.ipynb           # check it runs
    python -m cmi_datasource.explore.run_notebook --write notebooks/explore.ipynb   # and commit its outputs

The committed ``notebooks/explore.ipynb`` carries its outputs so that it reads on GitHub; the
test (``spark_tests/spark/test_notebook.py``) runs it the same way without writing anything.
Needs nbclient and nbformat (the ``test`` extra) besides the ``notebook`` extra.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

CELL_TIMEOUT_SECONDS = 300  # one cell at most; a whole run takes well under a minute on 2 idle cores


def execute(path: str, timeout: int = CELL_TIMEOUT_SECONDS, kernel_name: str = "python3"):
    """The notebook at ``path`` executed from scratch in its own folder (its relative paths
    are the notebook's), returned as an ``nbformat`` node; the file is left as it is. A cell
    that raises raises ``nbclient.exceptions.CellExecutionError``."""
    try:
        import nbformat
        from nbclient import NotebookClient
    except ImportError:
        raise ImportError('running notebooks needs nbclient and nbformat: pip install ".[test]"') from None
    notebook = nbformat.read(path, as_version=4)
    folder = os.path.dirname(os.path.abspath(path))
    NotebookClient(notebook, timeout=timeout, kernel_name=kernel_name,
                   resources={"metadata": {"path": folder}}).execute(env=kernel_environment())
    return notebook


def kernel_environment() -> dict:
    """This process's environment, with the ``cmi_datasource`` running this first on the
    kernel's ``PYTHONPATH`` (a checkout runs its own code, not an older installed copy) and
    every entry made absolute: the kernel and Spark's Python workers start in other folders."""
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    inherited = [os.path.abspath(entry) for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys([package_root] + inherited))
    return env


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", help="the .ipynb files to run")
    parser.add_argument("--write", action="store_true", help="save each notebook with its new outputs")
    args = parser.parse_args(argv)
    import nbformat
    for path in args.notebooks:
        started = time.monotonic()
        notebook = execute(path)
        print(f"{path}: ran in {time.monotonic() - started:.1f} s", file=sys.stderr)
        if args.write:
            nbformat.write(notebook, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
