// SPDX-License-Identifier: Apache-2.0
// The first ito program: Fibonacci with one ULT per call. create_thread runs
// the child at once; its parent may be stolen by an idle worker meanwhile.
//   ./fib [n]            (ITO_WORKERS=4 ./fib 35 to choose the workers)
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <ito/ito.hpp>

long fib(int n) {
  if (n < 2) return n;
  ito::future<long> child = ito::create_thread(fib, n - 1);
  long b = fib(n - 2);
  return ito::join(child) + b;
}

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 30;
  auto start = std::chrono::steady_clock::now();
  long r = ito::start_main_thread(fib, n);  // one worker per CPU, or ITO_WORKERS
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("fib(%d) = %ld in %.1f ms\n", n, r, ms);
}
