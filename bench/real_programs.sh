#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Real Debian programs under libito-preload.so against NPTL: the wall time of
# each (tests/programs/real_program.sh's commands and inputs, which also check
# that the output is identical), median of R alternating runs, one table.
#   bench/real_programs.sh [--build DIR] [--runs R] [--workers W] [PROGRAM...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=build/release runs=5 workers=2
while [[ $# -gt 0 && $1 == --* ]]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    *) echo "real_programs.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
programs=("$@")
[[ ${#programs[@]} -gt 0 ]] || programs=(pigz pbzip2 lbzip2 zstd pzstd xz 7z sort sqlite3 bash python3 make ripgrep timeout)
preload=$(find "$build" -name 'libito-preload.so' | head -1)
[[ -n $preload ]] || { echo "real_programs.sh: no libito-preload.so under $build" >&2; exit 2; }
preload=$(cd "$(dirname "$preload")" && pwd)/$(basename "$preload")
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, ITO_WORKERS=$workers, runs=$runs, load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-8s %10s %10s %8s\n' program "NPTL s" "ito s" "ito/NPTL"
for p in "${programs[@]}"; do
  line=$(REAL_PROGRAM_TIMES=$runs "$here/../tests/programs/real_program.sh" "$p" "$preload" "$workers" | grep '^times:' || true)
  if [[ -z $line ]]; then printf '%-8s %10s %10s %8s\n' "$p" - - "failed"; continue; fi
  read -r _ _ _ _ nptl _ ito _ <<<"$line"
  awk -v p="$p" -v n="$nptl" -v i="$ito" 'BEGIN { printf "%-8s %10.3f %10.3f %8.2f\n", p, n, i, i / n }'
done
