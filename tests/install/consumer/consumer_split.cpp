// SPDX-License-Identifier: Apache-2.0
// Uses the installed ito::split_stack interface: fib on two workers under the
// lazy stack policy, children on their parents' segment tails.
#include <cstdio>

#include "ito/thread.hpp"

static long fib(int n) {
  if (n < 2) return n;
  auto a = ito::create_thread(fib, n - 1);
  long b = fib(n - 2);
  return ito::join(a) + b;
}

int main() {
  ito::options o;
  o.workers = 2;
  o.stacks = ito::stack_policy::lazy;
  o.stack_block_size = 16 << 10;
  long r;
  {
    ito::runtime rt(o);
    r = ito::join(ito::create_thread(fib, 20));
  }
  if (r != 6765) {
    std::printf("consumer: fib(20) = %ld\n", r);
    return 1;
  }
  std::printf("consumer: ok\n");
  return 0;
}
