#include <chrono>
#include <cstdio>
#include <cstdlib>
#include "ito/thread.hpp"
static long fib(int n) {
  if (n < 2) return n;
  auto f = ito::create_thread(fib, n - 1);
  long b = fib(n - 2);
  return ito::join(std::move(f)) + b;
}
int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 30;
  unsigned w = argc > 2 ? atoi(argv[2]) : 1;
  for (int r = 0; r < 5; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    long v = ito::start_main_thread_with_worker_size(w, [&] { return fib(n); });
    auto t1 = std::chrono::steady_clock::now();
    std::printf("fib(%d)=%ld %.1f ms\n", n, v, std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
}
