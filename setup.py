"""The C extension of the package (cmi_datasource/_native.c, the decode kernels compiled ahead of
time: docs/performance.md); everything else is declared in pyproject.toml.

Optional: where it cannot be compiled (no C compiler), the package installs without it and
compiled.py runs the numba kernels instead; spark_tests/unit/test_native_kernels.py fails when it
is missing from a checkout built by `make`. `make` copies the compiled module into the source
tree, which is what the driver and Spark workers import (PYTHONPATH); after editing the C,
`python setup.py build_ext --inplace` rebuilds it there.
"""
import sys

from setuptools import Extension, setup

setup(ext_modules=[Extension("cmi_datasource._native", ["cmi_datasource/_native.c"], optional=True,
                             extra_compile_args=[] if sys.platform == "win32" else ["-O3", "-std=c99"])])
