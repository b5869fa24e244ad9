// SPDX-License-Identifier: Apache-2.0
// `ito-bench posix`: seed 001's table 3 (MULiTh vs Linux NPTL) for ito's POSIX
// layer and NPTL in one process: attr_init, attr_setdetachstate, create/join
// on one core and across cores, and mutex lock/unlock x10,000 by 1, 2 and 4
// threads on one shared mutex. Medians of --runs runs; ratio = NPTL / ito.
#define ITO_PTHREAD_NO_RENAME 1
#include "ito/pthread.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "harness.hpp"
#include "ito/runtime.hpp"

namespace bench {
namespace {

using clock_fn = std::function<std::int64_t()>;  // one run: its nanoseconds

double median_ns(int runs, const clock_fn& once) {
  std::vector<double> v;
  for (int r = 0; r < runs; ++r) v.push_back(static_cast<double>(once()));
  return median(v);
}

void* empty_thread(void*) { return nullptr; }

// --- NPTL -------------------------------------------------------------------

struct pinned_args {
  long iters;
  int child_cpu;  // -1: the creator's own CPU
  std::int64_t ns;
};

int nth_allowed_cpu(unsigned n) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
  for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set) && static_cast<unsigned>(seen++) == n) return cpu;
  return -1;
}

// Runs on a thread pinned to the first allowed CPU; children go to child_cpu.
void* nptl_create_join_loop(void* p) {
  auto* a = static_cast<pinned_args*>(p);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  if (a->child_cpu >= 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(a->child_cpu, &one);
    pthread_attr_setaffinity_np(&attr, sizeof one, &one);
  }
  const std::int64_t t0 = now_ns();
  for (long i = 0; i < a->iters; ++i) {
    pthread_t t;
    pthread_create(&t, &attr, empty_thread, nullptr);
    pthread_join(t, nullptr);
  }
  a->ns = now_ns() - t0;
  pthread_attr_destroy(&attr);
  return nullptr;
}

std::int64_t nptl_create_join(long iters, bool other_core) {
  const int here = nth_allowed_cpu(0), there = nth_allowed_cpu(1);
  pinned_args a{iters, other_core ? there : here, 0};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(here, &one);
  pthread_attr_setaffinity_np(&attr, sizeof one, &one);
  pthread_t t;
  pthread_create(&t, &attr, nptl_create_join_loop, &a);
  pthread_join(t, nullptr);
  pthread_attr_destroy(&attr);
  return a.ns;
}

struct mutex_args {
  pthread_mutex_t* m;
  long iters;
  bool ito;
};
void* lock_loop(void* p) {
  auto* a = static_cast<mutex_args*>(p);
  for (long i = 0; i < a->iters; ++i) {
    if (a->ito) {
      ito_pthread_mutex_lock(a->m);
      ito_pthread_mutex_unlock(a->m);
    } else {
      pthread_mutex_lock(a->m);
      pthread_mutex_unlock(a->m);
    }
  }
  return nullptr;
}

// threads x iters lock/unlock pairs on one mutex; the nanoseconds of all.
std::int64_t mutex_run(unsigned threads, long iters, bool ito) {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  mutex_args a{&m, iters, ito};
  std::vector<pthread_t> t(threads);
  const std::int64_t t0 = now_ns();
  if (threads == 1) {
    lock_loop(&a);
  } else {
    for (auto& th : t) (ito ? ito_pthread_create : pthread_create)(&th, nullptr, lock_loop, &a);
    for (auto& th : t) (ito ? ito_pthread_join : pthread_join)(th, nullptr);
  }
  return now_ns() - t0;
}

// --- ito ----------------------------------------------------------------------

template <class F>
auto with_runtime(unsigned workers, F&& f) {
  ito::options o;
  o.workers = workers;
  ito::runtime rt(o);
  return f();
}

struct row {
  std::string what;
  double ito_us, nptl_us;
};

void print(const std::vector<row>& rows, int runs) {
  std::printf("posix (seed 001, table 3): medians of %d runs, microseconds per operation\n", runs);
  std::printf("%-44s %12s %12s %10s\n", "row", "ito", "NPTL", "NPTL/ito");
  for (const row& r : rows)
    std::printf("%-44s %12.4f %12.4f %9.1fx\n", r.what.c_str(), r.ito_us, r.nptl_us,
                r.nptl_us / r.ito_us);
}

}  // namespace

int run_posix(int argc, char** argv) {
  args a(argc, argv, 2);
  const common_flags c = a.take_common(5);
  const long attr_iters = a.take_int("--attr-iters", 10'000'000, 1, 1'000'000'000);
  const long ito_iters = a.take_int("--iters", 1'000'000, 1, 1'000'000'000);
  const long os_iters = a.take_int("--os-iters", 20'000, 1, 10'000'000);
  const long lock_iters = a.take_int("--lock-iters", 10'000, 1, 1'000'000'000);
  a.finish();
  const int runs = c.runs;
  std::vector<row> rows;
  auto per_op_us = [](double ns, double ops) { return ns / ops / 1000.0; };

  // attr_init / attr_setdetachstate: no runtime needed.
  {
    pthread_attr_t attr;
    double i = median_ns(runs, [&] {
      const std::int64_t t0 = now_ns();
      for (long k = 0; k < attr_iters; ++k) {
        ito_pthread_attr_init(&attr);
        do_not_optimize(attr);
      }
      return now_ns() - t0;
    });
    double n = median_ns(runs, [&] {
      const std::int64_t t0 = now_ns();
      for (long k = 0; k < attr_iters; ++k) {
        pthread_attr_init(&attr);
        do_not_optimize(attr);
      }
      return now_ns() - t0;
    });
    rows.push_back({"pthread_attr_init", per_op_us(i, attr_iters), per_op_us(n, attr_iters)});
    i = median_ns(runs, [&] {
      const std::int64_t t0 = now_ns();
      for (long k = 0; k < attr_iters; ++k) {
        ito_pthread_attr_setdetachstate(&attr, (k & 1) ? PTHREAD_CREATE_DETACHED
                                                       : PTHREAD_CREATE_JOINABLE);
        do_not_optimize(attr);
      }
      return now_ns() - t0;
    });
    n = median_ns(runs, [&] {
      const std::int64_t t0 = now_ns();
      for (long k = 0; k < attr_iters; ++k) {
        pthread_attr_setdetachstate(&attr, (k & 1) ? PTHREAD_CREATE_DETACHED
                                                   : PTHREAD_CREATE_JOINABLE);
        do_not_optimize(attr);
      }
      return now_ns() - t0;
    });
    rows.push_back(
        {"pthread_attr_setdetachstate", per_op_us(i, attr_iters), per_op_us(n, attr_iters)});
  }

  // create/join. Same core: ito with one worker; NPTL with parent and child
  // pinned to one CPU. Other core: ito with two workers (the child runs at
  // once where it was created, the parent is stolen by the other worker);
  // NPTL with the child pinned to a second CPU.
  auto ito_create_join = [&](unsigned workers) {
    return with_runtime(workers, [&] {
      return median_ns(runs, [&] {
        const std::int64_t t0 = now_ns();
        for (long k = 0; k < ito_iters; ++k) {
          pthread_t t;
          ito_pthread_create(&t, nullptr, empty_thread, nullptr);
          ito_pthread_join(t, nullptr);
        }
        return now_ns() - t0;
      });
    });
  };
  rows.push_back({"pthread_create/join (same core)", per_op_us(ito_create_join(1), ito_iters),
                  per_op_us(median_ns(runs, [&] { return nptl_create_join(os_iters, false); }),
                            os_iters)});
  if (allowed_cpus() >= 2) {
    rows.push_back(
        {"pthread_create/join (other core)", per_op_us(ito_create_join(2), ito_iters),
         per_op_us(median_ns(runs, [&] { return nptl_create_join(os_iters, true); }), os_iters)});
  }

  // mutex lock/unlock x lock_iters per thread, by 1, 2, 4 threads (ito: that
  // many workers, one ULT each); microseconds for the whole run, as the paper.
  for (unsigned w : c.workers.empty() ? std::vector<unsigned>{1, 2, 4} : c.workers) {
    const double i = with_runtime(w, [&] {
      return median_ns(runs, [&] { return mutex_run(w, lock_iters, true); });
    });
    const double n = median_ns(runs, [&] { return mutex_run(w, lock_iters, false); });
    rows.push_back({"mutex lock/unlock x" + std::to_string(lock_iters) + ", " + std::to_string(w) +
                        " thread(s) [us per run]",
                    i / 1000.0, n / 1000.0});
  }
  print(rows, runs);
  return 0;
}

}  // namespace bench
