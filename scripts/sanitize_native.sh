#!/usr/bin/env bash
# The C kernels (cmi_datasource/_native.c) under AddressSanitizer and UndefinedBehaviorSanitizer:
# the module is compiled with -fsanitize=address,undefined into a temporary directory (never into
# the tree), loaded in place of the tree's build by a sitecustomize there, then
# spark_tests/unit/test_native_kernels.py, test_native_diff.py and, for FUZZ_SECONDS, the
# differential fuzz target (fuzz/native_diff.py, its corpus replayed and mutated) run with it. Any
# report of either sanitizer aborts the run (-fno-sanitize-recover, halt_on_error): the exit status
# is then non-zero. No -fwrapv (Python's own flag, which setup.py's build inherits): a signed
# overflow is reported, not wrapped.
#
#   scripts/sanitize_native.sh                  # the tests, then 120 s of the fuzz target
#   FUZZ_SECONDS=0 scripts/sanitize_native.sh   # the tests alone
#   make sanitize SANITIZE_SECONDS=600          # the same from make
#
# Leak detection is off: CPython and numpy keep memory to the end on purpose.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PY:-$ROOT/.venv/bin/python}"
[ -x "$PY" ] || PY=python3
FUZZ_SECONDS="${FUZZ_SECONDS:-120}"
CC="${CC:-gcc}"
BUILD="$(mktemp -d "${TMPDIR:-/tmp}/cmi-sanitize.XXXXXX")"
trap 'rm -rf "$BUILD"' EXIT

INCLUDE="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
SUFFIX="$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
MODULE="$BUILD/_native$SUFFIX"
# setup.py's flags (-O3 -std=c99: the vectorised loops the shipped module runs) plus the sanitizers.
"$CC" -shared -fPIC -O3 -std=c99 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
    -fno-sanitize-recover=all -I"$INCLUDE" "$ROOT/cmi_datasource/_native.c" -o "$MODULE" -lm
# Imported before the package: compiled.native_module() then finds this build in sys.modules.
cat > "$BUILD/sitecustomize.py" <<EOF
import importlib.util, sys
spec = importlib.util.spec_from_file_location("cmi_datasource._native", "$MODULE")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
sys.modules["cmi_datasource._native"] = module
EOF

export LD_PRELOAD="$("$CC" -print-file-name=libasan.so) $("$CC" -print-file-name=libubsan.so)"
# A report aborts the process (exit status 134). pytest runs with -s: what it captures would be
# lost with the process, the report with it.
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1"
export PYTHONPATH="$BUILD:$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export CMI_NATIVE_SANITIZED="$MODULE"
cd "$ROOT"
"$PY" -c 'import cmi_datasource._native as m, os, sys; assert m.__file__ == os.environ["CMI_NATIVE_SANITIZED"], m.__file__; print("sanitized module:", m.__file__)'
"$PY" -m pytest -q -s -p no:cacheprovider spark_tests/unit/test_native_kernels.py spark_tests/unit/test_native_diff.py
if [ "$FUZZ_SECONDS" -gt 0 ]; then
    # Not under atheris: with libasan loaded, libFuzzer gets no coverage and keeps no corpus. The
    # target's own loop replays make fuzz's corpus (fuzz/corpus/native_kernels) and mutates it; the
    # input a sanitizer aborts on is left in fuzz/out/sanitized/native_kernels.last.
    "$PY" -m fuzz.native_diff --seconds "$FUZZ_SECONDS" --crashes "$ROOT/fuzz/crashes/sanitized" \
        --last "$ROOT/fuzz/out/sanitized/native_kernels.last"
fi
