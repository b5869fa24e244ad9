// Why a woken ULT waits for its waker to finish waking it.
//
// sched::make_ready(u) from a thread that is not a worker (the poller, a pool
// thread) pushes u where a worker finds it and then, still inside make_ready,
// reads the runtime to wake a parked worker. Meanwhile u may already run,
// finish, and be the last ULT, and the runtime may be stopped and freed: the
// waker would then read freed memory (ThreadSanitizer shows it). Until the
// scheduler guards that window itself, every waker here sets a flag in the
// woken ULT's own record once make_ready has returned, and the ULT, once
// resumed, waits for that flag before it goes on. The flag is almost always
// set already; the wait costs one load.
#pragma once

#include <atomic>
#include <cstdint>

#include "arch/context.hpp"
#include "sched/scheduler.hpp"

namespace ito::detail {

// Wakes u and then releases it: `released` may be gone after the store.
inline void make_ready_then_release(sched::ult* u, std::atomic<std::uint32_t>& released) noexcept {
  sched::make_ready(u);
  released.store(1, std::memory_order_release);
}

// In the woken ULT: returns once its waker has left make_ready.
inline void wait_for_waker(const std::atomic<std::uint32_t>& released) noexcept {
  for (int spins = 0; released.load(std::memory_order_acquire) == 0; ++spins) {
    if (spins < 64) arch::cpu_relax();
    else sched::yield(false);  // the waker was preempted: let this worker run others
  }
}

}  // namespace ito::detail
