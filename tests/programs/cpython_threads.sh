#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CPython 3.11's own thread tests (Debian's libpython3.11-testsuite) under
# libito-preload.so at ITO_WORKERS=W: every test that passes under NPTL must
# pass (they all do there; a skip is CPython's own, the same both ways).
# Exits 77 (skipped) when Debian's python3.11 or its test suite is missing.
# Usage: cpython_threads.sh PRELOAD_LIB WORKERS [TEST...]
set -uo pipefail
preload=$1 workers=$2
shift 2
tests=("$@")
[ ${#tests[@]} -eq 0 ] &&
  tests=(test_threading test_thread test_queue test_threading_local test_concurrent_futures)
# Debian's interpreter, whatever python3 comes first on PATH (pyenv's has no tests).
py=/usr/bin/python3.11
if [ ! -x "$py" ] || [ ! -f /usr/lib/python3.11/test/test_threading.py ]; then
  echo "skip: Debian's python3.11 and libpython3.11-testsuite are not installed"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
ITO_WORKERS=$workers LD_PRELOAD=$preload timeout "${CPYTHON_TIMEOUT:-1200}" \
  "$py" -m test --timeout 600 "${tests[@]}" > log 2>&1
status=$?
# The tests that failed; then the summary, or, where a module ran past its
# time, which one (the last to start) and every thread's stack; the whole log
# when the run did not finish.
grep -E '^(FAIL|ERROR): ' log
if grep -q '^Timeout (' log; then
  grep -E ' \[ *[0-9]+/[0-9]+\] ' log | tail -n 1
  sed -n '/^Timeout (/,$p' log | head -n 400
else
  tail -n 15 log
fi
[ $status -eq 124 ] && cat log
exit $status
