// SPDX-License-Identifier: Apache-2.0
// Create + join of an empty thread, N times in a row (seed 001's table 3 row:
// "create/join, same core / other core"). ito vs NPTL pthread_create/join and
// std::thread.
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>

#include "benchmarks.hpp"
#include "ito/ito.h"
#include "ito/parallel.hpp"
#include "ito/runtime.hpp"
#include "ito/thread.hpp"

namespace bench {
namespace {

void empty_ult() { clobber_memory(); }

// A child that raises the "inexact" flag, as nearly any floating-point
// division does (BENCHMARKS.md, "MXCSR").
volatile double dividend = 1.0, divisor = 3.0, quotient;
void dividing_ult() { quotient = dividend / divisor; }

// ns for `iters` create+joins of `child` from a ULT (not the main one):
// child-first ULTs (create_thread(own_ult, ...)), or create_thread's
// records, taken back and called by the join.
std::int64_t create_join_loop(unsigned w, long long iters, void (*child)(), bool own_ult) {
  std::int64_t t = 0;
  ito::start_main_thread_with_worker_size(w, [&] {
    ito::join(ito::create_thread(ito::own_ult, [&] {
      std::int64_t t0 = now_ns();
      if (own_ult) {
        for (long long i = 0; i < iters; ++i) ito::join(ito::create_thread(ito::own_ult, child));
      } else {
        for (long long i = 0; i < iters; ++i) ito::join(ito::create_thread(child));
      }
      t = now_ns() - t0;
    }));
  });
  return t;
}
// The same from the main ULT, which is bound to worker 0 and spawns ULTs
// help-first.
std::int64_t main_ult_loop(unsigned w, long long iters, bool own_ult) {
  std::int64_t t = 0;
  ito::start_main_thread_with_worker_size(w, [&] {
    std::int64_t t0 = now_ns();
    if (own_ult) {
      for (long long i = 0; i < iters; ++i) ito::join(ito::create_thread(ito::own_ult, empty_ult));
    } else {
      for (long long i = 0; i < iters; ++i) ito::join(ito::create_thread(empty_ult));
    }
    t = now_ns() - t0;
  });
  return t;
}

void* empty_c_ult(void*) {
  clobber_memory();
  return nullptr;
}

// ns for `iters` ito_create + ito_join (the C API, pthread_create's path)
// from a ULT that is not the main one, with or without a TLS block for each
// child (options::ult_tls, ITO_ULT_TLS); the same runtime otherwise.
std::int64_t c_api_loop(unsigned w, long long iters, bool own_tls) {
  ito::options o;
  o.workers = w;
  o.ult_tls = own_tls;
  std::int64_t t = 0;
  ito::runtime rt(o);
  ito::join(ito::create_thread([&] {
    std::int64_t t0 = now_ns();
    for (long long i = 0; i < iters; ++i) {
      ito_ult_t u;
      if (ito_create(&u, empty_c_ult, nullptr) != 0) throw std::runtime_error("ito_create failed");
      ito_join(u, nullptr);
    }
    t = now_ns() - t0;
  }));
  return t;
}

void* empty_pthread(void*) {
  clobber_memory();
  return nullptr;
}

// The CPUs this process may use, in order.
std::vector<int> cpus() {
  std::vector<int> out;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

cpu_set_t one_cpu(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  return s;
}

// Runs fn on a new OS thread pinned to `cpu`, so this thread's affinity (and
// with it the next runtime's worker 0) stays as it was.
template <class F>
void on_pinned_thread(int cpu, F&& fn) {
  std::thread t([&] {
    cpu_set_t s = one_cpu(cpu);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
    fn();
  });
  t.join();
}

// pthread_create + pthread_join from a thread pinned to creator_cpu; the child
// is pinned to child_cpu by its attributes (-1: not pinned).
std::int64_t pthread_loop(long long iters, int creator_cpu, int child_cpu) {
  std::int64_t t = 0;
  on_pinned_thread(creator_cpu, [&] {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (child_cpu >= 0) {
      cpu_set_t s = one_cpu(child_cpu);
      pthread_attr_setaffinity_np(&attr, sizeof s, &s);
    }
    std::int64_t t0 = now_ns();
    for (long long i = 0; i < iters; ++i) {
      pthread_t th;
      if (int e = pthread_create(&th, &attr, empty_pthread, nullptr); e != 0)
        throw std::runtime_error("pthread_create failed: " + std::to_string(e));
      pthread_join(th, nullptr);
    }
    t = now_ns() - t0;
    pthread_attr_destroy(&attr);
  });
  return t;
}

std::int64_t std_thread_loop(long long iters, int creator_cpu) {
  std::int64_t t = 0;
  auto body = [&] {
    std::int64_t t0 = now_ns();
    for (long long i = 0; i < iters; ++i) std::thread(empty_ult).join();
    t = now_ns() - t0;
  };
  if (creator_cpu >= 0) {
    on_pinned_thread(creator_cpu, body);
  } else {
    std::thread(body).join();
  }
  return t;
}

result row(const char* group, const char* impl, unsigned w, long long iters) {
  result r;
  r.bench = "create-join";
  r.group = group;
  r.impl = impl;
  r.workers = w;
  r.params = {{"iters", std::to_string(iters)}};
  r.ops = static_cast<double>(iters);
  return r;
}

}  // namespace

void run_create_join(const create_join_params& p, reporter& out) {
  const std::vector<int> cpu = cpus();
  for (unsigned w : p.workers) {
    progress("create-join, %u worker(s)...", w);
    const bool same = w == 1;
    const char* group = same ? "same worker/core" : "other worker/core";
    if (same) {
      // create_thread's common case: the child is a record, queued, taken
      // back by the join and called (no ULT, no switch).
      result q = row(group, "ito, create_thread (record, from a ULT)", w, p.ito_iters);
      q.reference = true;
      q.note = "child queued; join takes it back and calls it";
      measure(q, p.runs, [&] { return create_join_loop(w, p.ito_iters, empty_ult, false); });
      out.add(std::move(q));

      // A ULT of its own (create_thread(own_ult, ...)) from a ULT that is not
      // the main one: child-first, the child runs at once, the parent waits
      // in the deque and is resumed when the child ends.
      result r = row(group, "ito, child-first (from a ULT)", w, p.ito_iters);
      r.note = "create_thread(own_ult): child runs at once; parent resumed when it ends";
      measure(r, p.runs, [&] { return create_join_loop(w, p.ito_iters, empty_ult, true); });
      out.add(std::move(r));

      // The same with a child that raises a floating-point flag its parent
      // has clear: a switch that carried MXCSR's flags per ULT paid for
      // reading MXCSR soon after it changed, at every spawn.
      result fp = row(group, "ito, child-first, child divides", w, p.ito_iters);
      fp.note = "the child's one double division raises \"inexact\"";
      measure(fp, p.runs, [&] { return create_join_loop(w, p.ito_iters, dividing_ult, true); });
      out.add(std::move(fp));

      // parallel_invoke(empty, empty): one branch queued as a record on the
      // caller's stack and taken back as a call (no ULT unless stolen).
      result pi = row(group, "ito, parallel_invoke (2 branches)", w, p.ito_iters);
      pi.note = "second branch queued, taken back and called";
      measure(pi, p.runs, [&] {
        std::int64_t t = 0;
        ito::start_main_thread_with_worker_size(w, [&] {
          ito::join(ito::create_thread(ito::own_ult, [&] {
            std::int64_t t0 = now_ns();
            for (long long i = 0; i < p.ito_iters; ++i) ito::parallel_invoke(empty_ult, empty_ult);
            t = now_ns() - t0;
          }));
        });
        return t;
      });
      out.add(std::move(pi));

      // The main ULT is bound to worker 0 and spawns help-first: the child is
      // queued, and join runs it inline (on the main ULT's stack) unless a
      // worker took it first.
      result h = row(group, "ito, help-first (main ULT)", w, p.ito_iters);
      h.note = "create_thread(own_ult): child queued; join runs it inline if still queued";
      measure(h, p.runs, [&] { return main_ult_loop(w, p.ito_iters, true); });
      out.add(std::move(h));

      result hq = row(group, "ito, create_thread (record, main ULT)", w, p.ito_iters);
      hq.note = "child queued; join takes it back and calls it";
      measure(hq, p.runs, [&] { return main_ult_loop(w, p.ito_iters, false); });
      out.add(std::move(hq));

      // The C API's create and join (pthread_create's path), with and
      // without a TLS block per child (docs/POSIX.md, "TLS and errno").
      result c = row(group, "ito_create+ito_join (C API), from a ULT", w, p.ito_iters);
      c.note = "child-first; the worker's TLS";
      measure(c, p.runs, [&] { return c_api_loop(w, p.ito_iters, false); });
      out.add(std::move(c));
      result ct = row(group, "ito_create+ito_join, own TLS block (ITO_ULT_TLS)", w, p.ito_iters);
      try {
        ct.note = "a cached TLS block renewed for each child, %fs loaded twice";
        measure(ct, p.runs, [&] { return c_api_loop(w, p.ito_iters, true); });
        out.add(std::move(ct));
      } catch (const ito::config_error& e) {
        out.add(not_available("create-join", group, ct.impl, w, e.what()));
      }

      result n = row(group, "NPTL pthread_create+join", 1, p.os_iters);
      n.note = "creator and child pinned to one CPU";
      measure(n, p.runs, [&] { return pthread_loop(p.os_iters, cpu.at(0), cpu.at(0)); });
      out.add(std::move(n));

      result s = row(group, "std::thread+join", 1, p.os_iters);
      s.note = "creator pinned to one CPU (child inherits)";
      measure(s, p.runs, [&] { return std_thread_loop(p.os_iters, cpu.at(0)); });
      out.add(std::move(s));
      continue;
    }

    // Another worker: the main ULT (help-first) pushes the child and spins
    // without yielding, so worker 0 is busy and only a thief can run the child;
    // once the child has started elsewhere, the main ULT joins it. This is the
    // latency of a cross-worker hand-off (push, steal, run, finish, join), not
    // a throughput: one child is in flight at a time.
    {
      result r = row(group, "ito, stolen by another worker", w, p.stolen_iters);
      r.reference = true;
      r.note = "main ULT pushes child, spins until a thief runs it, joins";
      long long elsewhere = 0;
      measure(r, p.runs, [&] {
        std::int64_t t = 0;
        elsewhere = 0;
        ito::start_main_thread_with_worker_size(w, [&] {
          std::atomic<int> started{-1};
          std::int64_t t0 = now_ns();
          for (long long i = 0; i < p.stolen_iters; ++i) {
            started.store(-1, std::memory_order_relaxed);
            auto f = ito::create_thread(
                [&] { started.store(ito::current_worker_index(), std::memory_order_release); });
            int where;
            while ((where = started.load(std::memory_order_acquire)) < 0) cpu_relax();
            elsewhere += where != 0;
            ito::join(std::move(f));
          }
          t = now_ns() - t0;
        });
        return t;
      });
      r.extra.push_back({"ran_elsewhere", static_cast<double>(elsewhere) / p.stolen_iters});
      out.add(std::move(r));
    }
    {
      // The ordinary loop with idle thieves around: mostly the same-worker
      // path, plus whatever the thieves' steals of the parent cost.
      result r = row(group, "ito, child-first with thieves", w, p.ito_iters);
      r.note = "same loop as W=1; idle workers may steal the parent";
      long long moved = 0;
      measure(r, p.runs, [&] {
        std::int64_t t = 0;
        moved = 0;
        ito::start_main_thread_with_worker_size(w, [&] {
          ito::join(ito::create_thread(ito::own_ult, [&] {
            std::int64_t t0 = now_ns();
            for (long long i = 0; i < p.ito_iters; ++i) {
              int before = ito::current_worker_index();
              ito::join(ito::create_thread(ito::own_ult, empty_ult));
              moved += ito::current_worker_index() != before;
            }
            t = now_ns() - t0;
          }));
        });
        return t;
      });
      r.extra.push_back({"parent_migrated", static_cast<double>(moved) / p.ito_iters});
      out.add(std::move(r));
    }
    if (cpu.size() >= 2) {
      result n = row(group, "NPTL pthread_create+join", w, p.os_iters);
      n.note = "creator on one CPU, child pinned to another";
      measure(n, p.runs, [&] { return pthread_loop(p.os_iters, cpu[0], cpu[1]); });
      out.add(std::move(n));
    } else {
      out.add(not_available("create-join", group, "NPTL pthread_create+join", w,
                            "only one CPU allowed"));
    }
    result s = row(group, "std::thread+join", w, p.os_iters);
    s.note = "not pinned: the kernel places it";
    measure(s, p.runs, [&] { return std_thread_loop(p.os_iters, -1); });
    out.add(std::move(s));
  }
}

}  // namespace bench
