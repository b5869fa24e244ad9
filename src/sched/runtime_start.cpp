// SPDX-License-Identifier: Apache-2.0
// Starting and stopping the runtime: workers, the main ULT, the wait for the
// last ULTs at the end.
#include "sched/runtime_control.hpp"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cxxabi.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "arch/context.hpp"
#include "arch/sanitizer.hpp"
#include "common/setting_values.hpp"
#include "ito/error.hpp"
#include "os/membarrier.hpp"
#include "sched/fork_child.hpp"
#include "sched/handles.hpp"
#include "sched/idle.hpp"
#include "sched/loader_locks.hpp"
#include "sched/overflow.hpp"
#include "sched/preempt.hpp"
#include "sched/extension.hpp"
#include "sched/program_eh.hpp"
#include "sched/scheduler.hpp"
#include "sched/task_records.hpp"
#include "sched/ult_report.hpp"
#include "sched/wake_placement.hpp"
#include "sched/worker_signals.hpp"
#include "trace/trace.hpp"

namespace ito::sched {


namespace {

// ITO_BIND: pins this thread to the index-th CPU of `allowed` (the starting
// thread's set: a worker's own would be worker 0's one CPU, which it inherits).
void pin_to_allowed_cpu(const cpu_set_t& allowed, unsigned index) {
  const auto total = static_cast<unsigned>(CPU_COUNT(&allowed));
  if (total == 0) return;
  unsigned seen = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    if (seen++ == index % total) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      pthread_setaffinity_np(pthread_self(), sizeof one, &one);
      return;
    }
  }
}

// This OS thread's stack, as pthread_getattr_np says (for the process's main
// thread: as deep as RLIMIT_STACK lets it grow); empty if unknown.
stack::stack_block this_thread_stack() {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return {};
  void* lo = nullptr;
  std::size_t size = 0;
  const int got = pthread_attr_getstack(&attr, &lo, &size);
  pthread_attr_destroy(&attr);
  if (got != 0 || !lo) return {};
  return {static_cast<char*>(lo), static_cast<char*>(lo) + size, false};
}

void enter_worker_thread(worker* w) {
  set_current_worker(w);
  w->tid.store(gettid(), std::memory_order_relaxed);
  w->eh = reinterpret_cast<eh_globals*>(abi::__cxa_get_globals());
  w->program_eh = program_eh_globals();
  // Only ever set, never cleared: ult_tls::turn_on may have set both already.
  if (w->rt->opts.ult_tls.value_or(false)) __atomic_store_n(&w->ult_tls, true, __ATOMIC_RELAXED);
  if (w->program_eh || __atomic_load_n(&w->ult_tls, __ATOMIC_RELAXED))
    __atomic_store_n(&w->switch_extras, true, __ATOMIC_RELAXED);
  // A signal aimed at a ULT before this worker started (resume_action.hpp).
  if (resume_actions_asked()) __atomic_store_n(&w->switch_extras, true, __ATOMIC_SEQ_CST);
  ult_tls::enter_worker(w);  // always: blocks may be turned on later
  // glibc leaves the split-stack limit word of a reused thread block as it was:
  // start with none (split-stack code on the scheduler stack never grows).
  arch::set_split_limit(nullptr);
  w->altstack = install_overflow_altstack();
  if (w->rt->opts.bind.value_or(false)) pin_to_allowed_cpu(w->rt->start_cpus, w->index);
}

void* worker_thread_main(void* p) {
  auto* w = static_cast<worker*>(p);
  // Started off its creator's CPU (wake_placement.hpp): settled, it may run anywhere.
  const int first_cpu = sched_getcpu();
  if (take_narrowed(w)) restore_park_cpus(w);
  w->first_cpu.store(first_cpu, std::memory_order_release);
  // Named for top -H, gdb and perf (at most 15 characters). Worker 0 is the
  // user's own main thread: its name is left alone.
  char name[16];
  std::snprintf(name, sizeof name, "ito-worker-%u", w->index);
  pthread_setname_np(pthread_self(), name);
  // ITO_TRACE: every worker has its track, even one that found no work
  // before the runtime ended (it records before stop_runtime joins it).
  trace::record(trace::kind::scheduler);
  block_asynchronous_signals(w->rt->opts.preempt_us.value_or(0) != 0);
  enter_worker_thread(w);
  arch::sanitizer_adopt_current(w->scheduler_fiber);
  scheduler_loop(w);
  remove_overflow_altstack(w->altstack);
  set_current_worker(nullptr);
  return nullptr;
}

}  // namespace

bool all_finished(runtime_state* rt) noexcept {
  std::uint64_t finished = 0, spawned = 0;
  for (auto& w : rt->workers) finished += w->stats.finished.load(std::memory_order_acquire);
  finished += static_cast<std::uint64_t>(rt->moved_out.load(std::memory_order_acquire));
  for (auto& w : rt->workers) spawned += w->stats.spawns.load(std::memory_order_acquire);
  return finished == spawned;
}

void wait_until_all_finished(runtime_state* rt) {
  for (unsigned round = 0; !all_finished(rt); ++round) {
    if (round < 1000) yield(false);
    else sleep_until_ns(monotonic_ns() + 100'000);
  }
}

bool quiescent_locally(runtime_state* rt) noexcept {
  // Each count only grows (moved_out is fixed by the caller), and a ULT is
  // spawned, then finished, then done with its exit hook: reading them in
  // the reverse order, equal sums mean that at the first read nothing was
  // live or between its end and its hook's last message.
  std::uint64_t hooks_done = 0, finished = 0, spawned = 0;
  for (auto& w : rt->workers) hooks_done += w->stats.exit_hooks_done.load(std::memory_order_acquire);
  for (auto& w : rt->workers) finished += w->stats.finished.load(std::memory_order_acquire);
  for (auto& w : rt->workers) spawned += w->stats.spawns.load(std::memory_order_acquire);
  const auto moved_out = static_cast<std::uint64_t>(rt->moved_out.load(std::memory_order_acquire));
  return hooks_done == finished && finished + moved_out == spawned;
}

namespace {

// How long the runtime's end waits for the last ULTs before saying which.
constexpr std::int64_t stop_report_after_ns = 5'000'000'000;

void report_unfinished(runtime_state* rt) {
  std::int64_t finished = rt->moved_out.load(std::memory_order_relaxed), spawned = 0;
  for (auto& w : rt->workers) finished += static_cast<std::int64_t>(w->stats.finished.load(std::memory_order_relaxed));
  for (auto& w : rt->workers) spawned += static_cast<std::int64_t>(w->stats.spawns.load(std::memory_order_relaxed));
  std::fprintf(stderr,
               "ito: the runtime is ending but %lld ULT(s) have not finished after %lld s; "
               "it waits for them. Still there:\n",
               static_cast<long long>(spawned - finished),
               static_cast<long long>(stop_report_after_ns / 1'000'000'000));
  report_live_ults(rt, stderr);
}

// ITO_DEQUE_FENCE (checked when the options were resolved): `asymmetric`
// registers the process for membarrier whatever it costs; unset, it is
// asymmetric where that is cheap (one thread now, or registered already: a
// process with other threads would wait ~10 ms for the kernel's RCU grace
// period at its first start); `full`, never. Never under TSan either (it
// knows nothing of membarrier's ordering).
bool asymmetric_deques_wanted() noexcept {
#if ITO_TSAN
  return false;
#else
  const config::setting& s = config::declared(config::setting_id::deque_fence);
  switch (config::parse_choice(s, config::text_setting(s.id))) {
    case 0: return os::asymmetric_fence_ready(/*whatever_it_costs=*/true);
    case 1: return false;
    default: return os::asymmetric_fence_ready();
  }
#endif
}

}  // namespace

void start_other_workers_slow(runtime_state* rt) {
  int expected = runtime_state::others_deferred;
  // One caller starts them; another that comes meanwhile goes on without:
  // its ULT runs on its own worker as before.
  if (!rt->others.compare_exchange_strong(expected, runtime_state::others_starting,
                                          std::memory_order_acq_rel))
    return;
  for (unsigned i = 1; i < rt->workers.size(); ++i) {
    worker* w = rt->workers[i].get();
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    start_off_creator_cpu(w, &attr);
    const int err = pthread_create(&w->os_thread, &attr, &worker_thread_main, w);
    pthread_attr_destroy(&attr);
    if (err != 0) {
      std::fprintf(stderr, "ito: cannot start worker %u: %s\n", i, std::strerror(err));
      std::abort();
    }
  }
  rt->others.store(runtime_state::others_running, std::memory_order_release);
  start_preemption(rt);  // only now may a ULT wait for a worker another one holds
  // Started from a ULT's own block, glibc marked that block multi-threaded.
  if (rt->tls_blocks.load(std::memory_order_acquire)) ult_tls::others_started(rt->workers[0].get());
}

// options::ult_tls (ITO_ULT_TLS): where the blocks cannot be made or
// switched, a config_error at start rather than threads that share TLS.
static void check_ult_tls_available(const options& resolved) {
  if (!resolved.ult_tls.value_or(false)) return;
  if (const char* why = ult_tls::unavailable_for(resolved))
    throw config_error(std::string("ito: ITO_ULT_TLS / options.ult_tls: ") + why,
                       config::text_setting(config::setting_id::ult_tls) != nullptr);
}

runtime_state* start_runtime(const options& resolved, bool defer_others) {
  check_preemption_available(resolved);
  check_ult_tls_available(resolved);
  find_loader_locks();  // must_not_block_worker and preemption's safe points ask
  runtime_state* expected = nullptr;
  auto* rt = new runtime_state(resolved);
  rt->tls_blocks.store(resolved.ult_tls.value_or(false), std::memory_order_relaxed);
  rt->tasks = tasks_extension();
  rt->on_deadlock = deadlock_mode_from_environment();
  // Only where anyone steals: a lone worker pops with no fence anyway.
  rt->asymmetric_deques = (resolved.workers > 1 || processes_extension()) && asymmetric_deques_wanted();
  rt->stack_provider = stack::make_stack_provider(resolved);
  std::unique_lock no_dump(dump_lock());  // a dump sees the workers once all exist
  if (!g_runtime.compare_exchange_strong(expected, rt)) {
    delete rt;
    throw usage_error(EBUSY, "ito: a runtime is already running in this process");
  }
  const unsigned n = resolved.workers;
  for (unsigned i = 0; i < n; ++i) {
    auto w = std::make_unique<worker>();
    w->rt = rt;
    w->index = i;
    w->next_id = worker::id_step | i;
    w->rng = 0x9E3779B97F4A7C15ull * (i + 1);
    w->alone = n == 1 && !processes_extension();  // other processes steal from it
    // Not `yielded`: its owner never pops it, so there is no fence to save.
    if (rt->asymmetric_deques) {
      w->deque.use_asymmetric_fence();
      w->branches.use_asymmetric_fence();
    }
    w->stack_provider = rt->stack_provider.get();
    if (w->stack_provider) w->stack_provider->attach(w.get());
    rt->workers.push_back(std::move(w));
  }
  no_dump.unlock();
  // Before any switch of this runtime; none of an earlier one is left to resume.
  arch::carry_fp_modes(resolved.fp_modes.value_or(fp_mode_scope::per_ult) == fp_mode_scope::per_ult);
  trace::start();  // before any worker runs
  install_overflow_handler();
  install_dump_signal();
  install_fork_handler();

  // Worker 0 is this thread; its current stack becomes the main ULT.
  if (sched_getaffinity(0, sizeof rt->start_cpus, &rt->start_cpus) != 0) CPU_ZERO(&rt->start_cpus);
  worker* w0 = rt->workers[0].get();
  enter_worker_thread(w0);
  ult& main = rt->main_ult;
  main.bound = w0;
  main.id = 0;
  rt->main_stack = this_thread_stack();
  // Records run as calls above half the main stack; anywhere (0) when its
  // size is unknown or a stack provider's segments grow.
  main.record_floor = rt->main_stack && !rt->stack_provider
                          ? reinterpret_cast<std::uintptr_t>(rt->main_stack.lo + rt->main_stack.size() / 2)
                          : 0;
  arch::sanitizer_adopt_current(main.fiber);
  w0->current = &main;
  handles::adopt_before_start(&main, os_thread_identity());  // its pthread_self from before
  trace::record(trace::kind::run, main.id);
  w0->scheduler_stack = rt->stacks.allocate();
  w0->scheduler_sp = make_scheduler_context(w0);
  arch::sanitizer_init_fiber(w0->scheduler_fiber, w0->scheduler_stack.lo,
                             w0->scheduler_stack.size());

  // Deferred even at one worker: `others` then says whether anything has
  // been spawned yet (must_not_block_worker).
  if (!defer_others) start_other_workers_slow(rt);
  publish_debug_table(rt);
  return rt;
}

void stop_runtime(runtime_state* rt) {
  worker* w0 = current_worker();
  if (!w0 || w0->rt != rt || w0->current != &rt->main_ult)
    fatal("the runtime must be stopped by the thread that started it");
  // Wait for the ULTs still running: yield while there is local work, then nap.
  // A ULT blocked forever would make this wait forever: after a grace period,
  // say which ULTs are left and what they wait on.
  const std::int64_t report_at = monotonic_ns() + stop_report_after_ns;
  bool reported = false;
  std::int64_t nap_ns = 100'000;  // doubles up to 10 ms: a long wait stays cheap
  for (unsigned round = 0; !all_finished(rt); ++round) {
    if (round < 1000) {
      yield(false);
    } else {
      sleep_until_ns(monotonic_ns() + nap_ns);
      nap_ns = std::min<std::int64_t>(nap_ns * 2, 10'000'000);
    }
    if (!reported && monotonic_ns() >= report_at) {
      reported = true;
      report_unfinished(rt);
    }
  }
  // A thread that woke the last ULT may still be waking a worker.
  while (rt->outside_wakers.load(std::memory_order_acquire) != 0) arch::cpu_relax();
  // Every ULT has finished, so no spawn is starting the other workers now.
  const bool others = rt->others.load(std::memory_order_acquire) == runtime_state::others_running;
  stop_preemption(rt);  // it signals workers: it ends before they do
  rt->stopping.store(true, std::memory_order_release);
  wake_all(rt);
  for (unsigned i = 1; others && i < rt->workers.size(); ++i)
    pthread_join(rt->workers[i]->os_thread, nullptr);
  trace::finish();  // every worker has ended
  if (rt->opts.stats.value_or(false)) print_stats(rt, stderr);
  free_preemption(rt);

  std::unique_lock no_dump(dump_lock());  // a dump from another thread waits, then sees none
  w0->current = nullptr;
  arch::sanitizer_destroy_fiber(w0->scheduler_fiber);
  remove_overflow_altstack(w0->altstack);
  set_current_worker(nullptr);
  // ITO_BIND pinned this thread for the runtime only: the program's own again.
  if (rt->opts.bind.value_or(false) && CPU_COUNT(&rt->start_cpus) != 0)
    pthread_setaffinity_np(pthread_self(), sizeof rt->start_cpus, &rt->start_cpus);
  for (auto& w : rt->workers) {
    for (ult* u = w->free_ults; u; u = u->next) arch::sanitizer_destroy_fiber(u->fiber);
    w->stacks.drain(rt->stacks);  // the chunks are unmapped with the pool
    ult_tls::drain(w.get());
    drain_task_records(w.get());
    if (rt->stack_provider) rt->stack_provider->drain(w.get());
  }
  rt->stack_provider.reset();  // after every worker's share went back to it
  publish_debug_table(nullptr);
  handles::drop_all();  // handles to ULTs never joined die with the runtime
  report_orphaned_exception_count();
  g_runtime.store(nullptr, std::memory_order_release);
  no_dump.unlock();
  delete rt;
}

}  // namespace ito::sched

