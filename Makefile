# The two set-up commands of the README: `make demo` and `make test`.
# Each creates .venv and installs what it needs; Java 17 must be on the machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export SPARK_CONF_DIR := $(CURDIR)/conf
export PYSPARK_PYTHON := $(CURDIR)/$(PY)
export PYSPARK_DRIVER_PYTHON := $(CURDIR)/$(PY)
# Driver and Python workers import the working tree, never a stale installed copy.
export PYTHONPATH := $(CURDIR)
# Debian installs mosquitto (and, on some releases, tcpdump) in /usr/sbin, which is not on a
# non-root user's PATH: the live tests look them up on PATH.
export PATH := $(PATH):/usr/sbin:/sbin
SOURCES := pyproject.toml setup.py pyspark_cmi.py $(shell find cmi_datasource -name '*.py' -o -name '*.c')

.PHONY: demo test test-tools lint typecheck docs samples notebook bench bench-fresh-worker bench-decode bench-write bench-captures bench-sapdb bench-stream check-java clean fuzz sanitize

# A regular (not editable) install: Spark discovers the `cmi` format by listing top-level
# pyspark_* modules on sys.path, which an editable install's import hook would hide.
# The demo needs the package alone; the tests add their extras (moto, atheris, Jupyter: 1.7 GB).
# DEMO_STAMP: the package alone (make demo, make docs). STAMP: with the test extras (make test and
# the tools' targets); it marks the package as installed too.
DEMO_STAMP := $(VENV)/.installed-demo
# The C kernels (cmi_datasource/_native.c) that `pip install .` compiled, copied into the source tree:
# driver and workers import the working tree (PYTHONPATH above). -I: the installed copy, not the
# tree's. Without a C compiler the install leaves them out and numba's kernels run (docs/install.md).
define copy_native
	$(PY) -I -c "import shutil, cmi_datasource._native as m; shutil.copy2(m.__file__, 'cmi_datasource')" \
		|| echo "cmi_datasource/_native.c was not compiled (no C compiler?): the numba kernels will run" >&2
endef

# Bytecode for the tree the workers import, as pip writes it for an installed package. Where the
# environment forbids writing it (PYTHONDONTWRITEBYTECODE=1, a read-only checkout), every fresh
# Spark worker otherwise compiles the package from source: 0.2 s of a worker's 0.4 s start
# (bench/bench_fresh_worker.py). Python ignores a .pyc whose source has changed since.
define compile_tree
	$(PY) -m compileall -q cmi_datasource pyspark_cmi.py
endef

# A failed creation (Debian without python3-venv) leaves no half-made .venv that a later run would
# take for a working one.
$(PY):
	$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); echo "Could not create $(VENV) with $(PYTHON): it needs Python 3.10+ with its venv module (Debian/Ubuntu: apt-get install python3-venv)" >&2; exit 1; }

$(DEMO_STAMP): $(SOURCES) | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet .
	$(copy_native)
	$(compile_tree)
	touch $(DEMO_STAMP)

$(STAMP): $(SOURCES) | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet ".[test]"
	$(copy_native)
	$(compile_tree)
	touch $(STAMP) $(DEMO_STAMP)

check-java:
	@command -v java >/dev/null 2>&1 || { echo "Java is missing: Spark needs Java 17 (e.g. apt-get install openjdk-17-jre-headless)"; exit 1; }
	@java -version 2>&1 | grep -Eq 'version "(17|21)' || { echo "Java 17 is required, found: $$(java -version 2>&1 | head -1)"; exit 1; }

# The live tests run a real broker and capture its traffic: Debian's mosquitto, mosquitto-clients
# and tcpdump, installed when missing (as root or through sudo; otherwise it says what to install).
test-tools:
	bash scripts/test_tools.sh

demo: check-java $(DEMO_STAMP)
	$(PY) scripts/demo.py

# Static checks, configured in pyproject.toml ([tool.ruff], [tool.mypy]).
lint: $(STAMP)
	$(PY) -m ruff check cmi_datasource spark_tests bench fuzz scripts pyspark_cmi.py

typecheck: $(STAMP)
	$(PY) -m mypy cmi_datasource

# CI in stages, each stopping the run when it fails: what the machine needs first (Java, the live
# tests' tools), then lint, typecheck, the docs, the fast unit tests (no Spark, no broker, about a
# minute), then the rest (Spark, S3, live broker and capture, cluster, slow tests). The markers are
# assigned by folder in spark_tests/conftest.py.
test: check-java test-tools lint typecheck docs
	$(PY) -m pytest -q -m unit
	$(PY) -m pytest -q -m "not unit"

# Every performance target of issues 18 and 30 in one run (half an hour or more on 2 cores); writes bench/results.md.
# BENCH_ARGS="--sections warm --rows 1000000" runs a part (.venv/bin/python bench/bench.py --help).
BENCH_ARGS ?=
bench: $(STAMP) check-java
	$(PY) -m pip install --quiet ".[bench]"
	$(compile_tree)
	$(PY) bench/bench.py $(BENCH_ARGS)

bench-decode: $(STAMP)
	$(PY) bench/bench_decode.py 1000000

# Each MQ capture kind (amqsbcg, gzip, zstd) against the plain dmpmqmsg dump of the same rows.
bench-captures: $(STAMP)
	$(PY) bench/bench_captures.py 1000000

# What a fresh Spark Python worker pays before its first batch, against a trivial source's worker.
bench-fresh-worker: $(STAMP)
	$(PY) bench/bench_fresh_worker.py 7

bench-sapdb: $(STAMP)
	$(PY) bench/bench_sapdb.py 1000000

bench-write: $(STAMP) check-java
	$(PY) bench/bench_write.py 1000000 2000000

# A folder of dumps read as a stream against a batch read: throughput, and the latency from a file
# landing to its rows in the sink (section 9 of make bench, alone; flags: bench/bench_stream.py --help).
bench-stream: $(STAMP) check-java
	$(PY) bench/bench_stream.py

# Every parser under atheris for FUZZ_SECONDS each (FUZZ_TARGETS=rv,mqtt picks some); writes
# fuzz/results.md. See fuzz/README.md.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
fuzz: $(STAMP)
	$(PY) -c "import atheris" 2>/dev/null || $(PY) -m pip install --quiet atheris
	$(PY) fuzz/run.py --seconds $(FUZZ_SECONDS) --targets "$(FUZZ_TARGETS)"

# The C kernels under AddressSanitizer and UBSan (scripts/sanitize_native.sh): built apart in a temporary
# directory, then test_native_kernels.py, test_native_diff.py and SANITIZE_SECONDS of the native_kernels target.
SANITIZE_SECONDS ?= 120
sanitize: $(STAMP)
	PY=$(PY) FUZZ_SECONDS=$(SANITIZE_SECONDS) scripts/sanitize_native.sh

# The documentation site (docs/, mkdocs.yml) into site/; --strict fails on a broken link or anchor.
docs: $(DEMO_STAMP)
	$(PY) -c "import mkdocs" 2>/dev/null || $(PY) -m pip install --quiet ".[docs]"
	$(PY) -m mkdocs build --strict

samples: $(STAMP)
	$(PY) scripts/make_samples.py

# Re-run notebooks/explore.ipynb from a clean kernel and save its outputs (CI only runs it).
notebook: $(STAMP) check-java
	$(PY) -m pip install --quiet ".[notebook]"
	$(PY) -m cmi_datasource.explore.run_notebook --write notebooks/explore.ipynb

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache spark-warehouse site build cmi_datasource/*.so
