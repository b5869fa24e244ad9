// SPDX-License-Identifier: Apache-2.0
// Many live, blocked threads: 1e6 ULTs each waiting on one gate vs 1e4 NPTL
// threads waiting on a pthread condition variable. Reports the time to create them all
// (each has run up to its wait), the time to release them all (open the gate,
// join every one), and the memory each one holds.
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "benchmarks.hpp"
#include "ito/sync.hpp"
#include "ito/thread.hpp"

namespace bench {
namespace {

// Blocked for real: suspended on a condition variable, off every run queue.
struct gate {
  ito::mutex m;
  ito::condition_variable cv;
  bool open = false;
  void wait() {
    std::unique_lock<ito::mutex> lock(m);
    while (!open) cv.wait(lock);
  }
  void release() {
    {
      std::lock_guard<ito::mutex> lock(m);
      open = true;
    }
    cv.notify_all();
  }
  static constexpr const char* how = "ito::condition_variable wait";
};

result row(const char* group, const char* impl, unsigned w, long long n) {
  result r;
  r.bench = "blocked";
  r.group = group;
  r.impl = impl;
  r.workers = w;
  r.params = {{"threads", std::to_string(n)}};
  r.ops = static_cast<double>(n);
  return r;
}

const char* const create_fresh = "create N, fresh stacks (each runs to its wait)";
const char* const create_again = "create N again, stacks recycled (2nd wave)";
const char* const release_all = "release N (wake all, join all)";

// Per run: the first wave on fresh memory, then a second wave of N in the same
// process (ito: same runtime), which can reuse the first wave's stacks.
struct run_times {
  std::vector<std::int64_t> create, create_again, release;
  std::vector<double> kb_each;
};

void add_rows(reporter& out, const char* impl, unsigned w, long long n, run_times& t,
              long peak_kb, const std::string& note) {
  const bool is_ito = std::strncmp(impl, "ito", 3) == 0;
  auto add = [&](const char* group, const std::vector<std::int64_t>& ns, bool first) {
    result r = row(group, impl, w, n);
    r.reference = is_ito;
    summarize(r, ns);
    r.peak_rss_kb = peak_kb;
    if (first) {
      r.note = note;
      r.extra.push_back({"rss_kb_per_thread", median(t.kb_each)});
    }
    out.add(std::move(r));
  };
  add(create_fresh, t.create, true);
  add(create_again, t.create_again, false);
  add(release_all, t.release, false);
}

// The NPTL side waits on a pthread condition variable (as the ULTs do): unlike
// a barrier, it can still be opened when pthread_create fails part way.
struct os_shared {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  bool open = false;
  std::atomic<long long> arrived{0};
};

void* os_waiter(void* p) {
  auto* s = static_cast<os_shared*>(p);
  pthread_mutex_lock(&s->m);
  s->arrived.fetch_add(1, std::memory_order_relaxed);
  while (!s->open) pthread_cond_wait(&s->cv, &s->m);
  pthread_mutex_unlock(&s->m);
  return nullptr;
}

}  // namespace

void run_blocked(const blocked_params& p, reporter& out) {
  for (unsigned w : p.workers) {
    if (!selected("ito")) break;
    progress("blocked, %lld ULTs, %u worker(s)...", p.ults, w);
    run_times t;
    reset_peak_rss();
    for (int run = 0; run < p.runs; ++run) {
      ito::start_main_thread_with_worker_size(w, [&] {
        // An ordinary ULT creates them, child-first: each child runs at once
        // up to its wait, then the creator continues.
        ito::join(ito::create_thread(ito::own_ult, [&] {
          std::vector<ito::future<void>> children;
          children.reserve(static_cast<std::size_t>(p.ults));
          for (int wave = 0; wave < 2; ++wave) {
            gate g;
            long before = current_rss_kb();
            std::int64_t t0 = now_ns();
            for (long long i = 0; i < p.ults; ++i)
              children.push_back(ito::create_thread(ito::own_ult, [&g] { g.wait(); }));
            std::int64_t t1 = now_ns();
            long after = current_rss_kb();
            g.release();
            for (auto& c : children) ito::join(c);
            std::int64_t t2 = now_ns();
            children.clear();
            if (wave == 0) {
              t.create.push_back(t1 - t0);
              t.release.push_back(t2 - t1);
              t.kb_each.push_back(static_cast<double>(after - before) /
                                  static_cast<double>(p.ults));
            } else {
              t.create_again.push_back(t1 - t0);
            }
          }
        }));
      });
    }
    add_rows(out, "ito", w, p.ults, t, peak_rss_kb(),
             std::string(gate::how) + "; default stack size");
  }

  {
    // Calibration: what one first touch of a fresh page costs here. Every new
    // ULT stack and every new thread stack pays at least one.
    result r = row(create_fresh, "calibration: 1st touch of a page", 1, 10'000);
    r.note = "one minor page fault per op (mmap'd, 68 KiB apart)";
    r.params = {{"pages", "10000"}};
    measure(r, p.runs, [&] {
      const std::size_t n = 10'000, stride = 68 * 1024;
      void* mem = mmap(nullptr, n * stride, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (mem == MAP_FAILED) throw std::runtime_error("mmap failed");
      auto* base = static_cast<volatile char*>(mem);
      std::int64_t t0 = now_ns();
      for (std::size_t i = 0; i < n; ++i) base[i * stride + stride - 512] = 1;
      std::int64_t t = now_ns() - t0;
      munmap(mem, n * stride);
      return t;
    });
    out.add(std::move(r));
  }

  if (!selected("NPTL pthreads")) return;
  progress("blocked, %lld NPTL threads...", p.os_threads);
  run_times t;
  reset_peak_rss();
  std::string failure;
  for (int run = 0; run < p.runs && failure.empty(); ++run) {
    for (int wave = 0; wave < 2 && failure.empty(); ++wave) {
      os_shared s;
      const auto n = static_cast<std::size_t>(p.os_threads);
      std::vector<pthread_t> threads(n);
      long before = current_rss_kb();
      std::int64_t t0 = now_ns();
      std::size_t made = 0;
      for (; made < n; ++made) {
        if (int e = pthread_create(&threads[made], nullptr, os_waiter, &s); e != 0) {
          failure = "pthread_create failed after " + std::to_string(made) + " threads: " +
                    std::strerror(e);
          break;
        }
      }
      while (s.arrived.load(std::memory_order_relaxed) < static_cast<long long>(made))
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      std::int64_t t1 = now_ns();
      long after = current_rss_kb();
      pthread_mutex_lock(&s.m);
      s.open = true;
      pthread_cond_broadcast(&s.cv);
      pthread_mutex_unlock(&s.m);
      for (std::size_t i = 0; i < made; ++i) pthread_join(threads[i], nullptr);
      std::int64_t t2 = now_ns();
      if (wave == 0) {
        t.create.push_back(t1 - t0);
        t.release.push_back(t2 - t1);
        t.kb_each.push_back(static_cast<double>(after - before) / static_cast<double>(n));
      } else {
        t.create_again.push_back(t1 - t0);
      }
    }
  }
  if (!failure.empty()) {
    out.add(not_available("blocked", create_fresh, "NPTL pthreads", 1,
                          failure + " (try a smaller --os-threads)"));
    return;
  }
  add_rows(out, "NPTL pthreads", 1, p.os_threads, t, peak_rss_kb(),
           "pthread_cond_wait; default 8 MiB stacks; kernel memory not in RSS");
}

}  // namespace bench
