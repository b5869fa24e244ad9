#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# LTP's Open POSIX conformance tests of the thread and lock calls, three ways:
# built against NPTL, built with `-include ito/pthread.h` and linked with
# libito ("source"), and the NPTL binary under libito-preload.so ("preload").
# Prints one table (test, NPTL, source, preload) and the totals. Not part of
# ctest or CI: LTP is not installed there (docs/POSIX.md, "Conformance").
#
# Usage: scripts/ltp-posix.sh LTP_DIR ITO_BUILD_DIR [PATTERN...]
#   LTP_DIR        an LTP source tree, or its testcases/open_posix_testsuite
#   ITO_BUILD_DIR  a build of ito with src/libito.a and
#                  src/preload/libito-preload.so (build/debug, build/release)
#   PATTERN        shell patterns matched against INTERFACE/TEST names
#                  (default: pthread_* sem_* sched_yield); an exact name such
#                  as pthread_cond_wait/2-2 reruns one test
# Environment:
#   LTP_TIMEOUT  seconds each run may take (default 60), then TIMEOUT
#   LTP_REPEAT   runs of each test per way (default 1); a cell then counts
#                each result seen, e.g. PASS*4,FAIL*1
#   LTP_JOBS     parallel compiles (default: the CPU count); tests run one
#                at a time, as many of them measure time
#   LTP_WORK     where binaries, logs and results.txt go (default: a new
#                directory under /tmp, printed at the end)
#   LTP_SOURCE_LIB  static (default): the source way links libito.a with
#                ito-text.ld (as CMake's ito::ito and pkg-config --static do);
#                shared: it links libito.so. Both run with ITO_PREEMPT=10000
#                (10 ms slices, the preload's default)
# Exit codes of a test (LTP's posixtest.h): 0 PASS, 1 FAIL, 2 UNRESOLVED,
# 4 UNSUPPORTED, 5 UNTESTED; a signal shows as its name (SIGSEGV), a compile
# failure as NOBUILD. "Judged" tests pass under NPTL and are not in one of
# LTP's speculative/ folders (behaviour POSIX leaves undefined).
set -euo pipefail

usage() { sed -n '9,31p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 2 ] || usage
ltp=$1
build=$(cd "$2" && pwd)
shift 2
patterns=("$@")
[ ${#patterns[@]} -gt 0 ] || patterns=('pthread_*' 'sem_*' 'sched_yield')

if [ -d "$ltp/testcases/open_posix_testsuite" ]; then ltp=$ltp/testcases/open_posix_testsuite; fi
pts=$(cd "$ltp" && pwd)
[ -f "$pts/include/posixtest.h" ] || { echo "ltp-posix: no open_posix_testsuite at $1" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
source_lib=${LTP_SOURCE_LIB:-static}
case $source_lib in
  static) libito="$build/src/libito.a -Wl,-T,$repo/cmake/ito-text.ld" ;;
  shared) libito=$build/src/libito.so ;;
  *) echo "ltp-posix: LTP_SOURCE_LIB=$source_lib: expected static or shared" >&2; exit 2 ;;
esac
preload=$build/src/preload/libito-preload.so
source_env=(ITO_PREEMPT=10000)
for f in "${libito%% *}" "$preload"; do
  [ -f "$f" ] || { echo "ltp-posix: $f is missing (build the ito and ito_preload targets)" >&2; exit 2; }
done
timeout_s=${LTP_TIMEOUT:-60}
repeat=${LTP_REPEAT:-1}
jobs=${LTP_JOBS:-$(nproc)}
work=${LTP_WORK:-$(mktemp -d /tmp/ltp-posix.XXXXXX)}
mkdir -p "$work"
work=$(cd "$work" && pwd)

# The tests: NUMBER-NUMBER.c under conformance/interfaces (LTP's own rule,
# scripts/locate-test), named INTERFACE/NUMBER-NUMBER or
# INTERFACE/speculative/NUMBER-NUMBER.
names=()
while IFS= read -r src; do
  name=${src#"$pts/conformance/interfaces/"}
  name=${name%.c}
  for p in "${patterns[@]}"; do
    # shellcheck disable=SC2053  # the pattern is meant to match
    if [[ $name == $p ]]; then names+=("$name"); break; fi
  done
done < <(find "$pts/conformance/interfaces" -type f -name '[0-9]*-[0-9]*.c' ! -name '*buildonly*' | sort -V)
[ ${#names[@]} -gt 0 ] || { echo "ltp-posix: no test matches ${patterns[*]}" >&2; exit 2; }

# LTP's own flags (include/mk/env.mk) and its usual -O2 -g.
export LTP_PTS=$pts LTP_OUT=$work/bin LTP_LIBITO=$libito LTP_ITO_INCLUDES="-I$repo/include -I$build/include"
export LTP_ITO_RPATH="-Wl,-rpath,$build/src"
export LTP_CFLAGS="-O2 -g -std=c99 -D_POSIX_C_SOURCE=200809L -D_XOPEN_SOURCE=700 -w"
# One test, one way: nptl or source. The tests define test_main (some in the
# testfrmw file they include) and take main from LTP's lib/common.c.
compile() {
  local way=$1 name=$2
  local src=$LTP_PTS/conformance/interfaces/$name.c
  local out=$LTP_OUT/$way/$name
  mkdir -p "$(dirname "$out")"
  local main=("$LTP_PTS/lib/common.c")
  if grep -qE '^int[[:space:]]+main[[:space:]]*\(' "$src"; then main=(); fi
  local cmd=(cc $LTP_CFLAGS -I"$LTP_PTS/include" -I"$(dirname "$src")")
  if [ "$way" = source ]; then
    # shellcheck disable=SC2206  # two -I words
    # shellcheck disable=SC2206  # libito.a and its linker script: two words
    cmd+=(-include ito/pthread.h $LTP_ITO_INCLUDES -o "$out" "$src" "${main[@]}" $LTP_LIBITO
          $LTP_ITO_RPATH -lstdc++)
  else
    cmd+=(-o "$out" "$src" "${main[@]}")
  fi
  "${cmd[@]}" -lpthread -lrt > "$out.build.log" 2>&1 || rm -f "$out"
}
export -f compile

echo "ltp-posix: building ${#names[@]} tests twice in $work/bin ($jobs at a time; source way: $(basename "${libito%% *}"), ITO_PREEMPT=10000)" >&2
for way in nptl source; do
  printf "$way %s\n" "${names[@]}"
done | xargs -P "$jobs" -n 2 bash -c 'compile "$0" "$1"'

# One run of one binary in a directory of its own (some tests make files);
# `timeout` signals the test's whole process group (forked children too).
result_of() {
  case $1 in
    0) echo PASS ;; 1) echo FAIL ;; 2) echo UNRESOLVED ;; 4) echo UNSUPPORTED ;; 5) echo UNTESTED ;;
    124 | 137) echo TIMEOUT ;;
    *) if [ "$1" -gt 128 ]; then echo "SIG$(kill -l $(($1 - 128)) 2> /dev/null || echo $(($1 - 128)))"
       else echo "EXIT$1"; fi ;;
  esac
}
run_one() {
  local way=$1 name=$2 bin=$3 i=$4
  local dir=$work/run/$way/$name
  rm -rf "$dir" && mkdir -p "$dir"
  [ -x "$bin" ] || { echo NOBUILD; return; }
  local env=()
  [ "$way" = preload ] && env=(LD_PRELOAD="$preload")
  [ "$way" = source ] && env=("${source_env[@]}")
  local rc=0
  (cd "$dir" && env "${env[@]}" timeout -k 5 "$timeout_s" "$bin" > "$work/log/$way/$name.$i.log" 2>&1) 2> /dev/null || rc=$?
  result_of "$rc"
}
# Several runs make one cell: the result if all agree, else each with its count.
cell() {
  local way=$1 name=$2 bin=$3 results=() i
  mkdir -p "$(dirname "$work/log/$way/$name")"
  for ((i = 1; i <= repeat; i++)); do results+=("$(run_one "$way" "$name" "$bin" "$i")"); done
  printf '%s\n' "${results[@]}" | sort | uniq -c | sort -rn \
    | awk 'NR == 1 { one = $2 "*" $1; all = one; n = 1; next } { all = all "," $2 "*" $1; n++ }
           END { if (n == 1) { sub(/\*[0-9]+$/, "", one); print one } else print all }'
}

table=$work/results.txt
: > "$table"
echo "ltp-posix: running each test $repeat time(s) per way, ${timeout_s}s at most" >&2
for name in "${names[@]}"; do
  nptl=$(cell nptl "$name" "$work/bin/nptl/$name")
  source=$(cell source "$name" "$work/bin/source/$name")
  pre=$(cell preload "$name" "$work/bin/nptl/$name")
  printf '%-44s %-12s %-12s %s\n' "$name" "$nptl" "$source" "$pre" | tee -a "$table" >&2
done

{
  printf '%-44s %-12s %-12s %s\n' test NPTL source preload
  cat "$table"
  echo
  awk -v cols="NPTL source preload" '
    BEGIN { split(cols, col, " ") }
    { for (c = 2; c <= 4; c++) count[c, $c]++; seen[$2] = seen[$3] = seen[$4] = 1 }
    $1 !~ /\/speculative\// && $2 == "PASS" {
      judged++; if ($3 == "PASS") src++; if ($4 == "PASS") pre++
      if ($3 != "PASS" || $4 != "PASS") diff = diff sprintf("  %-42s source %-12s preload %s\n", $1, $3, $4)
    }
    $2 != "PASS" && ($3 == "PASS" || $4 == "PASS") { better = better "  " $0 "\n" }
    END {
      for (c = 2; c <= 4; c++) {
        line = sprintf("%-8s", col[c - 1] ":")
        for (r in seen) if (count[c, r]) line = line sprintf(" %s %d", r, count[c, r])
        print line
      }
      printf "judged (PASS under NPTL, not speculative): %d; ito from source passes %d, under the preload %d\n",
             judged, src, pre
      if (diff != "") printf "judged tests ito does not pass:\n%s", diff
      if (better != "") printf "tests ito passes and NPTL does not:\n%s", better
    }' "$table"
  echo "binaries, logs (log/WAY/TEST.RUN.log): $work"
} | tee "$work/summary.txt"
