// SPDX-License-Identifier: Apache-2.0
// Cancellation of ULTs, deferred and asynchronous, as POSIX and NPTL do it.
//
// Each thread's state is one word in its handle's slot (sched/handles.hpp):
// asked (pthread_cancel came), disabled (PTHREAD_CANCEL_DISABLE), async
// (PTHREAD_CANCEL_ASYNCHRONOUS), acting (it is being cancelled: its cleanup
// handlers run and must not be cancelled again). A ULT without a handle has
// never been named, so nobody can have cancelled it: its cancellation points
// cost a load of its handle field.
//
// A thread acts on a cancellation at a cancellation point by exiting with
// PTHREAD_CANCELED: pthread_exit's path, which runs the plain-C cleanup
// handlers and unwinds the stack (C++ destructors, -fexceptions handlers).
// A cancellation point that waits (sleeps, condition and semaphore waits)
// arms its wait (sched/interrupt.hpp): pthread_cancel interrupts it as a
// time-out would end it, and the waiter, back in the call, acts.
// Asynchronous cancellation also interrupts a ULT that computes, through the
// preemption handler (where preemption is active), and one that waits for a
// mutex.
#define ITO_PTHREAD_NO_RENAME 1
#include <pthread.h>

#include "compat/c_create.hpp"
#include "compat/posix_internal.hpp"
#include "compat/posix_thread_signals.hpp"
#include "ito/pthread.h"
#include "sched/handles.hpp"
#include "sched/interrupt.hpp"
#include "sched/preempt.hpp"
#include "sched/resume_action.hpp"

namespace ito::posix {
namespace {

namespace handles = sched::handles;

constexpr std::uint32_t cancel_asked = 1;
constexpr std::uint32_t cancel_disabled = 2;
constexpr std::uint32_t cancel_async = 4;
constexpr std::uint32_t cancel_acting = 8;

// The calling ULT's word; with `name`, a ULT without a handle gets one (its
// state is about to be set), else null for it: nobody can have cancelled it.
std::atomic<std::uint32_t>* own_word(sched::ult* self, bool name) noexcept {
  if (!self || (!self->handle && !name)) return nullptr;
  const handles::value h = handles::of(self);
  return h ? handles::cancel_word(h) : nullptr;
}

bool must_act(std::uint32_t s) noexcept {
  return (s & (cancel_asked | cancel_disabled | cancel_acting)) == cancel_asked;
}

[[noreturn]] void act(std::atomic<std::uint32_t>* word) {
  // Its cleanup handlers may reach cancellation points: they must go on.
  word->fetch_or(cancel_acting | cancel_disabled, std::memory_order_relaxed);
  sched::ult* self = sched::current_ult();
  if (self->async_action_pending.load(std::memory_order_relaxed)) sched::async_action_done(self);
  ito_pthread_exit(PTHREAD_CANCELED);
  __builtin_unreachable();
}

// Sets or clears one of the caller's own bits (disabled, async), reporting
// the old setting as POSIX's value for it. An asynchronous cancellation that
// this makes actionable (enabled with one pending, or turned asynchronous
// with one pending) acts at once.
int change_own_state(std::uint32_t bit, bool on, int* old, int old_if_on, int old_if_off) {
  std::atomic<std::uint32_t>* word = own_word(sched::current_ult(), true);
  if (!word) return EAGAIN;  // no handle to be had (16M live)
  const std::uint32_t before = on ? word->fetch_or(bit, std::memory_order_acq_rel)
                                  : word->fetch_and(~bit, std::memory_order_acq_rel);
  if (old) *old = (before & bit) ? old_if_on : old_if_off;
  const std::uint32_t after = on ? before | bit : before & ~bit;
  if ((after & cancel_async) && must_act(after)) act(word);
  return 0;
}

}  // namespace

void cancellation_point() {
  sched::ult* self = sched::current_ult();
  if (!self || !self->handle) [[likely]] return;
  exit_if_a_handler_asked(self);
  std::atomic<std::uint32_t>* word = own_word(self, false);
  if (word && must_act(word->load(std::memory_order_acquire))) act(word);
}

void exit_if_a_handler_asked(sched::ult* self) {
  if (self->exit_deferred_for != self->id || self->id == 0) [[likely]] return;
  self->exit_deferred_for = 0;
  ito_pthread_exit(self->exit_deferred_value);
}

// The preemption handler's asynchronous action (sched/preempt.hpp): a ULT
// interrupted at a safe point acts on a cancellation it has enabled as
// asynchronous, from inside the signal frame.
// Signals aimed at it (posix_thread_signals.hpp) run their handlers first.
void act_if_async(sched::ult* self) {
  deliver_pending_signals(self);
  std::atomic<std::uint32_t>* word = own_word(self, false);
  const std::uint32_t s = word ? word->load(std::memory_order_acquire) : 0;
  if ((s & cancel_async) && must_act(s)) act(word);
  sched::async_action_done(self);  // not wanted (now): disabled, deferred, or a stale mark
  // A signal aimed at it since its handlers ran: interrupt it again.
  if (has_deliverable_signals(self)) sched::ask_async_action(self);
}

bool begin_cancellable_wait(bool only_async) {
  sched::ult* self = sched::current_ult();
  if (!self || !self->handle) [[likely]] return false;
  std::atomic<std::uint32_t>* word = own_word(self, false);
  const std::uint32_t s = word ? word->load(std::memory_order_relaxed) : cancel_disabled;
  const bool cancellable = !(s & cancel_disabled) && (!only_async || (s & cancel_async));
  // A wait is armed even where no cancellation may end it, so that a
  // handler aimed at the waiter runs in the wait, as NPTL's does in its
  // futex wait (Boehm GC stops a thread that waits with cancellation
  // disabled), including a signal aimed at it after it began to wait.
  for (;;) {
    // A signal aimed at it while it ran (its interrupt note is about to be
    // forgotten below): its handler runs before the thread parks, not at its
    // next switch-in, which a wait nobody ends would never bring.
    if (self->resume_action_pending.load(std::memory_order_relaxed)) [[unlikely]] {
      if (self->resume_action_pending.exchange(false, std::memory_order_acq_rel))
        deliver_pending_signals(self);
    }
    // Forget an interrupt of an earlier wait, then look at the reasons
    // afresh: a cancellation or signal from here on either is seen now or
    // interrupts the wait (pthread_cancel sets the word before it
    // interrupts; an aimed signal asks its resume action before it does).
    sched::clear_interrupt(self);
    if (cancellable && must_act(word->load(std::memory_order_seq_cst))) act(word);
    sched::arm_interruptible_wait(self);
    if (!self->resume_action_pending.load(std::memory_order_seq_cst)) [[likely]] return true;
    sched::disarm_interruptible_wait(self);
  }
}

void after_signal_interrupted_wait() {
  sched::ult* self = sched::current_ult();
  exit_if_a_handler_asked(self);  // the handler's pthread_exit, which NPTL's would end the wait with
  std::atomic<std::uint32_t>* word = own_word(self, false);
  if (!word) return;
  const std::uint32_t s = word->load(std::memory_order_acquire);
  if ((s & cancel_async) && must_act(s)) act(word);
}

bool end_cancellable_wait(bool armed) noexcept {
  return armed && sched::disarm_interruptible_wait(sched::current_ult());
}

// A signal aimed at the ULT interrupts the sleep the same way
// (posix_thread_signals.cpp), and its handler runs as the ULT is switched
// back in: the sleep then ends early, with true (EINTR for the caller).
bool cancellable_sleep_until(std::int64_t deadline_ns) {
  for (;;) {
    const bool armed = begin_cancellable_wait();
    if (!armed) {
      sched::sleep_until_ns(deadline_ns);
      return false;
    }
    detail::waiter me(sched::current_ult());
    const std::uint32_t handlers_before = me.ult->signal_handlers_run;
    detail::timed_park wait(me, deadline_ns, sched::take_interruptible_arm(me.ult));
    wait.arm();
    wait.park("sleep", nullptr);
    if (!end_cancellable_wait(armed)) return false;  // the deadline ended it
    cancellation_point();  // acts, unless the interrupt was stale or a signal's
    if (sched::current_ult()->signal_handlers_run != handlers_before) return true;
    if (sched::monotonic_ns() >= deadline_ns) return false;
  }
}

bool cancellable_sleep_for(long long ns) {
  std::int64_t deadline;
  if (__builtin_add_overflow(sched::monotonic_ns(), ns > 0 ? ns : 0, &deadline))
    deadline = sched::timer_queue::never;
  return cancellable_sleep_until(deadline);
}

}  // namespace ito::posix

namespace handles = ito::sched::handles;
using ito::posix::cancel_acting;
using ito::posix::cancel_asked;
using ito::posix::cancel_async;
using ito::posix::cancel_disabled;

extern "C" {

int ito_pthread_cancel(pthread_t thread) {
  ito::sched::ult* u = nullptr;
  if (ito::compat::find_ult(static_cast<ito_ult_t>(thread), &u) != 0) return ESRCH;
  std::atomic<std::uint32_t>* word = handles::cancel_word(static_cast<handles::value>(thread));
  if (!word) return ESRCH;
  const std::uint32_t before = word->fetch_or(cancel_asked, std::memory_order_seq_cst);
  if (before & (cancel_asked | cancel_acting | cancel_disabled)) return 0;  // acts when it enables
  if (u == ito::sched::current_ult()) {
    if (before & cancel_async) ito::posix::act(word);
    return 0;
  }
  ito::sched::interrupt(u);
  // Asynchronous: also while it runs (the preemption watch interrupts it at
  // a safe point, where one is active) or waits in a mutex.
  if (before & cancel_async) {
    ito::sched::set_async_action(&ito::posix::act_if_async);
    ito::sched::ask_async_action(u);
  }
  return 0;
}

int ito_pthread_setcancelstate(int state, int* oldstate) {
  if (state != PTHREAD_CANCEL_ENABLE && state != PTHREAD_CANCEL_DISABLE) return EINVAL;
  if (ito::posix::ensure_runtime() != 0) return ::pthread_setcancelstate(state, oldstate);
  return ito::posix::change_own_state(cancel_disabled, state == PTHREAD_CANCEL_DISABLE, oldstate,
                                      PTHREAD_CANCEL_DISABLE, PTHREAD_CANCEL_ENABLE);
}

int ito_pthread_setcanceltype(int type, int* oldtype) {
  if (type != PTHREAD_CANCEL_DEFERRED && type != PTHREAD_CANCEL_ASYNCHRONOUS) return EINVAL;
  if (ito::posix::ensure_runtime() != 0) return ::pthread_setcanceltype(type, oldtype);
  return ito::posix::change_own_state(cancel_async, type == PTHREAD_CANCEL_ASYNCHRONOUS, oldtype,
                                      PTHREAD_CANCEL_ASYNCHRONOUS, PTHREAD_CANCEL_DEFERRED);
}

void ito_pthread_testcancel(void) {
  if (!ito::sched::current_ult()) {
    if (ito::posix::ensure_runtime() != 0) return ::pthread_testcancel();
  }
  ito::posix::cancellation_point();
}

}  // extern "C"
