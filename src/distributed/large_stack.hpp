// SPDX-License-Identifier: Apache-2.0
// Where the distributed mode's MPI-calling functions run.
#pragma once

#include <type_traits>
#include <utility>

#include "ito/delegate.hpp"
#include "sched/scheduler.hpp"
#include "sched/ult.hpp"

namespace ito::dist::detail {

// MPI calls need more stack than a ULT's 64 KiB: MPICH's handler of an
// incoming active message, which any MPI call's progress may run, takes a
// 128 KiB frame (UCX overflowed a ULT's stack past its guard in a fence, and
// MPICH in a checkout's flush). From a ULT with a stack of its own, the call
// runs on a thread of the delegation pool while only this ULT waits; from an
// OS thread's stack (the main ULT included) it runs here.
template <class F>
void on_a_large_stack(F&& fn) {
  const sched::ult* u = sched::current_ult();
  if (u && u->stack) ito::delegate(std::forward<F>(fn));
  else fn();
}

// Runs body(arg) to its end on the calling worker's signal stack (1 MiB, the
// one the DSM's fault handler runs MPI on), on this OS thread, when called
// from a ULT with a stack of its own; elsewhere (an OS thread's stack, the
// signal stack already) it runs here. For short MPI calls made under a lock
// the OS thread must keep (the DSM's std::mutex), which a delegated call
// cannot hold. body's exception is rethrown here. The body must not suspend
// the ULT: the signal stack is the worker's, not the ULT's.
void run_on_signal_stack(void (*body)(void*), void* arg);

template <class F>
void on_the_signal_stack(F&& fn) {
  run_on_signal_stack([](void* f) { (*static_cast<std::remove_reference_t<F>*>(f))(); }, &fn);
}

}  // namespace ito::dist::detail
