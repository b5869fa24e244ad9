// SPDX-License-Identifier: Apache-2.0
// Suspending ULTs and parking OS threads until a flow event happens.
#include "flow/waiting.hpp"

#include <cerrno>

#include "ito/flow.hpp"
#include "os/futex.hpp"
#include "sched/scheduler.hpp"

namespace ito::flow::detail {
namespace {

struct enlisting {
  bool (*enlist)(flow_waiter*, void*);
  void* arg;
  flow_waiter* record;
};

// Runs once the ULT's context is saved: only now may a waker make it runnable.
void enlist_after_suspend(sched::ult* self, void* p) {
  auto* e = static_cast<enlisting*>(p);
  if (!e->enlist(e->record, e->arg)) sched::make_ready(self);
}

}  // namespace

flow_waiter* waiter_list::take_reached(std::uint64_t reached) noexcept {
  flow_waiter* taken = nullptr;
  flow_waiter** link = &head_;
  while (flow_waiter* w = *link) {
    if (w->target <= reached) {
      *link = w->next;
      w->next = taken;
      taken = w;
    } else {
      link = &w->next;
    }
  }
  return taken;
}

void wake(flow_waiter* w) noexcept {
  if (sched::ult* u = w->ult) {
    sched::make_ready(u);
    return;
  }
  w->woken.store(1, std::memory_order_release);
  // The thread may have seen the store and left already; a futex wake on a
  // stale address at worst wakes some other futex sleeper spuriously.
  os::futex_wake_one(&w->woken);
}

void block(bool (*enlist)(flow_waiter*, void*), void* arg, std::uint64_t target) {
  flow_waiter record;
  record.target = target;
  sched::worker* w = sched::current_worker();
  if (w && !w->current)
    throw flow_error(EDEADLK, "ito::flow: a node body cannot wait (it runs to completion); "
                              "split the work into a request node and a result node");
  if (w) {
    record.ult = w->current;
    enlisting e{enlist, arg, &record};
    sched::suspend(&enlist_after_suspend, &e, "flow::completion::wait");
    return;
  }
  if (!enlist(&record, arg)) return;
  while (record.woken.load(std::memory_order_acquire) == 0) os::futex_wait(&record.woken, 0);
}

}  // namespace ito::flow::detail
