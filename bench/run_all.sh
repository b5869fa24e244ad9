#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerates the tables of BENCHMARKS.md: the full set, medians of --runs.
# usage: bench/run_all.sh [path/to/ito-bench] [extra flags, e.g. --json]
set -euo pipefail
bin=${1:-build/release/bench/ito-bench}
shift || true
runs=${RUNS:-5}
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo '+dirty'), runs=$runs"
echo "# load average before: $(cut -d" " -f1-3 /proc/loadavg)"
echo "# $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, $(uname -r), $(gcc --version | head -1)"
"$bin" fib --n 30 --runs "$runs" "$@"
"$bin" fib --n 35 --runs "$runs" "$@"
"$bin" create-join --runs "$runs" "$@"
"$bin" yield --runs "$runs" "$@"
"$bin" mutex --runs "$runs" "$@"
"$bin" blocked --runs "$runs" "$@"
"$bin" pool --runs "$runs" "$@"
"$bin" delegate --runs "$runs" "$@"
echo "# load average after: $(cut -d" " -f1-3 /proc/loadavg)"
