// SPDX-License-Identifier: Apache-2.0
// `ito-bench wake`: seed 004's table 1, the cost of waking n waiters whose
// requests complete one at a time. A shared wait queue wakes every waiter on
// each completion and each checks its own request (n^2 switches); a direct
// wake-up reaches only the waiter whose request completed (O(n)).
//
// Protocol (every mode): n waiters are all waiting (not timed); then n
// completions are delivered one at a time, the next only once the waiters the
// previous one woke have run (settled); the time is from the first delivery
// to the last waiter's wake-up. Counted: wake-ups (a waiter resumed) and
// switches (wake-ups plus re-waits, i.e. a waiter resumed or gave up the CPU;
// for flow nodes, node activations).
//   ito flow direct (b): an exclusive interrupt node (port 0: completions,
//     port 1: the previous receiver's acknowledgement) continues receive node
//     k directly; receive node k acknowledges. Zero-wait: nothing waits.
//   ito ULTs on flow futures (b'): the same chain, and ULT k waits on receive
//     node k's future (a direct wake-up of one ULT per completion); timed
//     until every ULT has woken (each continues a node the timer waits on).
//   ito condition_variable shared (a): n ULTs on one ito::condition_variable,
//     notify_all per completion.
//   pthread shared / direct (c): the same with OS threads: one condvar and a
//     broadcast, or one condvar per thread and a signal.
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.hpp"
#include "ito/flow.hpp"
#include "ito/sync.hpp"
#include "ito/thread.hpp"

namespace bench {
namespace {

namespace flow = ito::flow;

struct sample {
  std::int64_t ns = 0;
  long wakeups = 0;
  long switches = 0;
};

// --- ito::flow -------------------------------------------------------------

// The chain of (b) and (b'); waiting ULTs when `ult_waiters`.
sample ito_flow_once(unsigned n, bool ult_waiters) {
  flow::graph g;
  std::atomic<long> receives{0}, interrupts{0}, ult_wakeups{0};
  std::vector<flow::node*> receive(n);
  auto& irq = g.add(
      "interrupt",
      [&](flow::context& c) {
        interrupts.fetch_add(1, std::memory_order_relaxed);
        c.continue_to(*receive[c.value(0)]);
      },
      {.counter = 2, .exclusive = true, .queue_capacity = 2 * n});
  for (unsigned k = 0; k < n; ++k)
    receive[k] = &g.add(
        [&](flow::context& c) {
          receives.fetch_add(1, std::memory_order_relaxed);
          c.continue_to(irq, 0, 1);  // acknowledged: the next completion may go
        },
        {.counter = 1});
  // (b'): each woken ULT reports to `all_woken`, which the timing ULT waits
  // for (joining them in order would time the joins, not the wake-ups).
  auto& all_woken = g.add([] {}, {.counter = static_cast<int>(n)});
  flow::completion all_woken_done = all_woken.completion();
  g.seal();
  flow::continue_to(irq, 0, 1);  // the first completion needs no acknowledgement
  g.wait();
  std::vector<ito::future<void>> waiters;
  std::atomic<unsigned> arrived{0};
  if (ult_waiters) {
    for (unsigned k = 0; k < n; ++k) {
      flow::completion f = receive[k]->completion();
      waiters.push_back(ito::create_thread(ito::own_ult, [f, &ult_wakeups, &all_woken, &arrived] {
        arrived.fetch_add(1, std::memory_order_relaxed);
        f.wait();
        ult_wakeups.fetch_add(1, std::memory_order_relaxed);
        flow::continue_to(all_woken);
      }));
    }
    // The main ULT spawns help-first: let every waiter reach its wait.
    while (arrived.load(std::memory_order_relaxed) < n) ito::yield();
  }
  const std::int64_t t0 = now_ns();
  for (unsigned k = 0; k < n; ++k) flow::continue_to(irq, k, 0);
  if (ult_waiters) all_woken_done.wait();
  else g.wait();
  const std::int64_t t1 = now_ns();
  for (auto& w : waiters) ito::join(w);
  g.wait();
  const long activations = receives.load() + interrupts.load();
  if (receives.load() != static_cast<long>(n)) throw std::runtime_error("wake: lost a completion");
  if (ult_waiters) return {t1 - t0, ult_wakeups.load(), activations + ult_wakeups.load()};
  return {t1 - t0, receives.load(), activations};
}

// --- ito::condition_variable, one shared wait queue ------------------------

sample ito_shared_once(unsigned n) {
  struct shared {
    ito::mutex m;
    ito::condition_variable cv, settled;
    std::vector<char> done;
    unsigned waiting = 0;
    long checks = 0, expected = 0, wakeups = 0, rewaits = 0;
  } s;
  s.done.assign(n, 0);
  std::vector<ito::future<void>> waiters;
  for (unsigned i = 0; i < n; ++i)
    waiters.push_back(ito::create_thread(ito::own_ult, [&s, i, n] {
      std::unique_lock lock(s.m);
      if (++s.waiting == n) s.settled.notify_one();
      while (!s.done[i]) {
        s.cv.wait(lock);
        ++s.wakeups;
        ++s.checks;
        if (!s.done[i]) ++s.rewaits;
        if (s.checks >= s.expected) s.settled.notify_one();
      }
    }));
  {
    std::unique_lock lock(s.m);
    while (s.waiting < n) s.settled.wait(lock);
  }
  const std::int64_t t0 = now_ns();
  for (unsigned k = 0; k < n; ++k) {
    std::unique_lock lock(s.m);
    s.done[k] = 1;
    s.expected += n - k;  // every waiter still waiting wakes and checks
    s.cv.notify_all();
    while (s.checks < s.expected) s.settled.wait(lock);
  }
  const std::int64_t t1 = now_ns();
  for (auto& w : waiters) ito::join(w);
  return {t1 - t0, s.wakeups, s.wakeups + s.rewaits};
}

// --- pthreads ----------------------------------------------------------------

pthread_attr_t small_stack_attr() {
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, 64 * 1024);
  return a;
}

void start_threads(std::vector<pthread_t>& threads, void* (*fn)(void*), std::vector<void*> args) {
  pthread_attr_t a = small_stack_attr();
  threads.resize(args.size());
  for (std::size_t i = 0; i < args.size(); ++i)
    if (pthread_create(&threads[i], &a, fn, args[i]) != 0)
      throw std::runtime_error("wake: pthread_create failed");
  pthread_attr_destroy(&a);
}

struct os_shared {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  pthread_cond_t settled = PTHREAD_COND_INITIALIZER;
  std::vector<char> done;
  unsigned n = 0, waiting = 0;
  long checks = 0, expected = 0, wakeups = 0, rewaits = 0;
};
struct os_shared_arg {
  os_shared* s;
  unsigned i;
};

void* os_shared_waiter(void* p) {
  auto* a = static_cast<os_shared_arg*>(p);
  os_shared& s = *a->s;
  pthread_mutex_lock(&s.m);
  if (++s.waiting == s.n) pthread_cond_signal(&s.settled);
  while (!s.done[a->i]) {
    pthread_cond_wait(&s.cv, &s.m);
    ++s.wakeups;
    ++s.checks;
    if (!s.done[a->i]) ++s.rewaits;
    if (s.checks >= s.expected) pthread_cond_signal(&s.settled);
  }
  pthread_mutex_unlock(&s.m);
  return nullptr;
}

sample pthread_shared_once(unsigned n) {
  os_shared s;
  s.done.assign(n, 0);
  s.n = n;
  std::vector<os_shared_arg> args(n);
  std::vector<void*> ptrs;
  for (unsigned i = 0; i < n; ++i) {
    args[i] = {&s, i};
    ptrs.push_back(&args[i]);
  }
  std::vector<pthread_t> threads;
  start_threads(threads, &os_shared_waiter, ptrs);
  pthread_mutex_lock(&s.m);
  while (s.waiting < n) pthread_cond_wait(&s.settled, &s.m);
  pthread_mutex_unlock(&s.m);
  const std::int64_t t0 = now_ns();
  for (unsigned k = 0; k < n; ++k) {
    pthread_mutex_lock(&s.m);
    s.done[k] = 1;
    s.expected += n - k;
    pthread_cond_broadcast(&s.cv);
    while (s.checks < s.expected) pthread_cond_wait(&s.settled, &s.m);
    pthread_mutex_unlock(&s.m);
  }
  const std::int64_t t1 = now_ns();
  for (pthread_t t : threads) pthread_join(t, nullptr);
  return {t1 - t0, s.wakeups, s.wakeups + s.rewaits};
}

struct alignas(64) os_slot {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  bool done = false;
};
struct os_direct {
  std::unique_ptr<os_slot[]> slots;
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;  // for the settle hand-shake
  pthread_cond_t settled = PTHREAD_COND_INITIALIZER;
  unsigned n = 0, waiting = 0;
  long acks = 0;
  std::atomic<long> wakeups{0}, rewaits{0};
};
struct os_direct_arg {
  os_direct* s;
  unsigned i;
};

void* os_direct_waiter(void* p) {
  auto* a = static_cast<os_direct_arg*>(p);
  os_direct& s = *a->s;
  os_slot& mine = s.slots[a->i];
  pthread_mutex_lock(&mine.m);
  pthread_mutex_lock(&s.m);
  if (++s.waiting == s.n) pthread_cond_signal(&s.settled);
  pthread_mutex_unlock(&s.m);
  while (!mine.done) {
    pthread_cond_wait(&mine.cv, &mine.m);
    s.wakeups.fetch_add(1, std::memory_order_relaxed);
    if (!mine.done) s.rewaits.fetch_add(1, std::memory_order_relaxed);
  }
  pthread_mutex_unlock(&mine.m);
  pthread_mutex_lock(&s.m);
  ++s.acks;
  pthread_cond_signal(&s.settled);
  pthread_mutex_unlock(&s.m);
  return nullptr;
}

sample pthread_direct_once(unsigned n) {
  os_direct s;
  s.slots = std::make_unique<os_slot[]>(n);
  s.n = n;
  std::vector<os_direct_arg> args(n);
  std::vector<void*> ptrs;
  for (unsigned i = 0; i < n; ++i) {
    args[i] = {&s, i};
    ptrs.push_back(&args[i]);
  }
  std::vector<pthread_t> threads;
  start_threads(threads, &os_direct_waiter, ptrs);
  pthread_mutex_lock(&s.m);
  while (s.waiting < n) pthread_cond_wait(&s.settled, &s.m);
  pthread_mutex_unlock(&s.m);
  const std::int64_t t0 = now_ns();
  for (unsigned k = 0; k < n; ++k) {
    os_slot& slot = s.slots[k];
    pthread_mutex_lock(&slot.m);  // held by waiter k until it sleeps in cond_wait
    slot.done = true;
    pthread_cond_signal(&slot.cv);
    pthread_mutex_unlock(&slot.m);
    pthread_mutex_lock(&s.m);
    while (s.acks < static_cast<long>(k) + 1) pthread_cond_wait(&s.settled, &s.m);
    pthread_mutex_unlock(&s.m);
  }
  const std::int64_t t1 = now_ns();
  for (pthread_t t : threads) pthread_join(t, nullptr);
  return {t1 - t0, s.wakeups.load(), s.wakeups.load() + s.rewaits.load()};
}

// --- Rows ----------------------------------------------------------------------

const char* const impl_flow = "ito flow direct (b)";
const char* const impl_flow_ult = "ito ULTs on flow futures (b')";
const char* const impl_cv = "ito condition_variable shared (a)";
const char* const impl_os_shared = "pthread condvar shared (c,a)";
const char* const impl_os_direct = "pthread condvar per thread (c,b)";

void add_row(reporter& out, const char* impl, unsigned w, unsigned n, std::vector<sample>& runs,
             const std::string& note) {
  result r;
  r.bench = "wake";
  r.group = "n=" + std::to_string(n);
  r.impl = impl;
  r.workers = w;
  r.params = {{"n", std::to_string(n)}};
  r.ops = n;
  r.reference = std::string(impl) == impl_flow;
  r.note = note;
  std::vector<std::int64_t> ns;
  std::vector<double> wakeups, switches;
  for (const sample& s : runs) {
    ns.push_back(s.ns);
    wakeups.push_back(static_cast<double>(s.wakeups));
    switches.push_back(static_cast<double>(s.switches));
  }
  summarize(r, ns);
  r.extra.push_back({"wakeups", median(wakeups)});
  r.extra.push_back({"switches", median(switches)});
  out.add(std::move(r));
}

// The paper's layout: one line per mode, one column per n (median µs).
void print_paper_table(const reporter& out, const std::vector<unsigned>& sizes) {
  std::printf("\n== wake: seed 004 table 1 layout, median us (wake-ups / switches)\n");
  std::printf("%-40s", "threads");
  for (unsigned n : sizes) std::printf(" %16u", n);
  std::printf("\n");
  std::vector<std::pair<std::string, unsigned>> lines;
  for (const result& r : out.results()) {
    auto key = std::make_pair(r.impl, r.workers);
    if (std::find(lines.begin(), lines.end(), key) == lines.end()) lines.push_back(key);
  }
  for (const auto& [impl, w] : lines) {
    std::printf("%-40s", (impl + " W=" + std::to_string(w)).c_str());
    for (unsigned n : sizes) {
      std::string cell = "-";
      for (const result& r : out.results())
        if (r.impl == impl && r.workers == w && r.group == "n=" + std::to_string(n) && r.available) {
          char buf[64];
          const double us = r.median_ms * 1000;
          std::snprintf(buf, sizeof buf, us < 10 ? "%.1f (%.0f/%.0f)" : "%.0f (%.0f/%.0f)", us,
                        r.extra[0].second, r.extra[1].second);
          cell = buf;
        }
      std::printf(" %16s", cell.c_str());
    }
    std::printf("\n");
  }
  std::printf("%-40s", "paper: UNIX wait queue (PIII 1 GHz)");
  for (int v : {2, 129, 863, 1896, 3565, 5166, 7937, 10572, 13531}) std::printf(" %16d", v);
  std::printf("\n%-40s", "paper: direct wake-up (PIII 1 GHz)");
  for (int v : {2, 32, 65, 104, 146, 192, 242, 296, 362}) std::printf(" %16d", v);
  std::printf("\n");
}

}  // namespace

// The `wake` subcommand: parses its flags, runs, prints.
void wake_subcommand(args& a, const common_flags& c, reporter& out) {
  const long long max_n = a.take_int("--max-n", 256, 1, 4096);
  const long long step = a.take_int("--step", 32, 1, 4096);
  a.finish();
  std::vector<unsigned> sizes{1};
  for (long long n = step; n <= max_n; n += step) sizes.push_back(static_cast<unsigned>(n));
  const std::vector<unsigned> workers = c.workers.empty() ? std::vector<unsigned>{1, 2} : c.workers;
  const int runs = c.runs;

  for (unsigned w : workers) {
    if (!selected("ito")) break;
    progress("wake: ito, %u worker(s)...", w);
    ito::start_main_thread_with_worker_size(w, [&] {
      for (unsigned n : sizes) {
        std::vector<sample> flow_runs, ult_runs, cv_runs;
        ito_flow_once(n, false);  // warm-up (node pools, stacks)
        for (int r = 0; r < runs; ++r) {
          flow_runs.push_back(ito_flow_once(n, false));
          ult_runs.push_back(ito_flow_once(n, true));
          cv_runs.push_back(ito_shared_once(n));
        }
        add_row(out, impl_flow, w, n, flow_runs, "zero-wait: 2 node activations per completion");
        add_row(out, impl_flow_ult, w, n, ult_runs, "");
        add_row(out, impl_cv, w, n, cv_runs, "notify_all per completion");
      }
    });
  }
  if (selected("pthread")) {
    const unsigned cpus = allowed_cpus();
    progress("wake: pthreads on %u CPU(s)...", cpus);
    for (unsigned n : sizes) {
      std::vector<sample> shared_runs, direct_runs;
      for (int r = 0; r < runs; ++r) {
        shared_runs.push_back(pthread_shared_once(n));
        direct_runs.push_back(pthread_direct_once(n));
      }
      add_row(out, impl_os_shared, cpus, n, shared_runs, "broadcast per completion");
      add_row(out, impl_os_direct, cpus, n, direct_runs, "signal per completion");
    }
  }
  out.print_table("wake: n waiters, completions delivered one at a time (ns/op = per completion)");
  if (!c.json) print_paper_table(out, sizes);
}

}  // namespace bench
