#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# httpd (one ULT per connection, ito::io) vs httpd-threads (one OS thread per
# connection) under wrk on loopback. For each connection count and run: start
# the server, run wrk for a bounded time, read the server's peak RSS, stop it.
# Prints one table of medians over the runs.
#
# usage: bench/httpd_bench.sh [--build DIR] [--duration S] [--conns "100 10000"]
#                             [--runs R] [--workers N] [--wrk-threads T] [--port P]
#   --build DIR      a build with examples/httpd and examples/httpd-threads
#                    (default build/release)
#   --duration S     seconds of load per measurement (default 10)
#   --conns LIST     concurrent connections (default "100 10000")
#   --runs R         measurements per server and count; medians reported (default 3)
#   --workers N      httpd's workers (default: one per CPU)
#   --wrk-threads T  wrk's threads (default 2)
#   --pin            the server on CPU 1 alone (httpd with 1 worker), wrk on
#                    CPU 0 with 1 thread: each side has a core of its own
#
# Each server and wrk run in their own session (setsid): with the kernel's
# autogroup scheduling each then gets an equal CPU share however many threads
# it has. On a machine shared with other work that keeps the comparison about
# the servers, not about which has more runnable threads; on a quiet machine
# it changes nothing. When wrk and the server share the cores, where the
# closed loop's queue forms depends on the kernel's scheduling of the two:
# the OS threads of httpd-threads are woken (and preempt wrk) per request, so
# requests wait in wrk, where its latency figures do not count them. --pin
# takes that out (BENCHMARKS.md, "httpd").
#
# Columns: requests/s and p50 and p99 latency from wrk; peak RSS = the server's VmHWM;
# kernel stacks = growth of KernelStack in /proc/meminfo during the run (each
# OS thread has a 16 KiB kernel stack that RSS does not show; system-wide, so
# approximate); errors = wrk's socket errors (connect/read/write/timeout) and
# non-2xx responses.
set -euo pipefail

build=build/release
duration=10
conns="100 10000"
runs=3
workers=$(nproc)
wrk_threads=2
port=18080
pin=0

while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --conns) conns=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --wrk-threads) wrk_threads=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --pin) pin=1; shift ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "httpd_bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

server_cpu=() wrk_cpu=()
if (( pin )); then
  (( $(nproc) >= 2 )) || { echo "httpd_bench.sh: --pin needs 2 CPUs" >&2; exit 2; }
  server_cpu=(taskset -c 1) wrk_cpu=(taskset -c 0) workers=1 wrk_threads=1
fi
command -v wrk >/dev/null || { echo "httpd_bench.sh: wrk not found (Debian: apt-get install wrk)" >&2; exit 2; }
for b in httpd httpd-threads; do
  [[ -x $build/examples/$b ]] || { echo "httpd_bench.sh: $build/examples/$b not built" >&2; exit 2; }
done

# wrk needs a descriptor per connection, as do the servers (they raise theirs).
ulimit -n "$(ulimit -Hn)"
max_conns=0
for c in $conns; do (( c > max_conns )) && max_conns=$c; done
if (( $(ulimit -n) < max_conns + 64 )); then
  echo "httpd_bench.sh: ulimit -n is $(ulimit -n), too low for $max_conns connections" >&2
  exit 2
fi

kernel_stack_kb() { awk '/^KernelStack:/ {print $2}' /proc/meminfo; }

wait_for_port() {
  for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  echo "httpd_bench.sh: nothing listens on port $port" >&2
  return 1
}

# wrk's latency figure in milliseconds.
to_ms() {
  awk -v v="$1" 'BEGIN {
    n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
    if (u == "us") n /= 1000; else if (u == "s") n *= 1000; else if (u == "m") n *= 60000
    printf "%.2f", n }'
}

median() { sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else printf "%.2f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

results=$(mktemp)
trap 'rm -f "$results"' EXIT

# One measurement: prints "server conns req/s p99_ms rss_kb kstack_kb errors p50_ms".
measure() {
  local server=$1 c=$2 args=()
  [[ $server == httpd ]] && args=(--workers "$workers")
  local base; base=$(kernel_stack_kb)
  setsid "${server_cpu[@]}" "$build/examples/$server" --port "$port" "${args[@]}" >/dev/null &
  local pid=$!
  wait_for_port
  local peak=$base out
  out=$(mktemp)
  setsid "${wrk_cpu[@]}" wrk -t"$wrk_threads" -c"$c" -d"${duration}s" --timeout 10s --latency \
    "http://127.0.0.1:$port/" >"$out" 2>&1 &
  local wrk_pid=$!
  while kill -0 "$wrk_pid" 2>/dev/null; do
    local k; k=$(kernel_stack_kb)
    (( k > peak )) && peak=$k
    sleep 0.25
  done
  wait "$wrk_pid" || true
  local rss; rss=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status")
  kill "$pid"; wait "$pid" 2>/dev/null || true
  local rps p50 p99 errs
  rps=$(awk '/^Requests\/sec:/ {print $2}' "$out")
  p50=$(to_ms "$(awk '$1 == "50%" {print $2}' "$out")")
  p99=$(to_ms "$(awk '$1 == "99%" {print $2}' "$out")")
  errs=$(awk '/Socket errors:/ {gsub(/,/, ""); e += $4 + $6 + $8 + $10} /Non-2xx/ {e += $NF} END {print e + 0}' "$out")
  rm -f "$out"
  echo "$server $c ${rps:-0} $p99 $rss $((peak - base)) $errs $p50"
  sleep 1  # let TIME_WAIT sockets and exited threads settle
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, $(uname -r)"
echo "# wrk -t$wrk_threads -d${duration}s, httpd --workers $workers, pinned=$pin, runs=$runs, load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for run in $(seq "$runs"); do
  for c in $conns; do
    # Alternate which server goes first, so slow drifts in background load
    # do not always favour the same one.
    if (( run % 2 )); then order="httpd httpd-threads"; else order="httpd-threads httpd"; fi
    for s in $order; do
      line=$(measure "$s" "$c")
      echo "# run $run: $line" >&2
      echo "$line" >>"$results"
    done
  done
done

printf '%-14s %7s %12s %10s %10s %14s %18s %8s\n' server conns "requests/s" "p50 ms" "p99 ms" "peak RSS MiB" "kernel stacks MiB" errors
for c in $conns; do
  for s in httpd httpd-threads; do
    sel() { awk -v s="$s" -v c="$c" -v f="$1" '$1 == s && $2 == c {print $f}' "$results"; }
    printf '%-14s %7s %12.0f %10.2f %10.2f %14.1f %18.1f %8s\n' "$s" "$c" \
      "$(sel 3 | median)" "$(sel 8 | median)" "$(sel 4 | median)" "$(echo "$(sel 5 | median) / 1024" | bc -l)" \
      "$(echo "$(sel 6 | median) / 1024" | bc -l)" "$(sel 7 | median)"
  done
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
