#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A/B of the fast paths between two ito-bench binaries (e.g. the tree before a
# change and after it), alternating which runs first each round, then the
# median ns/op of each row over the rounds:
#   bench/ab.sh OLD/ito-bench NEW/ito-bench [rounds]     (default 6 rounds)
set -euo pipefail
old=$1 new=$2 rounds=${3:-6}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
run() {  # label binary
  "$2" create-join --runs 3 --only ito --workers 1 --iters 1000000 2>/dev/null | grep '^create-join' | sed "s/^/$1 /"
  "$2" yield --runs 3 --only ito 2>/dev/null | grep '^yield' | sed "s/^/$1 /"
  "$2" fib --n 32 --runs 3 --workers 1 --only ito 2>/dev/null | grep '^fib' | sed "s/^/$1 /"
  "$2" mutex --runs 3 --workers 2 --only ito 2>/dev/null | grep '^mutex' | sed "s/^/$1 /"
}
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then run OLD "$old"; run NEW "$new"; else run NEW "$new"; run OLD "$old"; fi >> "$out"
done
python3 - "$out" <<'PY'
import collections, re, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r'(OLD|NEW) (\S+)\s+(.+?)\s{2,}(\d+)\s{2,}(.+?)\s{2,}([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)', line)
    if m:
        rows[(m.group(2), m.group(3).strip(), m.group(5).strip(), m.group(1))].append(float(m.group(9)))
def cell(v):  # a row only one of the two binaries has (a row added or removed)
    return f"{statistics.median(v):7.2f} (best {min(v):6.2f})" if v else f"{'-':>7} {'':12}"
for bench, case, impl in sorted({(b, c, i) for b, c, i, _ in rows}):
    o, n = rows[(bench, case, impl, 'OLD')], rows[(bench, case, impl, 'NEW')]
    print(f"{bench:12} {case:24} {impl:30} old {cell(o)}   new {cell(n)}   ns/op, {max(len(o), len(n))} rounds")
PY
