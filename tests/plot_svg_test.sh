#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/plot_svg.py turns a small fixed set of `ito-bench --json` rows into an
# SVG with one line per system; rows not available and non-JSON lines are skipped.
set -euo pipefail
python=${1:-python3}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/rows.json" <<'ROWS'
# a table header line, not JSON
{"bench":"fib","impl":"ito","workers":1,"params":{"n":20},"median_ms":10,"ns_per_op":5.0,"available":true,"group":"fib"}
{"bench":"fib","impl":"ito","workers":2,"params":{"n":20},"median_ms":6,"ns_per_op":3.0,"available":true,"group":"fib"}
{"bench":"fib","impl":"oneTBB task_group","workers":1,"params":{"n":20},"median_ms":30,"ns_per_op":116.9,"available":true,"group":"fib"}
{"bench":"fib","impl":"oneTBB task_group","workers":2,"params":{"n":20},"median_ms":20,"ns_per_op":10.0,"available":true,"group":"fib"}
{"bench":"fib","impl":"OpenMP tasks","workers":2,"params":{"n":20},"median_ms":null,"ns_per_op":null,"available":false,"group":"fib"}
{"bench":"dist-fib","impl":"ito-dist node, 1 rank(s)","workers":1,"params":{"n":20,"ranks":1,"node":"host"},"median_ms":9,"ns_per_op":1,"available":true,"group":"d"}
{"bench":"dist-fib","impl":"ito-dist node, 2 rank(s)","workers":1,"params":{"n":20,"ranks":2,"node":"host"},"median_ms":7,"ns_per_op":1,"available":true,"group":"d"}
ROWS
fail() { echo "plot_svg_test: $*" >&2; exit 1; }
"$python" "$root/scripts/plot_svg.py" "$dir/rows.json" --bench fib -o "$dir/fib.svg"
grep -q '<svg' "$dir/fib.svg" || fail "no <svg> element"
[ "$(grep -c '<polyline' "$dir/fib.svg")" = 2 ] || fail "expected 2 lines (ito, oneTBB)"
grep -q '>ito<' "$dir/fib.svg" || fail "no legend entry for ito"
grep -q '>oneTBB task_group<' "$dir/fib.svg" || fail "no legend entry for oneTBB"
grep -q 'OpenMP' "$dir/fib.svg" && fail "an unavailable row was drawn"
grep -q '>workers<' "$dir/fib.svg" || fail "no x axis label"
# every point inside the plot frame (y from 50 down to the frame's bottom)
if grep -o 'cy="[-0-9.]*"' "$dir/fib.svg" | grep -q 'cy="-'; then fail "a point above the frame"; fi
"$python" "$root/scripts/plot_svg.py" "$dir/rows.json" --bench fib --y speedup -o "$dir/s.svg"
grep -q 'ito: 1.66667' "$dir/s.svg" || fail "ito's speed-up at 2 workers is not 10/6"
"$python" "$root/scripts/plot_svg.py" "$dir/rows.json" --bench dist-fib --x ranks \
  --y median_ms -o "$dir/r.svg"
grep -q '>ito-dist node<' "$dir/r.svg" || fail "no series named by its memory mode"
[ "$(grep -c '<polyline' "$dir/r.svg")" = 1 ] || fail "the rank counts should make one line"
if "$python" "$root/scripts/plot_svg.py" "$dir/rows.json" --bench nothing -o "$dir/n.svg" 2>/dev/null
then fail "no rows should be an error"; fi
echo "plot_svg_test: ok"
