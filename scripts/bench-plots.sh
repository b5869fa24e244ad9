#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The plots of BENCHMARKS.md, by one command: a workers sweep (1..N) of fib and
# create-join, ito beside the comparison systems ito-bench prints in the same run
# (oneTBB, OpenMP, NPTL/std::thread where built), as JSON rows and SVG line plots.
#
#   scripts/bench-plots.sh [--quick] [--bin DIR] [--out DIR] [--workers N] [--ranks 1,2,4]
#
#   --bin DIR     where ito-bench is (default build/release/bench; build it with
#                 `cmake --preset release && ninja -C build/release -j2 ito-bench`)
#   --out DIR     where the SVGs and the JSON rows go (default docs/img)
#   --workers N   sweep 1..N workers (default: nproc)
#   --quick       small sizes, one run per row (seconds; to check the script, CI-like)
#   --ranks LIST  also a ranks plot of dist-fib at these rank counts, both memory modes
#                 (needs the distributed benchmarks, built where CMake finds MPI)
#   --replot      run nothing: redraw the SVGs from the JSON rows already in --out
#
# Writes: bench-workers.json, fib_workers.svg (ns per spawn), fib_speedup.svg,
# create_join_workers.svg (ns per create+join, log scale) and, with --ranks,
# bench-ranks.json and dist_fib_ranks.svg.  Needs python3 (no other module).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=build/release/bench out=docs/img workers_max=$(nproc) quick=0 ranks="" replot=0
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --workers) workers_max=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --ranks) ranks=$2; shift 2 ;;
    --replot) replot=1; shift ;;
    -h|--help) sed -n '3,20p' "$0"; exit 0 ;;
    *) echo "bench-plots.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done
plot() { python3 "$root/scripts/plot_svg.py" "$@"; }
json=$out/bench-workers.json rjson=$out/bench-ranks.json

draw() {
  local stamp
  stamp=$(head -n1 "$json" | sed 's/^# //')
  plot "$json" --bench fib --title "fib($(fib_n "$json")): ns per spawn vs workers" --note "$stamp" \
    -o "$out/fib_workers.svg"
  plot "$json" --bench fib --y speedup --only ito,TBB,OpenMP \
    --title "fib($(fib_n "$json")): speed-up over 1 worker" --note "$stamp" -o "$out/fib_speedup.svg"
  plot "$json" --bench create-join --logy \
    --title "create+join: ns per pair (W=1 same worker, W=2 other worker)" --note "$stamp" \
    -o "$out/create_join_workers.svg"
  if [ -f "$rjson" ]; then
    plot "$rjson" --bench dist-fib --x ranks --y median_ms --logy \
      --title "dist-fib: time vs ranks, 1 worker each" --note "$(head -n1 "$rjson" | sed 's/^# //')" \
      -o "$out/dist_fib_ranks.svg"
  fi
  ls -1 "$out"/*.svg >&2
}
fib_n() { grep -m1 '"bench":"fib"' "$1" | sed 's/.*"params":{"n":\([0-9]*\)}.*/\1/'; }

if [ "$replot" = 1 ]; then draw; exit 0; fi

bench=$bin/ito-bench
[ -x "$bench" ] || { echo "bench-plots.sh: no $bench (see --help)" >&2; exit 1; }
mkdir -p "$out"
workers=$(seq -s, 1 "$workers_max")
if [ "$quick" = 1 ]; then
  fib=(--n 25 --runs 1) cj=(--iters 100000 --stolen-iters 10000 --os-iters 2000 --runs 1)
  dfib=(--n 20 --runs 1)
else
  fib=(--n 32 --runs 5) cj=(--runs 5) dfib=(--n 30 --runs 3)
fi
tree=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$root" diff --quiet HEAD 2>/dev/null || tree+="+dirty"
stamp="$(date -u '+%Y-%m-%d %H:%M UTC'), tree $tree, $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"

echo "# $stamp" > "$json"
echo "== fib, workers $workers" >&2
"$bench" fib "${fib[@]}" --workers "$workers" --json >> "$json"
echo "== create-join, workers $workers" >&2
"$bench" create-join "${cj[@]}" --workers "$workers" --json >> "$json"
if [ -n "$ranks" ]; then
  [ -x "$bin/ito-bench-dist-fib" ] || { echo "bench-plots.sh: no distributed benchmarks in $bin" >&2; exit 1; }
  echo "# $stamp" > "$rjson"
  echo "== dist-fib, ranks $ranks" >&2
  "$bench" dist-fib "${dfib[@]}" --ranks "$ranks" --node both --workers 1 --json >> "$rjson"
else
  rm -f "$rjson"  # a ranks plot from an older run would not match the new workers plots
fi
draw
