// SPDX-License-Identifier: Apache-2.0
#include "sched/registry.hpp"

#include "sched/scheduler.hpp"

namespace ito::sched {

void registry_add(worker* w, ult* u) noexcept {
  ult_registry& r = w->registry;
  std::lock_guard<std::mutex> hold(r.lock);
  u->registry = &r;
  u->registry_prev = nullptr;
  u->registry_next = r.head;
  if (r.head) r.head->registry_prev = u;
  r.head = u;
}

void registry_remove(ult* u) noexcept {
  ult_registry* r = u->registry;
  if (!r) return;
  std::lock_guard<std::mutex> hold(r->lock);
  if (u->registry_prev) u->registry_prev->registry_next = u->registry_next;
  else r->head = u->registry_next;
  if (u->registry_next) u->registry_next->registry_prev = u->registry_prev;
  u->registry = nullptr;
}

void registry_visit(runtime_state* rt, void (*visit)(ult* u, void* arg), void* arg) {
  for (auto& w : rt->workers) {
    std::lock_guard<std::mutex> hold(w->registry.lock);
    for (ult* u = w->registry.head; u; u = u->registry_next) visit(u, arg);
  }
}

}  // namespace ito::sched
