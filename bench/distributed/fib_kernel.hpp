// SPDX-License-Identifier: Apache-2.0
// fib(n) with one ULT per call, on ito's ordinary API: the distributed
// benchmark, its one-process reference and the distributed tests run it.
#pragma once

#include "ito/thread.hpp"

namespace fib_kernel {

inline long fib(int n) {
  if (n < 2) return n;
  auto a = ito::create_thread(fib, n - 1);
  const long b = fib(n - 2);
  return a.get() + b;
}

}  // namespace fib_kernel
