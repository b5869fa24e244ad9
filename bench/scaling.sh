#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Worker and rank sweeps for a machine with many cores (a 2-core VM cannot show
# whether adding ranks helps: beyond 2 they share cores).  Each step is one
# ito-bench subcommand, which prints its comparison rows in the same run.
#   bench/scaling.sh [BIN_DIR] [MAX_RANKS]     (defaults: build/release/bench, 8)
# SCALING_QUICK=1 runs small sizes, to check the script itself on a small machine.
set -uo pipefail
bin=${1:-build/release/bench}
max_ranks=${2:-8}
step_limit_s=${SCALING_STEP_LIMIT_S:-150}

ranks=1
for r in 2 4 8 16 32; do [ "$r" -le "$max_ranks" ] && ranks+=",$r"; done
workers=1
for w in 2 4 8 16 32 64; do [ "$w" -le "$(nproc)" ] && workers+=",$w"; done

if [ "${SCALING_QUICK:-0}" = 1 ]; then
  fib_n=20 sort_n=100000 stencil_n=256 sweeps=3 runs=1
else
  fib_n=32 sort_n=4000000 stencil_n=4096 sweeps=30 runs=3
fi

step() {
  echo "== $(date -u +%H:%M:%S) $*"
  timeout "$step_limit_s" "$@"
  local rc=$?
  [ "$rc" -eq 0 ] || echo "== exit status $rc"
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(uname -r)"
grep -m1 'model name' /proc/cpuinfo
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
step "$bin/ito-bench" fib --n "$fib_n" --workers "$workers" --runs "$runs"
step "$bin/ito-bench" dist-fib --n "$fib_n" --ranks "$ranks" --workers 1 --runs "$runs"
step "$bin/ito-bench" dist-sort --n "$sort_n" --ranks "$ranks" --node both --workers 1 \
  --runs "$runs"
step "$bin/ito-bench" dist-stencil --n "$stencil_n" --sweeps "$sweeps" --ranks "$ranks" \
  --node both --workers 1 --runs "$runs"
# the whole machine as a few ranks of several workers, against one process
step "$bin/ito-bench" dist-sort --n "$sort_n" --ranks 1,2,4 --node host --workers 4 \
  --access fault --runs "$runs"
step "$bin/ito-bench" dsm --ranks 2 --node both --runs 7
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
