#!/usr/bin/env bash
# Build the C core with AddressSanitizer + UBSan in a scratch copy of the checkout and run the
# tests marked `ccore` against it (the in-place build is left untouched).
#
# Usage: bash tools/sanitize.sh [PYTHON]        (`make sanitize` passes .venv/bin/python)
# Env:   PMSIM_SANITIZE_EXAMPLES  Hypothesis examples per differential property (default 25)
#        PMSIM_SANITIZE_KEEP=1    keep the scratch directory for inspection
# Exits non-zero on a build failure, a failing test or any sanitizer report.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${1:-$ROOT/.venv/bin/python}
case "$PY" in /*) ;; *) PY="$ROOT/$PY" ;; esac
[ -x "$PY" ] || { echo "sanitize: FAILED - no Python interpreter at $PY"; exit 2; }
command -v gcc >/dev/null || { echo "sanitize: FAILED - gcc is needed for the sanitizer runtimes"; exit 2; }

ASAN_LIB=$(gcc -print-file-name=libasan.so)
UBSAN_LIB=$(gcc -print-file-name=libubsan.so)
for lib in "$ASAN_LIB" "$UBSAN_LIB"; do
    [ -e "$lib" ] || { echo "sanitize: FAILED - $lib not found: install gcc's libasan/libubsan"; exit 2; }
done

SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/pmsim-sanitize.XXXXXX")
if [ "${PMSIM_SANITIZE_KEEP:-}" = 1 ]; then
    echo "sanitize: scratch copy kept in $SCRATCH"
else
    trap 'rm -rf "$SCRATCH"' EXIT
fi
START=$(date +%s)

# 1. a scratch copy of the sources (no compiled core, no caches)
tar -C "$ROOT" -cf - --exclude='*.so' --exclude='__pycache__' --exclude='_pmcore.c' \
    --exclude='.core-built' --exclude='.hypothesis' --exclude='.pytest_cache' \
    pmsim crashfuzz tests setup.py pyproject.toml $(cd "$ROOT" && ls README.md 2>/dev/null) \
    | tar -C "$SCRATCH" -xf - || { echo "sanitize: FAILED - could not copy the sources"; exit 2; }

# 2. the instrumented build
if ! (cd "$SCRATCH" && PMSIM_SANITIZE=1 "$PY" setup.py -q build_ext --inplace >build.log 2>&1); then
    tail -40 "$SCRATCH/build.log"
    echo "sanitize: FAILED - the instrumented build failed (log above)"
    exit 1
fi

export PYTHONPATH="$SCRATCH"
export LD_PRELOAD="$ASAN_LIB:$UBSAN_LIB"
# reports go to files: pytest captures stderr, and a dying process would lose them there
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:log_path=$SCRATCH/report"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$SCRATCH/report"
export PMSIM_BACKEND=c
export PMSIM_DIFF_EXAMPLES="${PMSIM_SANITIZE_EXAMPLES:-25}"

# 3. make sure the instrumented module is the one Python imports
MOD=$(cd "$SCRATCH" && "$PY" -c 'import pmsim.cache.native as n, pmsim.cache._pmcore as m
assert n.available(), "C core not importable"
print(m.__file__)') || { echo "sanitize: FAILED - the instrumented core does not import"; exit 1; }
echo "sanitize: testing $MOD"
case "$MOD" in
    "$SCRATCH"/*) ;;
    *) echo "sanitize: FAILED - imported $MOD instead of the scratch build"; exit 1 ;;
esac
DEPS=$(env -u LD_PRELOAD ldd "$MOD" 2>&1)
if [[ "$DEPS" != *libasan* ]]; then
    echo "sanitize: FAILED - $MOD is not linked against AddressSanitizer"
    exit 1
fi

# 4. the C-core tests, under the sanitizers
LOG="$SCRATCH/pytest.log"
(cd "$SCRATCH" && "$PY" -m pytest -q -m ccore -p no:cacheprovider -p no:xdist tests) >"$LOG" 2>&1
RC=$?
tail -25 "$LOG"
REPORTS=0
for f in "$SCRATCH"/report.*; do
    [ -e "$f" ] || continue
    REPORTS=$((REPORTS + 1))
    echo "---- sanitizer report $(basename "$f")"
    head -40 "$f"
done
REPORTS=$((REPORTS + $(grep -c -E 'ERROR: AddressSanitizer|runtime error:' "$LOG")))
RESULT=$(grep -E '[0-9]+ (passed|failed)|error' "$LOG" | tail -1)
SECS=$(( $(date +%s) - START ))
if [ "$RC" -ne 0 ] || [ "$REPORTS" -ne 0 ]; then
    echo "sanitize: FAILED - pytest exit $RC, $REPORTS sanitizer report(s); ${RESULT:-no test summary} (${SECS} s)"
    exit 1
fi
echo "sanitize: OK - ASan+UBSan, ${RESULT} (${SECS} s)"
