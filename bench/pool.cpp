// SPDX-License-Identifier: Apache-2.0
// ito-bench pool: seed 002's measurement. n jobs run one after another, each on
// a fresh pthread (create + join) vs on an os_pool built for them (the pool's
// creation and destruction included, as in the paper); reports the number of
// uses from which reuse wins (paper: 15 on a PentiumPro; target here: <= 2),
// and the warm pool's hand-off cost.
#include <pthread.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.hpp"
#include "ito/os_pool.hpp"

namespace bench {
namespace {

int empty_job() {
  clobber_memory();
  return 1;
}
void* empty_pthread(void*) {
  clobber_memory();
  return nullptr;
}

// `reps` times: n jobs, each on its own pthread.
std::int64_t pthread_uses(long long n, long long reps) {
  const std::int64_t t0 = now_ns();
  for (long long r = 0; r < reps; ++r)
    for (long long i = 0; i < n; ++i) {
      pthread_t th;
      if (int e = pthread_create(&th, nullptr, empty_pthread, nullptr); e != 0)
        throw std::runtime_error("pthread_create failed: " + std::to_string(e));
      pthread_join(th, nullptr);
    }
  return now_ns() - t0;
}

// `reps` times: a pool created, n jobs submitted and waited for one after
// another (so one thread serves them all), the pool destroyed.
std::int64_t pool_uses(long long n, long long reps, unsigned min_threads) {
  ito::os_pool_options o;
  o.min_threads = min_threads;
  const std::int64_t t0 = now_ns();
  for (long long r = 0; r < reps; ++r) {
    ito::os_pool pool(o);
    for (long long i = 0; i < n; ++i) do_not_optimize(pool.submit(empty_job).get());
  }
  return now_ns() - t0;
}

result row(const std::string& group, const char* impl, long long n, long long reps) {
  result r;
  r.bench = "pool";
  r.group = group;
  r.impl = impl;
  r.workers = 1;
  r.params = {{"uses", std::to_string(n)}, {"reps", std::to_string(reps)}};
  r.ops = static_cast<double>(reps);  // ns/op: one pool lifetime (or n pthreads)
  return r;
}

}  // namespace

struct pool_params {
  std::vector<long long> uses{1, 2, 3, 4, 6, 8, 12, 15, 20};
  long long jobs_per_run = 4000;  // spread over reps of `uses` each
  long long warm_jobs = 100'000;
  int runs = 5;
};

void run_pool(const pool_params& p, reporter& out) {
  long long crossover = -1;
  for (long long n : p.uses) {
    progress("pool: %lld uses...", n);
    const long long reps = std::max(1LL, p.jobs_per_run / n);
    const std::string group = std::to_string(n) + " uses";
    result t = row(group, "NPTL pthread_create+join per job", n, reps);
    measure(t, p.runs, [&] { return pthread_uses(n, reps); });
    result z = row(group, "ito os_pool (min 0), with its creation+destruction", n, reps);
    z.reference = true;
    measure(z, p.runs, [&] { return pool_uses(n, reps, 0); });
    result one = row(group, "ito os_pool (min 1: thread started up front)", n, reps);
    measure(one, p.runs, [&] { return pool_uses(n, reps, 1); });
    const bool wins = z.median_ms < t.median_ms;
    z.extra.push_back({"reuse_wins", wins ? 1 : 0});
    // "From n on": the smallest n after which reuse never loses again.
    if (!wins) crossover = -1;
    else if (crossover < 0) crossover = n;
    out.add(std::move(t));
    out.add(std::move(z));
    out.add(std::move(one));
  }
  {
    progress("pool: warm hand-off...");
    result w = row("warm pool, per job", "ito os_pool submit+get (1 thread reused)", 1, p.warm_jobs);
    w.params = {{"jobs", std::to_string(p.warm_jobs)}};
    w.ops = static_cast<double>(p.warm_jobs);
    ito::os_pool pool;
    pool.submit(empty_job).get();  // its thread exists and sleeps
    measure(w, p.runs, [&] {
      const std::int64_t t0 = now_ns();
      for (long long i = 0; i < p.warm_jobs; ++i) do_not_optimize(pool.submit(empty_job).get());
      return now_ns() - t0;
    });
    w.reference = true;
    out.add(std::move(w));
    const long long os_jobs = std::max(1LL, p.warm_jobs / 20);
    result c = row("warm pool, per job", "NPTL pthread_create+join", 1, os_jobs);
    c.params = {{"jobs", std::to_string(os_jobs)}};
    c.ops = static_cast<double>(os_jobs);
    measure(c, p.runs, [&] { return pthread_uses(os_jobs, 1); });
    out.add(std::move(c));
  }
  result s;
  s.bench = "pool";
  s.group = "crossover";
  s.impl = "ito os_pool (min 0) vs pthread per job";
  s.note = crossover > 0 ? "reuse wins from " + std::to_string(crossover) +
                               " uses on (medians; paper: 15; target: <= 2)"
                         : "reuse never won in the measured range";
  s.extra.push_back({"uses", static_cast<double>(crossover)});
  out.add(std::move(s));
}

// `ito-bench pool [--jobs N] [--warm-jobs N]`, for bench/main.cpp.
void pool_command(args& a, const common_flags& c, reporter& out) {
  pool_params p;
  p.jobs_per_run = a.take_int("--jobs", p.jobs_per_run, 20, 100'000'000);
  p.warm_jobs = a.take_int("--warm-jobs", p.warm_jobs, 20, 1'000'000'000);
  a.finish();
  p.runs = c.runs;
  run_pool(p, out);
  out.print_table("pool: n jobs on fresh pthreads vs on a pool made for them");
}

}  // namespace bench
