#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs one real program on a small generated input twice: under NPTL and under
# libito-preload.so with ITO_WORKERS=W. Passes when both finish in time with
# the same status and byte-identical output; skips (77) when the program is
# not installed. Usage: real_program.sh NAME PRELOAD_LIB WORKERS
# With REAL_PROGRAM_TIMES=R (bench/real_programs.sh), it then runs each side R
# more times, alternating, and prints the median wall times.
set -uo pipefail
name=$1 preload=$2 workers=$3
here=$(cd "$(dirname "$0")" && pwd)
limit=${REAL_PROGRAM_TIMEOUT:-60}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

need() { command -v "$1" >/dev/null || { echo "skip: $1 is not installed"; exit 77; }; }

# ~3 MB of text that compresses, sorts and greps like real data.
make_input() {
  awk 'BEGIN { srand(7); for (i = 0; i < 60000; ++i) {
         printf "%07d line %d of the input, word%d %s\n", (i * 7919) % 1000003, i,
                int(rand() * 5000), (i % 13 == 0) ? "needle" : "hay" } }' > input.txt
  mkdir -p tree
  for d in 0 1 2 3; do
    mkdir -p tree/d$d
    for f in 0 1 2 3 4 5 6 7; do sed -n "$((d * 8000 + f * 900 + 1)),+899p" input.txt > tree/d$d/f$f.txt; done
  done
}

# The command for each program: reads ./input.txt or ./tree, writes stdout.
command_for() {
  case $1 in
    pigz) need pigz; echo 'pigz -p 4 -c input.txt | pigz -d -p 4 | cksum; pigz -p 4 -c input.txt | cksum' ;;
    pbzip2) need pbzip2; echo 'pbzip2 -p4 -c input.txt > x.bz2 && pbzip2 -p4 -dc x.bz2 | cksum; cksum < x.bz2' ;;
    lbzip2) need lbzip2; echo 'lbzip2 -n 4 -c input.txt > x.bz2 && lbzip2 -n 4 -dc x.bz2 | cksum' ;;
    zstd) need zstd; echo 'zstd -q -T4 -c input.txt | zstd -q -d -c | cksum; zstd -q -T4 -c input.txt | cksum' ;;
    pzstd) need pzstd; echo 'pzstd -q -p 4 -c input.txt | pzstd -q -d -p 4 -c | cksum' ;;
    xz) need xz; echo 'xz -T4 -c input.txt | xz -T4 -dc | cksum; xz -T4 -c input.txt | cksum' ;;
    7z) need 7z; echo '7z a -txz -mmt4 -si -so dummy < input.txt 2>/dev/null | xz -dc | cksum' ;;
    sort) echo 'sort --parallel=4 -S 512K input.txt | cksum; sort -n --parallel=4 -S 512K input.txt | head -3' ;;
    sqlite3) need sqlite3
      echo 'sqlite3 :memory: "PRAGMA threads=4; CREATE TABLE t(k, v);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000)
            INSERT INTO t SELECT (i * 7919) % 100003, i FROM n;
            CREATE INDEX tk ON t(k); SELECT count(*), sum(v), min(k), max(k) FROM t;
            SELECT k, v FROM t ORDER BY k, v LIMIT 3 OFFSET 1000;"' ;;
    ripgrep) need rg; echo 'rg -j2 -c needle tree | sort; rg -j2 --files tree | sort | cksum' ;;
    bash) need bash
      echo 'bash -c '\''x=$(wc -l < input.txt); echo "lines $x"; for i in 1 2 3 4; do (echo "sub $i $(echo nested $i)") & done; wait;
            grep -c needle input.txt | while read n; do echo "needles $n"; done; echo $(seq 5)'\'' | sort' ;;
    python3) need python3
      echo 'python3 -c "
import threading, subprocess, os, queue, concurrent.futures as cf
q = queue.Queue(); total = []
def work(i):
    s = sum(j * j for j in range(20000 + i)); q.put(s); return s
with cf.ThreadPoolExecutor(4) as ex: r = sorted(ex.map(work, range(16)))
print(len(r), r[0], r[-1], q.qsize())
lock = threading.Lock(); cv = threading.Condition(lock); box = []
def producer():
    for i in range(1000):
        with cv: box.append(i); cv.notify()
t = threading.Thread(target=producer); t.start(); got = 0
while got < 1000:
    with cv:
        cv.wait_for(lambda: box, timeout=5); got += len(box); box.clear()
t.join(); print(\"consumed\", got)
print(subprocess.run([\"sh\", \"-c\", \"echo from a child $((6 * 7))\"], capture_output=True, text=True).stdout.strip())
pid = os.fork()
if pid == 0: os._exit(9)
print(\"forked child status\", os.waitpid(pid, 0)[1] >> 8)
"' ;;
    timeout) # coreutils: fork, a timer signal, sigsuspend; the child killed at its deadline
      echo 'timeout -k 1 5 sh -c "echo in time; exit 3"; echo "status $?";
            timeout -s USR1 0.2 sleep 5; echo "status $?"' ;;
    make) need make
      printf 'all: %s\n\techo done\n' "$(echo t{1..12})" > Makefile
      for i in $(seq 1 12); do printf 't%s:\n\t@sleep 0.05; echo built %s > t%s.out\n' $i $i $i >> Makefile; done
      echo 'make -s -j2 all >/dev/null && cat t*.out | sort' ;;
    rust_threads) # Rust's std: thread_local! with destructors, and its futex-based locks
      need rustc
      rustc -O --edition 2021 "$here/rust_threads.rs" -o rust_threads > rustc.log 2>&1 ||
        { echo "skip: rustc could not build rust_threads.rs: $(head -3 rustc.log)"; exit 77; }
      echo './rust_threads' ;;
    *) echo "unknown program $1" >&2; exit 2 ;;
  esac
}

make_input
cmd=$(command_for "$name") || exit $?

run() {  # run LABEL [env...]: runs cmd bounded in time; stdout to LABEL.out
  local label=$1; shift
  local start; start=$(date +%s.%N)
  # The bound itself runs without the preload: it must hold when ito fails.
  timeout -k 5 "$limit" env "$@" bash -c "$cmd" > "$label.out" 2> "$label.err"
  echo $? > "$label.rc"
  awk -v end="$(date +%s.%N)" -v start="$start" 'BEGIN { printf "%.3f\n", end - start }' >> "$label.times"
}
# REAL_PROGRAM_ITO_ENV: more NAME=VALUE settings for the ito side only.
ito_env=(ITO_WORKERS="$workers" ${REAL_PROGRAM_ITO_ENV:-} LD_PRELOAD="$preload")
run nptl
run ito "${ito_env[@]}"

status=0
if [ "$(cat ito.rc)" = 124 ] || [ "$(cat ito.rc)" = 137 ]; then
  echo "FAIL: $name under the preload (ITO_WORKERS=$workers) did not finish in ${limit}s"; status=1
elif [ "$(cat nptl.rc)" != "$(cat ito.rc)" ]; then
  echo "FAIL: $name exit status: NPTL $(cat nptl.rc), ito $(cat ito.rc)"; status=1
elif ! cmp -s nptl.out ito.out; then
  echo "FAIL: $name output differs (NPTL, then ito):"; diff nptl.out ito.out | head -20; status=1
fi
# No process of the run may step aside to OS threads because of its TLS
# where blocks can be made (x86-64; issue 42): the preload says so on stderr.
if [ $status -eq 0 ] && [ "$(uname -m)" = x86_64 ] && grep -q 'threads stay OS threads' ito.err; then
  echo "FAIL: $name: a process kept its threads on OS threads because of its TLS:"
  grep 'threads stay OS threads' ito.err | head -3; status=1
fi
# With ITO_STATS=1 in REAL_PROGRAM_ITO_ENV: how many runtimes ran, and in
# how many the threads had TLS blocks of their own.
if grep -q '^ito: stats:' ito.err; then
  echo "ITO_STATS: $(grep -c '^ito: stats:' ito.err) runtimes, $(grep -c '^ito: TLS blocks:' ito.err) with TLS blocks"
  grep '^ito: TLS blocks:' ito.err | head -3
fi
if [ $status -ne 0 ]; then
  echo "--- ito stderr:"; head -30 ito.err
else
  echo "ok: $name, ITO_WORKERS=$workers${REAL_PROGRAM_ITO_ENV:+ $REAL_PROGRAM_ITO_ENV}, status $(cat ito.rc), $(wc -l < ito.out) lines identical"
fi
if [ $status -eq 0 ] && [ "${REAL_PROGRAM_TIMES:-0}" -gt 0 ]; then
  rm -f nptl.times ito.times
  for i in $(seq "$REAL_PROGRAM_TIMES"); do
    if [ $((i % 2)) -eq 1 ]; then run nptl; run ito "${ito_env[@]}"
    else run ito "${ito_env[@]}"; run nptl; fi
  done
  median() { sort -g "$1" | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
  echo "times: $name W=$workers nptl $(median nptl.times) ito $(median ito.times) s (median of $REAL_PROGRAM_TIMES)"
fi
exit $status
