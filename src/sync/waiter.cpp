// SPDX-License-Identifier: Apache-2.0
// Parking and waking: a suspended ULT for ULTs, a futex for plain OS threads.
#include "sync/waiter.hpp"

#include <pthread.h>
#include <time.h>

#include "os/futex.hpp"
#include "sched/idle.hpp"
#include "sched/scheduler.hpp"
#include "sched/worker.hpp"

namespace ito::detail {
namespace {

// The suspend hook: the ULT's context is saved now, so it may be made runnable.
void arrive_after_suspend(sched::ult* self, void* arg) {
  auto* w = static_cast<waiter*>(arg);
  if (w->wakes.fetch_add(1, std::memory_order_acq_rel) != 0) sched::make_ready(self);
}

}  // namespace

sched::ult* calling_ult() noexcept { return sched::current_ult(); }

void count_held_lock_slow(int delta) noexcept {
  if (sched::ult* u = sched::current_ult()) u->must_stay += static_cast<std::uint32_t>(delta);
}

void park(waiter& w, const char* what, const void* object) {
  if (w.ult) {
    const kept_in_process inside;  // woken, it resumes in the primitive it waits in
    sched::suspend(&arrive_after_suspend, &w, what, object);
  } else {
    while (w.wakes.load(std::memory_order_acquire) == 0) os::futex_wait(&w.wakes, 0);
  }
  // Pairs with the waker's release: what it wrote before waking us is visible.
  (void)w.wakes.load(std::memory_order_acquire);
}

bool park_os_until(waiter& w, std::int64_t deadline_ns) {
  while (w.wakes.load(std::memory_order_acquire) == 0) {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec >= deadline_ns) return false;
    os::futex_wait_until(&w.wakes, 0, deadline_ns);
  }
  return true;
}

void unpark(waiter& w) noexcept {
  if (sched::ult* u = w.ult) {
    if (w.wakes.fetch_add(1, std::memory_order_acq_rel) != 0) sched::make_ready(u);
    return;
  }
  w.wakes.store(1, std::memory_order_release);
  // The thread may already have seen the store and left, ending w's life; a
  // futex wake on the stale address can at worst wake some other futex
  // sleeper spuriously, which every futex waiter tolerates.
  os::futex_wake_one(&w.wakes);
}

void unpark_all(waiter* list) noexcept {
  while (list) {
    waiter* next = list->next;  // read first: once woken, the record may be gone
    unpark(*list);
    list = next;
  }
}

// Runs under the timer queue's lock: a claim and at most a make_ready.
void timed_park::on_timeout(sched::timer_entry* t) {
  waiter& w = *static_cast<timer*>(t)->w;
  if (claim(w, by_timeout)) unpark(w);
}

void timed_park::arm() {
  if (!w_.ult || deadline_ns_ == sched::timer_queue::never) return;
  sched::runtime_state* rt = sched::current_worker()->rt;
  timer_.deadline_ns = deadline_ns_;
  timer_.fire = &on_timeout;
  timer_.w = &w_;
  rt->timers.add(&timer_);
  rt_ = rt;
  sched::notify_work(rt);  // a parked worker must shorten its sleep to the new deadline
}

void timed_park::disarm() noexcept {
  if (!rt_) return;
  rt_->timers.cancel(&timer_);  // once it returns, on_timeout is not running
  rt_ = nullptr;
}

void timed_park::on_interrupt(sched::interruptible_wait* i) noexcept {
  waiter& w = *static_cast<interrupt_record*>(i)->w;
  if (claim(w, by_interrupt)) unpark(w);
}

// The record is published while the ULT is queued, and taken back before the
// frame may go; an interrupt asked before it was published ends the park at
// once (the handshake lets the park return without suspending for long).
void timed_park::park_interruptible(const char* what, const void* object) {
  interrupt_record record;
  record.end = &on_interrupt;
  record.w = &w_;
  if (!sched::publish_interruptible(w_.ult, &record)) on_interrupt(&record);
  detail::park(w_, what, object);
  sched::unpublish_interruptible(w_.ult, &record);
}

bool timed_park::park(const char* what, const void* object) {
  if (w_.ult) {
    if (interruptible_) park_interruptible(what, object);
    else detail::park(w_, what, object);
    disarm();
    const std::uint32_t end = w_.ended_by.load(std::memory_order_acquire);
    if (end == by_interrupt) sched::mark_interrupted(w_.ult);
    return end == by_timeout || end == by_interrupt;
  }
  if (deadline_ns_ == sched::timer_queue::never) {
    detail::park(w_, what, object);
    return false;
  }
  if (park_os_until(w_, deadline_ns_)) return false;
  if (claim(w_, by_timeout)) return true;
  detail::park(w_, what, object);  // a wake won the claim: its unpark is on the way
  return false;
}

}  // namespace ito::detail
