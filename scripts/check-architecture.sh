#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Keeps docs/ARCHITECTURE.md the map of the code, and the house rules it
# states, true. Fails (listing why) when:
#   - a source file under src/ is not in docs/ARCHITECTURE.md's file map;
#   - the file map names a file that does not exist;
#   - anything but src/sched/join_word.hpp touches ult::join_state (the join
#     word has one owner; the gdb table's offsetof is the one exception);
#   - anything but src/distributed/dsm/page_state.hpp writes a DSM page's
#     state (the state array and the overwrite marks have one owner: its
#     named transitions);
#   - a file under src/distributed/ (any of its layers) is over 350 lines;
#   - the headers under src/ include each other in a circle;
#   - a file under src/distributed/ includes from a folder above its own in
#     the order ARCHITECTURE.md states (its "Order inside src/distributed/"
#     line, lowest first), or sits in a folder that order does not name; or a
#     file outside src/distributed/ includes from it (nothing below calls the
#     distributed mode).
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

# 1 and 2. The file map (the "## File map" section: a "### `src/<folder>/`"
# heading, then rows whose first cell names files of that folder, `name.*`
# for a pair) lists every source file, and nothing that does not exist.
listed=$(awk '
  /^## File map/ { on = 1; next }
  on && /^## / { on = 0 }
  on && /^### `src\// { folder = $2; gsub(/`/, "", folder); next }
  on && folder != "" && /^\| `/ {
    split($0, cells, "|"); cell = cells[2]
    while (match(cell, /`[^`]+`/)) {
      print folder substr(cell, RSTART + 1, RLENGTH - 2)
      cell = substr(cell, RSTART + RLENGTH)
    }
  }' "$map")
[ -n "$listed" ] || fail "$map has no file map"
covered=$(mktemp)
trap 'rm -f "$covered"' EXIT
while IFS= read -r entry; do
  [ -n "$entry" ] || continue
  matched=0
  for f in $entry; do  # a `stem.*` entry expands here
    if [ -f "$f" ]; then
      echo "$f" >> "$covered"
      matched=1
    fi
  done
  [ "$matched" -eq 1 ] || fail "$map lists $entry, which does not exist"
done <<< "$listed"
while IFS= read -r f; do
  grep -qxF -- "$f" "$covered" || fail "$f is not in the file map of $map"
done < <(sources)

# 3. The join word has one owner.
if hits=$(grep -rnE 'join_state' src --include='*.cpp' --include='*.hpp' \
            | grep -vE '^src/sched/join_word\.hpp:|^src/sched/ult\.hpp:|^src/sched/debug_table\.cpp:' \
            | grep -vE '^[^:]+:[0-9]+:[[:space:]]*//'); then
  fail "ult::join_state touched outside src/sched/join_word.hpp (use its functions):"
  echo "$hits" >&2
fi

# 4. A DSM page's state has one owner. Its arrays are page_states' private
# state_ and overwrite_; no other file names them, nor stores into a
# state[...] or overwrite[...] element (as dsm.cpp did before issue 45).
if hits=$(grep -rnE '\b(state|overwrite)_\b|\b(state|overwrite)\[.*\][[:space:]]*([-+*/%|&^]?=[^=]|\+\+|--)' \
            src/distributed --include='*.cpp' --include='*.hpp' \
            | grep -vE '^src/distributed/dsm/page_state\.hpp:' \
            | grep -vE '^[^:]+:[0-9]+:[[:space:]]*//'); then
  fail "a DSM page's state written outside src/distributed/dsm/page_state.hpp (use its transitions):"
  echo "$hits" >&2
fi

# 5. The distributed mode stays in small files (every layer of it).
while IFS= read -r f; do
  n=$(wc -l < "$f")
  [ "$n" -le 350 ] || fail "$f has $n lines (at most 350: cut it by concern)"
done < <(sources | grep '^src/distributed/')

# 6. No circle of includes among src/'s headers.
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

# 7. Inside the distributed mode, includes point down its folders' order.
# shellcheck disable=SC2016  # the backquotes are Markdown's, not the shell's
order=$(grep -m1 -E '^\*\*Order inside `src/distributed/`' "$map" | sed -E 's/^[^:]*://' \
          | grep -oE '`src/distributed/[a-z_/]*`' | tr -d '`' || true)
if [ -z "$order" ]; then
  fail "$map states no \"Order inside \`src/distributed/\`\" line"
else
  layer_of() {  # the rank in the order of the folder holding $1, or nothing
    local dir i=0 f
    dir="$(dirname "$1")/"
    for f in $order; do
      [ "$f" = "$dir" ] && { echo "$i"; return; }
      i=$((i + 1))
    done
  }
  while IFS= read -r f; do
    if [[ "$f" != src/distributed/* ]]; then
      if hits=$(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"distributed/' "$f"); then
        fail "$f (below the distributed mode) includes from src/distributed/:"
        echo "$hits" >&2
      fi
      continue
    fi
    mine=$(layer_of "$f")
    if [ -z "$mine" ]; then
      fail "$f: its folder is not in $map's order inside src/distributed/"
      continue
    fi
    while IFS= read -r inc; do
      [ -n "$inc" ] || continue
      theirs=$(layer_of "src/$inc")
      [ -n "$theirs" ] || continue  # a folder outside the order: reported for its own files
      [ "$theirs" -le "$mine" ] ||
        fail "$f includes $inc, from a layer above its own (the order: ${order//$'\n'/ < })"
    done < <(grep -oE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"distributed/[^"]+"' "$f" \
               | sed -E 's/^[^"]*"//; s/"$//')
  done < <(sources)
fi

if [ "$failed" -ne 0 ]; then exit 1; fi
echo "check-architecture: the map names every source file; the house rules hold"
