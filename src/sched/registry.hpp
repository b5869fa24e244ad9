// SPDX-License-Identifier: Apache-2.0
// Every ULT descriptor that holds a stack (live ULTs and the ones cached for
// reuse), per worker, so that a hang report or a dump can list the live ones.
// Touched only when a descriptor is made or gives its stack back — never when
// a cached one is reused — so the spawn and join paths do not see it.
#pragma once

#include <mutex>

namespace ito::sched {

struct ult;
struct worker;
struct runtime_state;

struct ult_registry {
  std::mutex lock;
  ult* head = nullptr;
};

void registry_add(worker* w, ult* u) noexcept;
void registry_remove(ult* u) noexcept;

// Calls visit(u, arg) for every registered descriptor, each list under its lock.
void registry_visit(runtime_state* rt, void (*visit)(ult* u, void* arg), void* arg);

}  // namespace ito::sched
