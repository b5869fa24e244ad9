// SPDX-License-Identifier: Apache-2.0
// Mutex lock/unlock pairs: uncontended (one thread, 1e7 pairs) and contended
// (T threads, 1e6 pairs each, on one counter). ito::mutex vs pthread_mutex.
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "benchmarks.hpp"
#include "ito/sync.hpp"
#include "ito/thread.hpp"

namespace bench {
namespace {

result row(const char* group, const char* impl, unsigned w, long long per_thread,
           unsigned threads) {
  result r;
  r.bench = "mutex";
  r.group = group;
  r.impl = impl;
  r.workers = w;
  r.params = {{"pairs_per_thread", std::to_string(per_thread)},
              {"threads", std::to_string(threads)}};
  r.ops = static_cast<double>(per_thread) * threads;
  return r;
}

void check(long long got, long long want, const char* impl) {
  if (got != want)
    throw std::runtime_error(std::string(impl) + ": counter is " + std::to_string(got) +
                             ", expected " + std::to_string(want) + " (mutual exclusion broken)");
}

// The critical section: a counter no compiler may keep in a register. Then
// `work` iterations of an empty loop outside the lock, in which another
// thread may take it.
template <class Lock, class Unlock>
void pairs(long long n, long long& counter, Lock&& lock, Unlock&& unlock, long long work = 0) {
  for (long long i = 0; i < n; ++i) {
    lock();
    ++counter;
    clobber_memory();
    unlock();
    for (long long j = 0; j < work; ++j) clobber_memory();
  }
}

}  // namespace

void run_mutex(const mutex_params& p, reporter& out) {
  const char* unc = "uncontended, 1 thread";
  progress("mutex, uncontended...");
  {
    result r = row(unc, "ito::mutex", 1, p.uncontended, 1);
    r.reference = true;
    r.note = "lock()+unlock() in the main ULT";
    measure(r, p.runs, [&] {
      std::int64_t t = 0;
      ito::start_main_thread_with_worker_size(1, [&] {
        ito::mutex m;
        long long counter = 0;
        std::int64_t t0 = now_ns();
        pairs(p.uncontended, counter, [&] { m.lock(); }, [&] { m.unlock(); });
        t = now_ns() - t0;
        check(counter, p.uncontended, "ito::mutex");
      });
      return t;
    });
    out.add(std::move(r));
  }
  {
    // On a thread of its own: glibc skips the atomic instructions while a
    // process has only ever had one thread (__libc_single_threaded), which
    // would make this ~3x faster than in any program that has threads.
    result r = row(unc, "pthread_mutex", 1, p.uncontended, 1);
    r.note = "normal mutex, on a second OS thread";
    measure(r, p.runs, [&] {
      std::int64_t t = 0;
      std::thread([&] {
        pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
        long long counter = 0;
        std::int64_t t0 = now_ns();
        pairs(p.uncontended, counter, [&] { pthread_mutex_lock(&m); },
              [&] { pthread_mutex_unlock(&m); });
        t = now_ns() - t0;
        check(counter, p.uncontended, "pthread_mutex");
      }).join();
      return t;
    });
    out.add(std::move(r));
  }

  for (unsigned w : p.workers) {
    progress("mutex, contended, %u thread(s)...", w);
    std::string group = "contended, " + std::to_string(w) + " thread(s)";
    if (p.work_between > 0) group += ", work " + std::to_string(p.work_between);
    {
      // One ULT per worker. The main ULT spawns them help-first and joins
      // (parking itself), so worker 0 is free too; each ULT spins without
      // yielding until all W have started, which holds its worker and makes
      // the others take the rest. The clock starts when the last one arrives.
      result r = row(group.c_str(), "ito::mutex", w, p.contended, w);
      r.reference = true;
      r.note = "W workers, one ULT on each, one counter";
      std::vector<double> spread;
      measure(r, p.runs, [&] {
        std::int64_t t = 0;
        ito::start_main_thread_with_worker_size(w, [&] {
          ito::mutex m;
          long long counter = 0;
          std::atomic<unsigned> ready{0};
          std::atomic<std::int64_t> t0{0};
          std::vector<int> where(w, -1);
          std::vector<ito::future<void>> ults;
          for (unsigned i = 0; i < w; ++i)
            ults.push_back(ito::create_thread(ito::own_ult, [&, i] {
              where[i] = ito::current_worker_index();
              if (ready.fetch_add(1) + 1 == w) t0.store(now_ns());
              while (ready.load(std::memory_order_acquire) < w) cpu_relax();
              pairs(p.contended, counter, [&] { m.lock(); }, [&] { m.unlock(); },
                    p.work_between);
            }));
          for (auto& f : ults) ito::join(f);
          t = now_ns() - t0.load();
          check(counter, p.contended * w, "ito::mutex");
          spread.push_back(static_cast<double>(std::set<int>(where.begin(), where.end()).size()));
        });
        return t;
      });
      r.extra.push_back({"workers_used_median", median(spread)});
      out.add(std::move(r));
    }
    {
      result r = row(group.c_str(), "pthread_mutex", w, p.contended, w);
      r.note = "W OS threads, one counter, not pinned";
      measure(r, p.runs, [&] {
        pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
        long long counter = 0;
        std::barrier<> start(static_cast<std::ptrdiff_t>(w) + 1);
        std::vector<std::thread> threads;
        for (unsigned i = 0; i < w; ++i)
          threads.emplace_back([&] {
            start.arrive_and_wait();
            pairs(p.contended, counter, [&] { pthread_mutex_lock(&m); },
                  [&] { pthread_mutex_unlock(&m); }, p.work_between);
          });
        std::int64_t t0 = now_ns();
        start.arrive_and_wait();
        for (auto& th : threads) th.join();
        std::int64_t t = now_ns() - t0;
        check(counter, p.contended * w, "pthread_mutex");
        return t;
      });
      out.add(std::move(r));
    }
  }
}

}  // namespace bench
