// SPDX-License-Identifier: Apache-2.0
// `ito-bench phases`: fork-join phases from the program's main thread after
// its workers went idle. Each phase forks W children that each spin for
// --work-us, joins them, then leaves the workers idle long enough to park
// (--gap-ms, not timed). The time is the sum of the phases: the ideal is
// phases x work x ceil(W / cores). What it shows is how fast parked workers
// come back for a run of children pushed by one thread (the main ULT spawns
// help-first, onto one deque). The ito row also says how long the process's
// threads waited for a CPU (the kernel's run-queue delay): on a shared
// machine a woken worker can wait there longer than a child runs, and the
// phase is then serial whatever the runtime does.
#include <dirent.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "ito/thread.hpp"

#if ITO_BENCH_HAVE_TBB
#include <tbb/global_control.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>
#endif
#if ITO_BENCH_HAVE_OPENMP
#include <omp.h>
#endif

namespace bench {
namespace {

struct phases_params {
  int phases = 20;
  long long work_us = 1000;
  long long gap_ms = 20;
  std::vector<unsigned> workers{2, 4};
  int runs = 5;
};

std::int64_t clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A child's work: spin for `us` of wall time.
void spin_for_us(long long us) {
  const std::int64_t end = clock_ns() + us * 1000;
  while (clock_ns() < end) {
  }
}

result phases_row(const phases_params& p, const std::string& impl, unsigned w) {
  result r;
  r.bench = "phases";
  r.group = "work=" + std::to_string(p.work_us) + "us";
  r.impl = impl;
  r.workers = w;
  r.params = {{"phases", std::to_string(p.phases)}, {"work_us", std::to_string(p.work_us)},
              {"gap_ms", std::to_string(p.gap_ms)}};
  r.reference = impl.rfind("ito", 0) == 0;
  r.ops = p.phases;
  return r;
}

std::int64_t runqueue_wait_ns();

// Runs p.phases phases of `phase()`, idle gaps between them; returns the
// phases' total time. With `waited`, adds what the process's threads waited
// for a CPU during the phases (read outside the timed part).
template <class Idle, class Phase>
std::int64_t run_phases(const phases_params& p, Idle idle, Phase phase, std::int64_t* waited = nullptr) {
  std::int64_t total = 0;
  for (int i = 0; i < p.phases; ++i) {
    idle(p.gap_ms);
    const std::int64_t wait0 = waited ? runqueue_wait_ns() : 0;
    std::int64_t t0 = clock_ns();
    phase();
    total += clock_ns() - t0;
    if (waited) *waited += runqueue_wait_ns() - wait0;
  }
  return total;
}

// Nanoseconds this process's live threads have waited in the kernel's run
// queue (the second field of /proc/self/task/*/schedstat), or -1 where the
// kernel keeps no such count.
std::int64_t runqueue_wait_ns() {
  DIR* tasks = opendir("/proc/self/task");
  if (!tasks) return -1;
  std::int64_t total = 0;
  bool any = false;
  while (dirent* e = readdir(tasks)) {
    if (e->d_name[0] == '.') continue;
    const std::string path = std::string("/proc/self/task/") + e->d_name + "/schedstat";
    if (FILE* f = std::fopen(path.c_str(), "r")) {
      long long run = 0, wait = 0;
      if (std::fscanf(f, "%lld %lld", &run, &wait) == 2) {
        total += wait;
        any = true;
      }
      std::fclose(f);
    }
  }
  closedir(tasks);
  return any ? total : -1;
}

void sleep_ms(long long ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

}  // namespace

void phases_command(args& a, const common_flags& c, reporter& out) {
  phases_params p;
  p.phases = static_cast<int>(a.take_int("--phases", p.phases, 1, 100'000));
  p.work_us = a.take_int("--work-us", p.work_us, 1, 10'000'000);
  p.gap_ms = a.take_int("--gap-ms", p.gap_ms, 0, 10'000);
  a.finish();
  if (!c.workers.empty()) p.workers = c.workers;
  p.runs = c.runs;
  for (unsigned w : p.workers) {
    progress("phases, %u worker(s)...", w);
    if (selected("ito")) {
      result r = phases_row(p, "ito, children of the main ULT", w);
      // Read inside the runtime (the workers' threads end with it), where the
      // kernel keeps the count.
      const bool count_waits = runqueue_wait_ns() >= 0;
      std::int64_t waited = 0;
      ito::start_main_thread_with_worker_size(w, [&] {
        measure(r, p.runs, [&] {
          return run_phases(
              p, [](long long ms) { ito::sleep_for(std::chrono::nanoseconds(ms * 1'000'000)); },
              [&] {
                std::vector<ito::future<void>> children;
                for (unsigned i = 0; i < w; ++i)
                  children.push_back(ito::create_thread(spin_for_us, p.work_us));
                for (auto& f : children) ito::join(f);
              },
              count_waits ? &waited : nullptr);
        });
      });
      const unsigned cpus = allowed_cpus();
      r.note = "ideal " + format_ms(p.work_us / 1000.0 * ((w + cpus - 1) / cpus)) +
               " ms per phase on " + std::to_string(cpus) + " CPUs";
      if (count_waits)
        r.note += "; its threads waited " + format_ms(waited / 1e6 / (p.runs * p.phases)) +
                  " ms per phase for a CPU";
      out.add(std::move(r));
    }
    if (selected("std::thread")) {
      result r = phases_row(p, "std::thread per child", w);
      measure(r, p.runs, [&] {
        return run_phases(p, sleep_ms, [&] {
          std::vector<std::thread> children;
          for (unsigned i = 0; i < w; ++i) children.emplace_back(spin_for_us, p.work_us);
          for (auto& t : children) t.join();
        });
      });
      out.add(std::move(r));
    }
#if ITO_BENCH_HAVE_TBB
    if (selected("oneTBB")) {
      result r = phases_row(p, "oneTBB task_group", w);
      tbb::global_control limit(tbb::global_control::max_allowed_parallelism, w);
      tbb::task_arena arena(static_cast<int>(w));
      measure(r, p.runs, [&] {
        return run_phases(p, sleep_ms, [&] {
          arena.execute([&] {
            tbb::task_group g;
            for (unsigned i = 0; i < w; ++i) g.run([&] { spin_for_us(p.work_us); });
            g.wait();
          });
        });
      });
      out.add(std::move(r));
    }
#else
    out.add(not_available("phases", "work=" + std::to_string(p.work_us) + "us", "oneTBB task_group",
                          w, "built without oneTBB (libtbb-dev)"));
#endif
#if ITO_BENCH_HAVE_OPENMP
    if (selected("OpenMP")) {
      result r = phases_row(p, "OpenMP parallel for", w);
      measure(r, p.runs, [&] {
        return run_phases(p, sleep_ms, [&] {
#pragma omp parallel for num_threads(w) schedule(static, 1)
          for (unsigned i = 0; i < w; ++i) spin_for_us(p.work_us);
        });
      });
      out.add(std::move(r));
    }
#else
    out.add(not_available("phases", "work=" + std::to_string(p.work_us) + "us", "OpenMP parallel for",
                          w, "built without OpenMP (-fopenmp)"));
#endif
  }
  out.print_table("phases: W children forked from the main thread after the workers went idle "
                  "(ns/op = per phase)");
}

}  // namespace bench
