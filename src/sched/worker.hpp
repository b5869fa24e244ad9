// SPDX-License-Identifier: Apache-2.0
// Workers (one OS thread each) and the state they share.
#pragma once

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "arch/sanitizer.hpp"
#include "ito/options.hpp"
#include "sched/deadlock.hpp"
#include "sched/deque.hpp"
#include "sched/extension.hpp"
#include "sched/registry.hpp"
#include "sched/timers.hpp"
#include "sched/ult.hpp"
#include "sched/ult_queue.hpp"
#include "stack/provider.hpp"
#include "stack/stack_pool.hpp"

namespace ito::detail {
struct branch;
}

namespace ito::sched {

struct runtime_state;
struct worker;
struct preempt_watch;

// Counters written only by their worker; read at exit (ITO_STATS=1).
struct worker_stats {
  std::atomic<std::uint64_t> spawns{0};
  std::atomic<std::uint64_t> finished{0};
  std::atomic<std::uint64_t> steal_attempts{0};
  std::atomic<std::uint64_t> steals{0};
  std::atomic<std::uint64_t> parks{0};
  // A park that timed out and then found work: a wake-up that never came.
  std::atomic<std::uint64_t> late_wakeups{0};
  std::atomic<std::uint64_t> quick_resumes{0};
  std::atomic<std::uint64_t> direct_join_wakeups{0};
  std::atomic<std::uint64_t> inline_joins{0};  // children run inline by their joiner
  // parallel_invoke branches taken by someone other than their caller, run
  // as ULTs (those taken back are not counted: that path stays a few loads
  // and stores).
  std::atomic<std::uint64_t> branches_made_ults{0};
  // create_thread's records taken by someone other than their future's
  // holder (a thief, or this worker's scheduler meanwhile), run as ULTs.
  std::atomic<std::uint64_t> records_made_ults{0};
  std::atomic<std::uint64_t> stacks_reused{0};  // a released descriptor+stack taken again
  std::atomic<std::uint64_t> stacks_taken{0};   // a stack taken from the cache or the pool
  // TLS blocks (ult_tls.hpp) for the ULTs made on this worker: new from ld.so,
  // or renewed from its cache; and those of ULTs that ended here handed back
  // to ld.so because the cache was full (a sign that threads are made on one
  // worker and end on another: blocks do not move between caches).
  std::atomic<std::uint64_t> tls_blocks_made{0};
  std::atomic<std::uint64_t> tls_blocks_reused{0};
  std::atomic<std::uint64_t> tls_blocks_freed{0};
  // With a processes extension only: exit hooks run to their end. A ULT counts as
  // finished before its hook tells another process that it ended; quiescence
  // must wait for both (quiescent_locally).
  std::atomic<std::uint64_t> exit_hooks_done{0};
  // Preemption (preempt.hpp): ULTs interrupted and sent to the back of the
  // queue; asked but left running (interrupted inside ito, libc, ...).
  std::atomic<std::uint64_t> preempts{0};
  std::atomic<std::uint64_t> preempts_refused{0};

  // Single writer: a plain load and store, no locked instruction.
  static void bump(std::atomic<std::uint64_t>& c) noexcept {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
};

struct alignas(64) worker {
  runtime_state* rt = nullptr;
  unsigned index = 0;

  chase_lev_deque<ult*> deque;    // runnable ULTs: owner at the bottom, thieves at the top
  chase_lev_deque<ult*> yielded;  // yield(true): run last here, stolen first elsewhere
  // parallel_invoke's queued branches (records on their callers' stacks,
  // branches.hpp): taken back by their caller, or made a ULT by whoever
  // takes one first (a thief from the top, this worker's scheduler loop
  // from the bottom).
  chase_lev_deque<ito::detail::branch*> branches;
  ult_queue inbox;                // ULTs bound to this worker, made runnable elsewhere
  owner_ult_fifo bound_here;      // ULTs bound to this worker, made runnable by it

  ult* current = nullptr;  // the running ULT; null while in the scheduler loop
  // This OS thread's C++ exception globals (__cxa_get_globals()), which hold
  // the running context's state; the scheduler context's while it is out.
  // program_eh: the program's libstdc++'s when it is another copy (under
  // libito-preload.so), else null.
  eh_globals* eh = nullptr;
  eh_globals* program_eh = nullptr;
  // The switch's one test for what it rarely does (switch_eh, install_eh in
  // scheduler.hpp): a program_eh to carry, or ULTs with TLS blocks whose
  // thread pointer it loads (ult_tls: options::ult_tls). Both are written
  // by other threads too (__atomic builtins), only ever from false to true
  // (resume_action.cpp, ult_tls::turn_on).
  bool switch_extras = false;
  bool ult_tls = false;
  eh_state scheduler_eh;
  bool alone = false;      // the only worker: nobody steals from its deques
  void* scheduler_sp = nullptr;
  arch::sanitizer_fiber scheduler_fiber;
  stack::stack_block scheduler_stack;  // worker 0 only: its OS stack belongs to the main ULT

  stack::stack_cache stacks;
  // Released descriptors with their stacks, reused first (LIFO: warm lines).
  static constexpr unsigned max_free_ults = 64;
  ult* free_ults = nullptr;
  unsigned free_count = 0;
  // Memory of create_thread's records (ito/detail/task_record.hpp) freed
  // here, reused first; a list through each block's first word.
  static constexpr unsigned max_free_task_records = 256;
  void* free_task_records = nullptr;
  unsigned free_task_record_count = 0;
  // The next ULT id made here: a count in the high bits, the worker's index
  // in the low 10, so ids of different workers never collide.
  static constexpr std::uint64_t id_step = 1u << 10;
  std::uint64_t next_id = id_step;  // plus the index, set with it
  // Free slots of the handle table (handles.cpp), so pthread_create and join
  // take no lock in steady state.
  static constexpr unsigned handle_cache_size = 64;
  std::uint32_t handle_cache[handle_cache_size] = {};
  unsigned handle_cache_count = 0;
  std::uint64_t rng = 0;
  std::uint32_t yields_since_scheduler = 0;
  std::uint64_t picks_since_poll = 0;  // blocks and joins; see next_local() in scheduler.hpp
  void (*suspend_after)(ult*, void*) = nullptr;  // suspend()'s hook, read on the next stack
  void* suspend_arg = nullptr;
  worker_stats stats;

  // Parking: the futex word, and whether this worker is on the idle list.
  std::atomic<std::uint32_t> wake_word{0};
  bool on_idle_list = false;  // guarded by runtime_state::idle_mutex
  // In the futex wait (not still re-scanning before it): wake_one prefers
  // such a worker, since one still scanning may leave with work by itself.
  std::atomic<bool> asleep{false};
  // Its affinity when it parked, and whether a waker has narrowed it for the
  // wake-up (wake_placement.hpp); both guarded by idle_mutex once it is on
  // the idle list.
  cpu_set_t park_cpus{};
  bool park_cpus_known = false;
  bool narrowed = false;
  // Where its OS thread was started from and where it first ran (-1:
  // unknown); start_off_creator_cpu keeps them apart where it can.
  int creator_cpu = -1;
  std::atomic<int> first_cpu{-1};

  // Whether a ULT bound to this worker waits to run (a hint from other threads).
  bool bound_ready_looks_empty() const noexcept {
    return bound_here.looks_empty() && inbox.looks_empty();
  }

  // The runtime's stack provider, null for the fixed policy: allocate() tests
  // it where the fixed path starts (stack/provider.hpp). Its per-worker state.
  stack::stack_provider* stack_provider = nullptr;
  void* stack_state = nullptr;

  ult_registry registry;  // descriptors made on this worker (registry.hpp); cold
  pthread_t os_thread{};
  std::atomic<pid_t> tid{0};  // its OS thread's id, once it runs (deadlock.cpp: a known thread)
  void* altstack = nullptr;
  // Set by the preemption watch just before it signals this worker's thread
  // (preempt.hpp), so the handler tells ito's signal from the program's. Off
  // the lines the switch path writes.
  std::atomic<bool> preempt_asked{false};
  void* task_state = nullptr;  // the tasks extension's own (flow), per worker
  // This OS thread's own thread pointer (its TCB: the scheduler's, the main
  // ULT's and every ULT's without a block), recorded at start whether or not
  // blocks are on (ult_tls::turn_on may turn them on later), and the one in
  // force now (ult_tls.cpp, arrive).
  void* own_tp = nullptr;
  void* tp_now = nullptr;
  // TLS blocks of ULTs that ended on this worker, kept for the next ULTs
  // created here instead of going back to ld.so (ult_tls.cpp: reinitialised
  // when taken, freed at the runtime's end). LIFO, written only by this
  // worker's OS thread.
  static constexpr unsigned tls_cache_capacity = 64;
  unsigned tls_cache_count = 0;
  void* tls_cache[tls_cache_capacity] = {};
};

struct runtime_state {
  options opts;
  std::vector<std::unique_ptr<worker>> workers;
  stack::stack_pool stacks;
  std::unique_ptr<stack::stack_provider> stack_provider;  // null: fixed policy
  timer_queue timers;
  ult_queue injector;  // ULTs made runnable by threads that are not workers

  std::atomic<unsigned> parked{0};
  std::atomic<unsigned> spinning{0};  // workers looking for work, not yet parked
  std::mutex idle_mutex;
  std::vector<worker*> idle;  // guarded by idle_mutex
  // Times a worker left the idle list (woken, or it saw work): guarded by
  // idle_mutex. Unchanged while every worker stays on the list, so no ULT ran
  // in between (deadlock.hpp).
  std::uint64_t idle_leaves = 0;
  // Wake-ups that kept the woken worker off its waker's CPU (guarded by
  // idle_mutex; wake_placement.hpp).
  std::uint64_t wakes_kept_off_waker = 0;

  // The starting thread's CPUs, read before ITO_BIND pins it: worker i is
  // pinned to the i-th of them, and that thread gets them back at the end.
  cpu_set_t start_cpus{};
  std::atomic<bool> stopping{false};
  std::atomic<unsigned> outside_wakers{0};  // OS threads inside make_ready (see there)
  // The OS threads of workers 1..N-1: others_deferred until the first spawn
  // that asks for them (start_other_workers), others_starting meanwhile.
  static constexpr int others_deferred = 0, others_starting = 1, others_running = 2;
  std::atomic<int> others{others_deferred};
  // ULTs spawned from now on get TLS blocks (ult_tls.hpp): options::ult_tls
  // at start, or ult_tls::turn_on later (release; read with acquire).
  std::atomic<bool> tls_blocks{false};
  // Distributed mode: ULTs that migrated to other processes minus those that
  // arrived from them (each counts as finished where it left, spawned where
  // it arrived), so that quiescence still reads finished == spawned.
  std::atomic<std::int64_t> moved_out{0};
  extension* tasks = nullptr;  // tasks_extension() when the runtime started
  std::atomic<preempt_watch*> preempt{nullptr};  // preempt.hpp; null when off
  deadlock_mode on_deadlock = deadlock_mode::automatic;  // ITO_DEADLOCK
  // Owners pop their deques with no fence; thieves call membarrier
  // (ITO_DEQUE_FENCE, deque.hpp). Set before any worker runs.
  bool asymmetric_deques = false;
  deadlock_state deadlock;
  ult main_ult;  // the OS thread that created the runtime, adopted as a ULT
  // main_ult's OS stack (its thread's, as pthread_getattr_np says: for the
  // process's main thread, as deep as RLIMIT_STACK lets it grow); empty when
  // unknown. Children it joins inline run there (scheduler.cpp, join_inline).
  stack::stack_block main_stack;

  explicit runtime_state(const options& o)
      : opts(o),
        stacks(o.stack_size, processes_extension() ? processes_extension()->stack_chunks : nullptr) {}
};

// The one live runtime (ito runs one runtime per process at a time).
extern std::atomic<runtime_state*> g_runtime;

}  // namespace ito::sched
