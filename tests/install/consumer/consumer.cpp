// SPDX-License-Identifier: Apache-2.0
// Uses the installed C++ headers and library: fib on two workers.
#include <cstdio>

#include "ito/thread.hpp"

static long fib(int n) {
  if (n < 2) return n;
  auto a = ito::create_thread(fib, n - 1);
  long b = fib(n - 2);
  return ito::join(a) + b;
}

int main() {
  long r = ito::start_main_thread_with_worker_size(2, [] { return fib(20); });
  if (r != 6765) {
    std::printf("consumer: fib(20) = %ld\n", r);
    return 1;
  }
  std::printf("consumer: ok\n");
  return 0;
}
