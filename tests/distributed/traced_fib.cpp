// SPDX-License-Identifier: Apache-2.0
// fib(24) on the distributed scheduler, for check_dist_trace.py: run with a
// trace file per rank, its ranks steal from each other (messages both ways).
#include <cstdio>

#include "ito/dist.hpp"
#include "ito/thread.hpp"

namespace {

long fib(int n) {
  if (n < 2) return n;
  auto left = ito::create_thread(fib, n - 1);
  const long right = fib(n - 2);
  return left.get() + right;
}

}  // namespace

int main(int argc, char** argv) {
  ito::dist::runtime dist(&argc, &argv);
  const long result = ito::dist::start_main_thread([] { return fib(24); });
  if (ito::dist::rank() == 0) std::printf("fib(24) = %ld\n", result);
  return result == 46368 ? 0 : 1;
}
