// SPDX-License-Identifier: Apache-2.0
// Where the distributed mode's MPI-calling functions run.
#pragma once

#include <utility>

#include "ito/delegate.hpp"
#include "sched/scheduler.hpp"
#include "sched/ult.hpp"

namespace ito::dist::detail {

// MPI calls need more stack than a ULT's 64 KiB (UCX overflowed one, past its
// guard, in a fence called from a ULT): from a ULT with a stack of its own,
// the call runs on a thread of the delegation pool while only this ULT
// waits; from an OS thread's stack (the main ULT included) it runs here.
template <class F>
void on_a_large_stack(F&& fn) {
  const sched::ult* u = sched::current_ult();
  if (u && u->stack) ito::delegate(std::forward<F>(fn));
  else fn();
}

}  // namespace ito::dist::detail
