#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every source file carries an SPDX line. `scripts/spdx.sh check` lists the
# files without one (and fails); `scripts/spdx.sh add` puts one at the top of
# each, in the file's comment syntax (after a #! line).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-check}
tag="SPDX-License-Identifier: Apache-2.0"

files() {
  git ls-files -- src include tests bench examples scripts cmake CMakeLists.txt Makefile .ci \
    | grep -E '(\.(c|cpp|hpp|h|S|py|sh|cmake|in)|CMakeLists\.txt|Makefile|/run)$' || true
}

comment_for() {
  case "$1" in
    *.c|*.cpp|*.hpp|*.h|*.h.in) echo "// $tag" ;;
    *.S) echo "/* $tag */" ;;
    *.pc.in) echo "# $tag" ;;
    *) echo "# $tag" ;;
  esac
}

missing=0
while IFS= read -r f; do
  [ -f "$f" ] || continue
  if head -n 3 "$f" | grep -q "SPDX-License-Identifier"; then continue; fi
  if [ "$mode" = add ]; then
    line=$(comment_for "$f")
    case "$f" in *.c|*.h|*.h.in) line="/* $tag */" ;; esac
    if head -n 1 "$f" | grep -q '^#!'; then
      { head -n 1 "$f"; echo "$line"; tail -n +2 "$f"; } > "$f.spdx"
    else
      { echo "$line"; cat "$f"; } > "$f.spdx"
    fi
    chmod --reference="$f" "$f.spdx" && mv "$f.spdx" "$f"
  else
    echo "no SPDX line: $f"
    missing=1
  fi
done < <(files)
exit $missing
