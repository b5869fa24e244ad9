// SPDX-License-Identifier: Apache-2.0
#include "distributed/progress.hpp"

#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <thread>

#include "common/setting_values.hpp"
#include "distributed/doorbells.hpp"
#include "distributed/host_cpus.hpp"
#include "distributed/peer_watch.hpp"
#include "os/futex.hpp"
#include "trace/trace.hpp"

namespace ito::dist::detail {
namespace {

std::atomic<bool> g_stop{false};
std::thread* g_thread = nullptr;
MPI_Comm g_comm = MPI_COMM_NULL;  // a duplicate: probing it never sees the program's messages
constexpr auto hook_slots = static_cast<std::size_t>(progress_hook::count);
std::atomic<void (*)()> g_hooks[hook_slots] = {};
std::mutex g_hook_lock;  // held while a hook runs: unsetting one waits for that
// Set when a hook has work waiting (a futex word): this rank's doorbell in
// its node's memory, which node mates ring too (doorbells.hpp), or, in a node
// of one rank, a word of its own.
os::futex_word g_own_bell{0};
std::atomic<os::futex_word*> g_bell{&g_own_bell};
constexpr unsigned long precise_slack_ns = 1000;
std::atomic<bool> g_rank_idle{false};  // every worker of this rank is parked
os::futex_word g_started{0};            // the thread runs, with its scheduling set
long g_idle_interval_us = 0;            // as start_progress decided

// Wake-ups that preempt. Where the workers keep every CPU busy, this thread
// woke on time and then waited in the run queue for a worker's slice to end:
// up to 4 ms (perf sched, two ranks on 2 cores), and every message to this
// rank with it. Linux 6.12 and later (EEVDF) let a thread ask for a shorter
// slice, with no privilege (sched_attr.sched_runtime, 100 us to 100 ms): its
// deadline comes sooner and its wake-up preempts the worker, for the few
// microseconds a round takes. Older kernels ignore the field for ordinary
// threads; a refusal changes nothing either.
void request_short_slices() {
  struct {
    std::uint32_t size, policy;
    std::uint64_t flags;
    std::int32_t nice;
    std::uint32_t priority;
    std::uint64_t runtime, deadline, period;
  } attr{};
  attr.size = sizeof attr;
  attr.policy = SCHED_OTHER;
  attr.runtime = 100'000;  // ns
  syscall(SYS_sched_setattr, 0, &attr, 0);
}

// Sleeps between rounds: interval_us, or idle_us (non-zero) while the rank is
// idle, then on a precise timer: the kernel's default slack (50 us) would make
// a 20 us wait ~70, and a precise 100 us wait while the rank computes took
// the workers' cores more often (measured slower).
void progress_loop(long interval_us, long idle_us) {
  request_short_slices();
  g_started.store(1, std::memory_order_release);  // start_progress waits for this
  os::futex_wake(&g_started, 1);
  bool precise = false;
  while (!g_stop.load(std::memory_order_acquire)) {
    trace::record(trace::kind::poll_begin);
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, g_comm, &flag, MPI_STATUS_IGNORE);
    for (auto& slot : g_hooks) {
      if (!slot.load(std::memory_order_relaxed)) continue;
      std::lock_guard hold(g_hook_lock);
      if (auto hook = slot.load(std::memory_order_acquire)) hook();
    }
    trace::record(trace::kind::poll_end);
    const bool idle = idle_us != 0 && g_rank_idle.load(std::memory_order_relaxed);
    if (idle != precise) {
      prctl(PR_SET_TIMERSLACK, idle ? precise_slack_ns : 0UL, 0UL, 0UL, 0UL);  // 0: the default
      precise = idle;
    }
    doorbell_board::wait(g_bell.load(std::memory_order_relaxed),
                         (idle ? idle_us : interval_us) * 1000);
  }
}

long interval_setting(config::setting_id id) {
  return static_cast<long>(config::number_setting(id).value_or(config::declared(id).fallback));
}

}  // namespace

long resolve_progress_interval_us() { return interval_setting(config::setting_id::dist_progress_us); }
long resolve_idle_progress_interval_us() {
  const auto set = config::number_setting(config::setting_id::dist_idle_progress_us);
  return set ? static_cast<long>(*set) : -1;
}

void start_progress(long interval_us, long idle_interval_us, const host_cpus& host) {
  // Unset: sooner only where every worker of the host's ranks has a CPU.
  if (idle_interval_us < 0)
    idle_interval_us =
        host.workers <= host.cpus
            ? static_cast<long>(config::declared(config::setting_id::dist_idle_progress_us).fallback)
            : 0;
  g_idle_interval_us = interval_us == 0 ? 0 : idle_interval_us;
  if (interval_us == 0) return;
  MPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
  name_mpi_failures(g_comm);
  g_stop.store(false, std::memory_order_relaxed);
  // No asynchronous signal is the progress thread's to take.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  g_rank_idle.store(false, std::memory_order_relaxed);
  os::futex_word* doorbell = own_doorbell();
  g_bell.store(doorbell ? doorbell : &g_own_bell, std::memory_order_relaxed);
  g_started.store(0, std::memory_order_relaxed);
  g_thread = new std::thread(progress_loop, interval_us, idle_interval_us);
  // Once the runtime is up, the thread is as described (its slices asked for).
  while (g_started.load(std::memory_order_acquire) == 0) os::futex_wait(&g_started, 0);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  pthread_setname_np(g_thread->native_handle(), "ito-progress");
}

bool progress_running() noexcept { return g_thread != nullptr; }

long idle_progress_interval_us() noexcept { return g_idle_interval_us; }

void set_rank_idle(bool idle) noexcept { g_rank_idle.store(idle, std::memory_order_relaxed); }

void nudge_progress() noexcept {
  doorbell_board::ring(g_bell.load(std::memory_order_relaxed));
}

void set_progress_hook(progress_hook slot, void (*hook)()) noexcept {
  std::lock_guard hold(g_hook_lock);
  g_hooks[static_cast<std::size_t>(slot)].store(hook, std::memory_order_release);
}

void stop_progress() noexcept {
  if (!g_thread) return;
  g_stop.store(true, std::memory_order_release);
  g_thread->join();
  delete g_thread;
  g_thread = nullptr;
  g_bell.store(&g_own_bell, std::memory_order_relaxed);  // the doorbells close next
  MPI_Comm_free(&g_comm);
}

}  // namespace ito::dist::detail
