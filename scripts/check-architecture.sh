#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Keeps docs/ARCHITECTURE.md the map of the code, and the house rules it
# states, true. Fails (listing why) when:
#   - a source file under src/ is not named in docs/ARCHITECTURE.md (by its
#     path under src/, its name, or `stem.*` for a .cpp/.hpp pair);
#   - the file map names a file that no longer exists;
#   - anything but src/sched/join_word.hpp touches ult::join_state (the join
#     word has one owner; the gdb table's offsetof is the one exception);
#   - a file of the distributed scheduler (src/dist/scheduler/) is over 350
#     lines;
#   - the headers under src/ include each other in a circle.
set -euo pipefail
cd "$(dirname "$0")/.."
map=docs/ARCHITECTURE.md
failed=0
fail() {
  echo "check-architecture: $*" >&2
  failed=1
}

sources() {
  git ls-files --cached --others --exclude-standard -- src \
    | grep -E '\.(c|cpp|hpp|h|S)$' | while IFS= read -r f; do [ -f "$f" ] && echo "$f"; done
}

# 1. Every source file is on the map.
while IFS= read -r f; do
  rel=${f#src/}
  name=${f##*/}
  stem=${name%.*}
  if grep -qF -- "$rel" "$map" || grep -qF -- "\`$name\`" "$map" || grep -qF -- "$stem.*" "$map" ||
     grep -qF -- "\`$stem\`" "$map"; then
    continue
  fi
  fail "$f is not named in $map"
done < <(sources)

# 2. Every path the file map lists (| `src/...` |) exists.
grep -oE '^\| `src/[^`]+`' "$map" | sed -E 's/^\| `//; s/`$//' | while IFS= read -r p; do
  # a.{cpp,hpp} style or a folder
  if [[ $p == *"{"* ]]; then
    base=${p%%\{*}; alts=${p#*\{}; alts=${alts%\}*}
    for alt in ${alts//,/ }; do [ -e "$base$alt" ] || echo "$base$alt"; done
  else
    [ -e "$p" ] || echo "$p"
  fi
done | while IFS= read -r gone; do
  echo "check-architecture: $map lists $gone, which does not exist" >&2
  echo x
done | grep -q x && failed=1

# 3. The join word has one owner.
if hits=$(grep -rnE 'join_state' src --include='*.cpp' --include='*.hpp' \
            | grep -vE '^src/sched/join_word\.hpp:|^src/sched/ult\.hpp:|^src/sched/debug_table\.cpp:' \
            | grep -vE '^[^:]+:[0-9]+:[[:space:]]*//'); then
  fail "ult::join_state touched outside src/sched/join_word.hpp (use its functions):"
  echo "$hits" >&2
fi

# 4. The distributed scheduler stays in small files.
for f in src/dist/scheduler/*; do
  [ -f "$f" ] || continue
  n=$(wc -l < "$f")
  [ "$n" -le 350 ] || fail "$f has $n lines (at most 350: cut it by concern)"
done

# 5. No circle of includes among src/'s headers.
edges=$(sources | grep -E '\.(hpp|h)$' | while IFS= read -r h; do
  grep -oE '^#include "[^"]+"' "$h" | sed -E 's/^#include "//; s/"$//' | while IFS= read -r inc; do
    [ -f "src/$inc" ] && echo "src/$inc ${h}"
  done
  echo "$h $h"
done)
if ! out=$(echo "$edges" | tsort 2>&1 >/dev/null) || [ -n "$out" ]; then
  fail "headers include each other in a circle:"
  echo "$out" >&2
fi

if [ "$failed" -ne 0 ]; then exit 1; fi
echo "check-architecture: the map names every source file; the house rules hold"
