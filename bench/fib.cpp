// SPDX-License-Identifier: Apache-2.0
// fib(n) with one thread/task per call: fib(n) = spawn fib(n-1), call fib(n-2),
// join. ito vs sequential recursion vs oneTBB task_group vs OpenMP tasks.
#include <algorithm>
#include <chrono>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "benchmarks.hpp"
#include "ito/parallel.hpp"
#include "ito/thread.hpp"

#if ITO_BENCH_HAVE_TBB
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#endif
#if ITO_BENCH_HAVE_OPENMP
#include <omp.h>
#endif

namespace bench {
namespace {

// Every kernel starts on a cache line: where a function starts moves its
// time by up to a quarter on the 2-core Intel guest (seq_fib: 4.6 ms at a
// line's start, 5.9 ms 16 bytes into one), so an unrelated change that
// shifts the code would otherwise move the ratios (BENCHMARKS.md,
// "create_thread's ULT fallback out of line, fib's kernels on a cache
// line, ...").
#define FIB_KERNEL gnu::aligned(64)

[[FIB_KERNEL]] long ito_fib(int n) {
  if (n < 2) return n;
  auto child = ito::create_thread(ito_fib, n - 1);
  long b = ito_fib(n - 2);
  return ito::join(std::move(child)) + b;
}

// Both calls as parallel_invoke branches: no ULT unless a thief takes one.
[[FIB_KERNEL]] long ito_invoke_fib(int n) {
  if (n < 2) return n;
  long a = 0, b = 0;
  ito::parallel_invoke([&] { a = ito_invoke_fib(n - 1); }, [&] { b = ito_invoke_fib(n - 2); });
  return a + b;
}

[[gnu::noinline, FIB_KERNEL]] long seq_fib(int n) {
  if (n < 2) return n;
  return seq_fib(n - 1) + seq_fib(n - 2);
}

#if ITO_BENCH_HAVE_TBB
[[FIB_KERNEL]] long tbb_fib(int n) {
  if (n < 2) return n;
  long a = 0;
  tbb::task_group g;
  g.run([&] { a = tbb_fib(n - 1); });
  long b = tbb_fib(n - 2);
  g.wait();
  return a + b;
}
#endif

#if ITO_BENCH_HAVE_OPENMP
[[FIB_KERNEL]] long omp_fib(int n) {
  if (n < 2) return n;
  long a = 0;
#pragma omp task shared(a) firstprivate(n) default(none)
  a = omp_fib(n - 1);
  long b = omp_fib(n - 2);
#pragma omp taskwait
  return a + b;
}
#endif

// Spawns made by the recursive fib(n): S(n) = S(n-1) + S(n-2) + 1, S(0) = S(1) = 0,
// that is fib(n+1) - 1.
double spawns(int n) { return static_cast<double>(fib_value(n + 1) - 1); }

void check(long got, int n, const char* impl) {
  if (got != fib_value(n))
    throw std::runtime_error(std::string(impl) + ": fib(" + std::to_string(n) + ") = " +
                             std::to_string(got) + ", expected " + std::to_string(fib_value(n)));
}

// Lets the other systems' idle threads stop spinning before the next row.
void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(50)); }

result row(const fib_params& p, const char* impl, unsigned w) {
  result r;
  r.bench = "fib";
  r.group = "n=" + std::to_string(p.n);
  r.impl = impl;
  r.workers = w;
  r.params = {{"n", std::to_string(p.n)}};
  r.ops = spawns(p.n);
  return r;
}

}  // namespace

void run_fib(const fib_params& p, reporter& out) {
  volatile int vn = p.n;  // not a compile-time constant for anyone
  std::map<unsigned, double> ito_ms;
  std::map<unsigned, double> invoke_ms;
  for (unsigned w : p.workers) {
    progress("fib(%d), %u worker(s)...", p.n, w);
    std::vector<double> startstop;
    // One run of the "ito" row: a fresh runtime, only fib timed.
    const auto ito_once = [&] {
      std::int64_t inner = 0;
      std::int64_t t0 = now_ns();
      long v = ito::start_main_thread_with_worker_size(w, [&] {
        std::int64_t s = now_ns();
        // The main ULT's child is a record that its join runs as a call:
        // fib runs as the main ULT, every spawn below it a record.
        long res = ito::join(ito::create_thread(ito_fib, static_cast<int>(vn)));
        inner = now_ns() - s;
        return res;
      });
      startstop.push_back(static_cast<double>(now_ns() - t0 - inner) / 1e6);
      do_not_optimize(v);
      check(v, p.n, "ito");
      return inner;
    };
    const auto sequential_once = [&] {
      std::int64_t t0 = now_ns();
      long v = seq_fib(vn);
      std::int64_t t = now_ns() - t0;
      do_not_optimize(v);
      check(v, p.n, "sequential");
      return t;
    };
    {
      result r = row(p, "ito", w);
      r.reference = true;
      r.ops += 1;  // the main ULT's create_thread(fib, n)
      measure(r, p.runs, ito_once);
      r.extra.push_back({"runtime_start_stop_ms", median(startstop)});
      ito_ms[w] = r.median_ms;
      if (w != 1 && ito_ms.count(1)) r.extra.push_back({"time_vs_W1", r.median_ms / ito_ms[1]});
      r.note = "each run: fresh runtime, only fib timed";
      out.add(std::move(r));
    }
    {
      result r = row(p, "ito, parallel_invoke", w);
      measure(r, p.runs, [&] {
        std::int64_t inner = 0;
        long v = ito::start_main_thread_with_worker_size(w, [&] {
          std::int64_t s = now_ns();
          long res = ito_invoke_fib(vn);
          inner = now_ns() - s;
          return res;
        });
        do_not_optimize(v);
        check(v, p.n, "ito, parallel_invoke");
        return inner;
      });
      invoke_ms[w] = r.median_ms;
      if (w != 1 && invoke_ms.count(1))
        r.extra.push_back({"time_vs_W1", r.median_ms / invoke_ms[1]});
      r.note = "a branch becomes a ULT only when stolen; from the main ULT";
      out.add(std::move(r));
    }
    {
      result r = row(p, "sequential", w);
      r.note = "one thread, plain recursion";
      measure(r, p.runs, sequential_once);
      // On a host whose speed moves between runs, the ratio of two medians
      // taken seconds apart moves with it: each ito run here is followed at
      // once by a sequential run, and the median of the runs' ratios is kept.
      if (selected("ito") && selected("sequential")) {
        std::vector<double> ratios;
        for (int i = 0; i < p.runs; ++i) {
          const auto ito_ns = static_cast<double>(ito_once());
          ratios.push_back(ito_ns / static_cast<double>(sequential_once()));
        }
        r.extra.push_back({"ito_over_this_paired", median(ratios)});
      }
      out.add(std::move(r));
    }
#if ITO_BENCH_HAVE_TBB
    {
      settle();
      result r = row(p, "oneTBB task_group", w);
      tbb::global_control limit(tbb::global_control::max_allowed_parallelism, w);
      tbb::task_arena arena(static_cast<int>(w));
      measure(r, p.runs, [&] {
        long v = 0;
        std::int64_t t0 = now_ns();
        arena.execute([&] { v = tbb_fib(vn); });
        std::int64_t t = now_ns() - t0;
        do_not_optimize(v);
        check(v, p.n, "oneTBB");
        return t;
      });
      out.add(std::move(r));
    }
#else
    out.add(not_available("fib", "n=" + std::to_string(p.n), "oneTBB task_group", w,
                          "built without oneTBB (libtbb-dev)"));
#endif
#if ITO_BENCH_HAVE_OPENMP
    {
      settle();
      result r = row(p, "OpenMP tasks", w);
      measure(r, p.runs, [&] {
        long v = 0;
        std::int64_t t0 = now_ns();
#pragma omp parallel num_threads(w) shared(v, vn) default(none)
#pragma omp single
        v = omp_fib(vn);
        std::int64_t t = now_ns() - t0;
        do_not_optimize(v);
        check(v, p.n, "OpenMP");
        return t;
      });
      out.add(std::move(r));
    }
#else
    out.add(not_available("fib", "n=" + std::to_string(p.n), "OpenMP tasks", w,
                          "built without OpenMP (-fopenmp)"));
#endif
    settle();
  }
}

}  // namespace bench
