// SPDX-License-Identifier: Apache-2.0
// Internal to ito (namespace ito::detail; not for users to name):
// parallel_invoke's queued branch records. Included by ito/parallel.hpp.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <utility>

namespace ito {

namespace detail {

// A branch's state once it has run (0 before; a waiter's descriptor while
// its caller waits).
inline constexpr std::uintptr_t branch_finished = 1;

// One queued branch. `state` and `queued_on` belong to the library.
struct branch {
  void (*run)(branch*) noexcept = nullptr;  // a thief's ULT runs the branch through it
  std::atomic<std::uintptr_t> state{0};     // 0: not finished; 1: finished; else its waiter
  void* queued_on = nullptr;                // the worker whose deque holds it (not for records)
  void* error = nullptr;                    // what the branch threw (keep_current_exception)
};

// Queues b on the calling worker (usage_error(EPERM) outside a ULT). Never
// allocates in steady state.
void push_branch(branch* b);
// True: b was taken back unstarted, so the caller runs it now; false: b has
// run elsewhere (this call waited for it, suspending the caller).
bool take_back_or_wait(branch* b) noexcept;
// Inside a handler: keeps the exception being handled in *error (boxed).
// Out of line, as is everything here that reaches libstdc++: in split-stack
// programs (the lazy and fair_use policies) a function that calls libstdc++
// pays ~8 ns on every call, whichever path it takes (docs/SPLIT_STACKS.md).
void keep_current_exception(void** error) noexcept;
// Rethrows the first of errors[0..n) that is set, after freeing the others.
[[noreturn]] void rethrow_first(void** errors, std::size_t n);

template <class F>
void run_branch(F& fn, void** error) noexcept {
  try {
    fn();
  } catch (...) {
    keep_current_exception(error);
  }
}

template <class F>
struct branch_of : branch {
  explicit branch_of(F& f) noexcept : fn(&f) { run = &run_stolen; }
  branch_of(const branch_of&) = delete;
  static void run_stolen(branch* b) noexcept {
    auto* self = static_cast<branch_of*>(b);
    run_branch(*self->fn, &self->error);
  }
  F* fn;
};

template <class Tuple, std::size_t... I>
void join_branches(Tuple& queued, std::index_sequence<I...>) noexcept {
  constexpr std::size_t n = sizeof...(I);
  // Newest first: the deque gives them back in that order.
  ((take_back_or_wait(&std::get<n - 1 - I>(queued))
        ? run_branch(*std::get<n - 1 - I>(queued).fn, &std::get<n - 1 - I>(queued).error)
        : void()),
   ...);
}

}  // namespace detail

}  // namespace ito
