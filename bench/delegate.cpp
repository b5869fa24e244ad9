// SPDX-License-Identifier: Apache-2.0
// ito-bench delegate: seed 001's system-call delegation. The round trip of one
// delegated call from a ULT (both modes) vs a pool hand-off from a plain
// thread and std::async; then 1,000 ULTs on 2 workers delegating at once:
// empty jobs (hand-off throughput) and 1 ms blocking jobs (overlap: mode 2
// keeps the workers running, mode 1 stalls them), vs a thread per call.
#include <algorithm>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "ito/delegate.hpp"
#include "ito/thread.hpp"

namespace bench {
namespace {

int empty_job() {
  clobber_memory();
  return 1;
}

result row(const char* group, const std::string& impl, unsigned w, long long ops) {
  result r;
  r.bench = "delegate";
  r.group = group;
  r.impl = impl;
  r.workers = w;
  r.params = {{"calls", std::to_string(ops)}};
  r.ops = static_cast<double>(ops);
  return r;
}

const char* mode_name(ito::delegate_mode m) {
  return m == ito::delegate_mode::keep_running ? "ito delegate, mode 2 (keep running)"
                                               : "ito delegate, mode 1 (block worker)";
}

// `ults` ULTs on `workers` workers, each delegating `each` calls of job().
template <class Job>
std::int64_t ults_delegating(unsigned workers, long long ults, long long each,
                             ito::delegate_mode mode, Job job) {
  std::int64_t t = 0;
  ito::start_main_thread_with_worker_size(workers, [&] {
    ito::delegate(mode, job);  // the pool has a thread before the clock starts
    const std::int64_t t0 = now_ns();
    std::vector<ito::future<void>> fs;
    fs.reserve(static_cast<std::size_t>(ults));
    for (long long u = 0; u < ults; ++u)
      fs.push_back(ito::create_thread(ito::own_ult, [&] {
        for (long long i = 0; i < each; ++i) do_not_optimize(ito::delegate(mode, job));
      }));
    for (auto& f : fs) ito::join(std::move(f));
    t = now_ns() - t0;
  });
  return t;
}

// The same calls, each on a thread of its own (no pool, no ULTs).
template <class Job>
std::int64_t thread_per_call(long long threads, Job job) {
  const std::int64_t t0 = now_ns();
  std::vector<std::thread> ts;
  ts.reserve(static_cast<std::size_t>(threads));
  for (long long i = 0; i < threads; ++i) ts.emplace_back([&] { do_not_optimize(job()); });
  for (auto& t : ts) t.join();
  return now_ns() - t0;
}

}  // namespace

struct delegate_params {
  long long latency_calls = 20'000;
  long long ults = 1'000;
  long long calls_per_ult = 20;
  int runs = 5;
  std::vector<unsigned> workers{2};
};

void run_delegate(const delegate_params& p, reporter& out) {
  const ito::delegate_mode modes[] = {ito::delegate_mode::keep_running,
                                      ito::delegate_mode::block_worker};
  for (unsigned w : p.workers) {
    progress("delegate: round trip, %u workers...", w);
    const char* g = "round trip, one caller";
    for (auto m : modes) {
      result r = row(g, mode_name(m), w, p.latency_calls);
      r.reference = m == ito::delegate_mode::keep_running;
      measure(r, p.runs, [&] { return ults_delegating(w, 1, p.latency_calls, m, empty_job); });
      out.add(std::move(r));
    }
    {
      result r = row(g, "os_pool submit+get from a plain thread", w, p.latency_calls);
      ito::os_pool pool;
      pool.submit(empty_job).get();
      measure(r, p.runs, [&] {
        const std::int64_t t0 = now_ns();
        for (long long i = 0; i < p.latency_calls; ++i) do_not_optimize(pool.submit(empty_job).get());
        return now_ns() - t0;
      });
      out.add(std::move(r));
    }
    {
      const long long n = std::max(1LL, p.latency_calls / 10);
      result r = row(g, "std::async(launch::async)+get from a plain thread", w, n);
      measure(r, p.runs, [&] {
        const std::int64_t t0 = now_ns();
        for (long long i = 0; i < n; ++i)
          do_not_optimize(std::async(std::launch::async, empty_job).get());
        return now_ns() - t0;
      });
      out.add(std::move(r));
    }

    progress("delegate: %lld ULTs at once, empty jobs...", p.ults);
    const long long total = p.ults * p.calls_per_ult;
    const std::string many = std::to_string(p.ults) + " ULTs x " +
                             std::to_string(p.calls_per_ult) + " empty calls";
    for (auto m : modes) {
      result r = row("", mode_name(m), w, total);
      r.group = many;
      r.reference = m == ito::delegate_mode::keep_running;
      measure(r, p.runs,
              [&] { return ults_delegating(w, p.ults, p.calls_per_ult, m, empty_job); });
      r.extra.push_back({"calls_per_s", total / (r.median_ms / 1e3)});
      out.add(std::move(r));
    }

    progress("delegate: %lld ULTs at once, 1 ms blocking calls...", p.ults);
    const std::string blocking = std::to_string(p.ults) + " ULTs x 1 call sleeping 1 ms";
    auto nap = [] {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return 1;
    };
    for (auto m : modes) {
      result r = row("", mode_name(m), w, p.ults);
      r.group = blocking;
      r.reference = m == ito::delegate_mode::keep_running;
      r.note = "pool max " + std::to_string(*ito::delegation_pool().settings().max_threads) +
               " threads";
      measure(r, p.runs, [&] { return ults_delegating(w, p.ults, 1, m, nap); });
      out.add(std::move(r));
    }
    {
      result r = row("", "a std::thread per call (no ULTs, no pool)", w, p.ults);
      r.group = blocking;
      measure(r, p.runs, [&] { return thread_per_call(p.ults, nap); });
      out.add(std::move(r));
    }
  }
}

// `ito-bench delegate [--calls N] [--ults N] [--calls-per-ult N]`, for bench/main.cpp.
void delegate_command(args& a, const common_flags& c, reporter& out) {
  delegate_params p;
  p.latency_calls = a.take_int("--calls", p.latency_calls, 1, 1'000'000'000);
  p.ults = a.take_int("--ults", p.ults, 1, 1'000'000);
  p.calls_per_ult = a.take_int("--calls-per-ult", p.calls_per_ult, 1, 1'000'000);
  a.finish();
  p.runs = c.runs;
  if (!c.workers.empty()) p.workers = c.workers;
  run_delegate(p, out);
  out.print_table("delegate: system-call delegation (seed 001)");
}

}  // namespace bench
