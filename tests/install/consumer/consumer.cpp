// SPDX-License-Identifier: Apache-2.0
// Uses the installed C++ headers and library through the umbrella header, as
// README's tour does: fib on two workers, then one call into each part of the
// API that ito/ito.hpp brings (flow, os_pool, delegate, io, sleep, lowlevel),
// which the installed ito/detail/ headers must compile.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <new>

#include "ito/ito.hpp"

static long fib(int n) {
  if (n < 2) return n;
  ito::future<long> child = ito::create_thread(fib, n - 1);  // queued: a thief may take it
  long b = fib(n - 2);                                        // the parent may be stolen
  return ito::join(std::move(child)) + b;
}

struct frame {
  int* out;
  static void body(void* p) { *static_cast<frame*>(p)->out = 1; }
};

int main() {
  long r = ito::start_main_thread_with_worker_size(2, [] { return fib(20); });
  if (r != 6765) {
    std::printf("consumer: fib(20) = %ld\n", r);
    return 1;
  }
  int parts = ito::start_main_thread_with_worker_size(2, [] {
    int n = 0;
    ito::parallel_invoke([&] { ++n; }, [] {});
    ito::flow::graph g;
    std::atomic<int> ran{0};
    ito::flow::completion done = g.add("node", [&] { ++ran; }).completion();
    g.run();
    done.wait();
    g.wait();
    n += ran.load();
    ito::os_pool pool;
    n += pool.submit([] { return 1; }).get();
    n += ito::delegate([] { return 1; });
    ito::sleep_for(std::chrono::microseconds(10));
    int low = 0;
    ito::lowlevel::allocated_ult th = ito::lowlevel::allocate(sizeof(frame));
    ::new (th.ptr) frame{&low};
    ito::lowlevel::fork(th, &frame::body);
    ito::lowlevel::join(th.id);
    return n + low;
  });
  if (parts != 5) {
    std::printf("consumer: %d of 5 API parts answered\n", parts);
    return 1;
  }
  std::printf("consumer: ok\n");
  return 0;
}
