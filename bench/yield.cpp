// SPDX-License-Identifier: Apache-2.0
// Two threads on one worker/CPU yielding to each other: ito::yield vs
// sched_yield of two OS threads pinned to one CPU vs Boost.Fiber.
#include <pthread.h>
#include <sched.h>

#include <barrier>
#include <string>
#include <thread>

#include "benchmarks.hpp"
#include "ito/ito.h"
#include "ito/runtime.hpp"
#include "ito/thread.hpp"

#if ITO_BENCH_HAVE_BOOST_FIBER
#include <boost/fiber/all.hpp>
#endif

namespace bench {
namespace {

result row(const char* impl, unsigned w, long long yields) {
  result r;
  r.bench = "yield";
  r.group = "2 threads, 1 CPU";
  r.impl = impl;
  r.workers = w;
  r.params = {{"yields", std::to_string(yields)}};
  r.ops = static_cast<double>(yields / 2 * 2);
  return r;
}

int first_allowed_cpu() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) return c;
  return 0;
}

// The ns `fn` takes in the main ULT of a fresh runtime with options `o`
// (its start and stop untimed).
template <class F>
std::int64_t timed_in_main_ult(const ito::options& o, F fn) {
  ito::runtime rt(o);
  std::int64_t t0 = now_ns();
  fn();
  return now_ns() - t0;
}
template <class F>
std::int64_t timed_in_main_ult(unsigned w, F fn) {
  ito::options o;
  o.workers = w;
  return timed_in_main_ult(o, fn);
}

void* c_yielder(void* p) {
  const long long each = *static_cast<const long long*>(p);
  for (long long i = 0; i < each; ++i) ito_yield();
  return nullptr;
}

// Two ULTs made by ito_create (pthread_create's path) yield to each other on
// one worker, with or without a TLS block each (options::ult_tls): with
// blocks, every switch loads the other's thread pointer.
std::int64_t c_yield_pair(long long each, bool own_tls) {
  ito::options o;
  o.workers = 1;
  o.ult_tls = own_tls;
  std::int64_t t = 0;
  ito::runtime rt(o);
  ito::join(ito::create_thread(ito::own_ult, [&] {
    std::int64_t t0 = now_ns();
    ito_ult_t a, b;
    ito_create(&a, c_yielder, &each);
    ito_create(&b, c_yielder, &each);
    ito_join(a, nullptr);
    ito_join(b, nullptr);
    t = now_ns() - t0;
  }));
  return t;
}

}  // namespace

void run_yield(const yield_params& p, reporter& out) {
  for (unsigned w : p.workers) {
    progress("yield, %u worker(s)...", w);
    const long long each = p.ito_yields / 2;
    auto body = [each] {
      for (long long i = 0; i < each; ++i) ito::yield();
    };
    result r = row("ito::yield", w, p.ito_yields);
    r.reference = true;
    r.note = "two ULTs ping-pong on one worker";
    auto two_ults = [&] {
      auto a = ito::create_thread(ito::own_ult, body);
      auto b = ito::create_thread(ito::own_ult, body);
      ito::join(a);
      ito::join(b);
    };
    measure(r, p.runs, [&] { return timed_in_main_ult(w, two_ults); });
    out.add(std::move(r));
    if (w != 1) continue;  // on more workers the child may be stolen: no ping-pong
    // The same with ULTs that share their worker's floating-point control
    // words (options::fp_modes): the switch reads no MXCSR.
    result pw = row("ito::yield, FP modes per worker (ITO_FP_MODES=worker)", w, p.ito_yields);
    pw.note = "as ito::yield; the switch reads no MXCSR";
    ito::options per_worker;
    per_worker.workers = w;
    per_worker.fp_modes = ito::fp_mode_scope::per_worker;
    measure(pw, p.runs, [&] { return timed_in_main_ult(per_worker, two_ults); });
    out.add(std::move(pw));
    // The main ULT and a child run different code: the switch's return
    // into the other stack is mispredicted (BENCHMARKS.md), unlike two ULTs
    // running the same loop. On one worker both yield through the deque.
    result m = row("ito::yield, main ULT and one child", w, p.ito_yields);
    m.note = "the program's main ULT ping-pongs with a ULT it made";
    measure(m, p.runs, [&] {
      return timed_in_main_ult(w, [&] {
        auto child = ito::create_thread(ito::own_ult, body);
        body();
        ito::join(child);
      });
    });
    out.add(std::move(m));

    // The C API's ULTs (pthread_create's), with and without TLS blocks.
    result c = row("ito_yield (C API), 2 ULTs", w, p.ito_yields);
    c.note = "two ito_create ULTs ping-pong; the worker's TLS";
    measure(c, p.runs, [&] { return c_yield_pair(each, false); });
    out.add(std::move(c));
    result ct = row("ito_yield, 2 ULTs with own TLS blocks (ITO_ULT_TLS)", w, p.ito_yields);
    try {
      ct.note = "every switch loads the other's thread pointer";
      measure(ct, p.runs, [&] { return c_yield_pair(each, true); });
      out.add(std::move(ct));
    } catch (const ito::config_error& e) {
      out.add(not_available("yield", "2 threads, 1 CPU", ct.impl, w, e.what()));
    }
  }
  const unsigned w = 1;

  {
    result r = row("sched_yield, 2 OS threads", w, p.os_yields);
    r.note = "both pinned to one CPU";
    const long long each = p.os_yields / 2;
    const int cpu = first_allowed_cpu();
    measure(r, p.runs, [&] {
      std::barrier<> start(3);
      auto body = [&] {
        cpu_set_t s;
        CPU_ZERO(&s);
        CPU_SET(cpu, &s);
        pthread_setaffinity_np(pthread_self(), sizeof s, &s);
        start.arrive_and_wait();
        for (long long i = 0; i < each; ++i) sched_yield();
      };
      std::thread a(body), b(body);
      std::int64_t t0 = now_ns();
      start.arrive_and_wait();
      a.join();
      b.join();
      return now_ns() - t0;
    });
    out.add(std::move(r));
  }

#if ITO_BENCH_HAVE_BOOST_FIBER
  {
    result r = row("Boost.Fiber this_fiber::yield", w, p.fiber_yields);
    r.note = "two fibers, round_robin, one thread";
    const long long each = p.fiber_yields / 2;
    measure(r, p.runs, [&] {
      std::int64_t t = 0;
      std::thread([&] {
        auto body = [each] {
          for (long long i = 0; i < each; ++i) boost::this_fiber::yield();
        };
        std::int64_t t0 = now_ns();
        boost::fibers::fiber a(body), b(body);
        a.join();
        b.join();
        t = now_ns() - t0;
      }).join();
      return t;
    });
    out.add(std::move(r));
  }
#else
  out.add(not_available("yield", "2 threads, 1 CPU", "Boost.Fiber this_fiber::yield", w,
                        "built without Boost.Fiber (libboost-fiber-dev)"));
#endif
}

}  // namespace bench
