#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Instructions per operation of the fast paths, counted by callgrind, for two
# ito trees: a noise-free companion to ab.sh on a shared 2-core machine,
# where a 1 ns change hides in the timings' spread but not in the counts.
#   bench/instr_ab.sh OLD_TREE NEW_TREE
# Each tree: a source checkout with a release build in build/release (its
# include/, build/release/include/ and build/release/src/libito.a). Each
# kernel (fib by create_thread, yield, create+join from a ULT and from the
# main ULT, the same with a ULT of its own, fib by parallel_invoke) is built
# against both, linked with libito.a as a program built from source would
# be, and run at two sizes under callgrind; the difference of the two totals
# over the difference of the operations is the count per operation
# (start-up cancels out). One worker.
set -euo pipefail
command -v valgrind >/dev/null || { echo "instr_ab.sh: needs valgrind (apt-get install valgrind)" >&2; exit 77; }
old=$(realpath "$1") new=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat > "$work/fib.cpp" <<'EOF'
// create_thread + join per internal node of fib's call tree
#include <ito/ito.hpp>
#include <cstdlib>
static long fib(int n) {
  if (n < 2) return n;
  auto child = ito::create_thread(fib, n - 1);
  long b = fib(n - 2);
  return ito::join(std::move(child)) + b;
}
int main(int, char** argv) {
  const int n = std::atoi(argv[1]);
  return ito::start_main_thread_with_worker_size(1, [&] { return fib(n); }) > 0 ? 0 : 1;
}
EOF
cat > "$work/yield.cpp" <<'EOF'
// two ULTs on one worker, each yielding n times
#include <ito/ito.hpp>
#include <cstdlib>
int main(int, char** argv) {
  const long n = std::atol(argv[1]);
  return ito::start_main_thread_with_worker_size(1, [&] {
    auto other = ito::create_thread([&] { for (long i = 0; i < n; ++i) ito::yield(); return 0; });
    for (long i = 0; i < n; ++i) ito::yield();
    return ito::join(std::move(other));
  });
}
EOF
cat > "$work/create_join.cpp" <<'EOF'
// an empty child created and joined from a ULT, n times
#include <ito/ito.hpp>
#include <cstdlib>
int main(int, char** argv) {
  const long n = std::atol(argv[1]);
  return ito::start_main_thread_with_worker_size(1, [&] {
    return ito::join(ito::create_thread([&] {
      long sum = 0;
      for (long i = 0; i < n; ++i) sum += ito::join(ito::create_thread([i] { return i; }));
      return sum == n * (n - 1) / 2 ? 0 : 1;
    }));
  });
}
EOF

cat > "$work/help_first.cpp" <<'EOF'
// an empty child created and joined from the main ULT (bound: help-first)
#include <ito/ito.hpp>
#include <cstdlib>
int main(int, char** argv) {
  const long n = std::atol(argv[1]);
  return ito::start_main_thread_with_worker_size(1, [&] {
    long sum = 0;
    for (long i = 0; i < n; ++i) sum += ito::join(ito::create_thread([i] { return i; }));
    return sum == n * (n - 1) / 2 ? 0 : 1;
  });
}
EOF
cat > "$work/ult_join.cpp" <<'EOF'
// a ULT of its own (create_thread(own_ult, ...); a tree from before own_ult
// made one for every create_thread) created and joined, n times: from a ULT
// (child-first) when the second argument is 0, from the main ULT
// (help-first) when it is 1
#include <ito/ito.hpp>
#include <cstdlib>
#ifdef HAS_OWN_ULT
#define ULT ito::own_ult,
#else
#define ULT
#endif
static long loop(long n) {
  long sum = 0;
  for (long i = 0; i < n; ++i) sum += ito::join(ito::create_thread(ULT [i] { return i; }));
  return sum == n * (n - 1) / 2 ? 0 : 1;
}
int main(int, char** argv) {
  const long n = std::atol(argv[1]);
  const bool from_main = std::atoi(argv[2]) == 1;
  return ito::start_main_thread_with_worker_size(1, [&] {
    return from_main ? loop(n) : ito::join(ito::create_thread(ULT [&] { return loop(n); }));
  });
}
EOF
cat > "$work/parallel_invoke.cpp" <<'EOF'
// fib by parallel_invoke: a branch pair per internal node
#include <ito/ito.hpp>
#include <ito/parallel.hpp>
#include <cstdlib>
static long fib(int n) {
  if (n < 2) return n;
  long a = 0, b = 0;
  ito::parallel_invoke([&] { a = fib(n - 1); }, [&] { b = fib(n - 2); });
  return a + b;
}
int main(int, char** argv) {
  const int n = std::atoi(argv[1]);
  return ito::start_main_thread_with_worker_size(1, [&] {
    return ito::join(ito::create_thread(fib, n));
  }) > 0 ? 0 : 1;
}
EOF

build() {  # tree kernel label
  local extra=()
  [ -f "$1/cmake/ito-text.ld" ] && extra=(-Wl,-T,"$1/cmake/ito-text.ld")
  grep -q own_ult_t "$1/include/ito/thread.hpp" && extra+=(-DHAS_OWN_ULT)
  g++ -O2 -std=c++20 -I"$1/include" -I"$1/build/release/include" "$work/$2.cpp" \
      -o "$work/$2.$3" "${extra[@]}" "$1/build/release/src/libito.a" -lpthread -ldl
}
instructions() {  # binary "args"
  # shellcheck disable=SC2086 # the arguments split on purpose
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$1" $2 2>&1 |
      sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
fib_spawns() {  # internal nodes of fib(n)'s call tree: fib(n+1) - 1
  python3 -c "a,b=0,1
for _ in range($1+1): a,b=b,a+b
print(a-1)"
}
per_op() {  # binary small large ops_small ops_large
  local a b
  a=$(instructions "$1" "$2") b=$(instructions "$1" "$3")
  python3 -c "print(f'{($b - $a) / ($5 - $4):7.1f}')"
}
printf '%-44s %10s %10s\n' "instructions per operation (callgrind, 1 worker)" "old" "new"
for kernel in fib yield create_join help_first ult_join parallel_invoke; do
  build "$old" $kernel old
  build "$new" $kernel new
done
row() {  # label kernel small large ops_small ops_large
  printf '%-44s %10s %10s\n' "$1" \
      "$(per_op "$work/$2.old" "$3" "$4" "$5" "$6")" \
      "$(per_op "$work/$2.new" "$3" "$4" "$5" "$6")"
}
row "fib: create_thread + join (a spawn)" fib 18 22 "$(fib_spawns 18)" "$(fib_spawns 22)"
row "yield (two ULTs on one worker)" yield 50000 150000 100000 300000
row "create + join of an empty child, from a ULT" create_join 50000 150000 50000 150000
row "create + join from the main ULT" help_first 50000 150000 50000 150000
row "create + join of a ULT (own_ult), from a ULT" ult_join "50000 0" "150000 0" 50000 150000
row "the same from the main ULT (help-first)" ult_join "50000 1" "150000 1" 50000 150000
row "fib by parallel_invoke (a branch pair)" parallel_invoke 18 22 "$(fib_spawns 18)" "$(fib_spawns 22)"
