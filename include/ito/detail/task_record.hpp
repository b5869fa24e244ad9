// SPDX-License-Identifier: Apache-2.0
// Internal to ito (namespace ito::detail; not for users to name): the record
// create_thread queues instead of a ULT when the call and its result fit in
// one. Included by ito/thread.hpp.
//
// A record is a parallel_invoke branch (parallel_branch.hpp) that owns its
// call: it waits in its creator's branch deque, and its future's get() takes
// it back and runs it as a plain call (a push, a pop and a call: no stack,
// no descriptor, no switch). Only a record that someone else takes first (a
// thief, or the worker's scheduler while its creator is away) becomes a ULT
// of its own, and only then does get() wait. The record's memory comes from
// its worker's cache, so a future may move anywhere while the record is
// queued.
//
//   state   0            queued, or running
//           finished     ran (result, error or exited say how)
//           detached     its future was dropped first: whoever runs it frees it
//           waiter W     its future's holder suspended on it; its end wakes W
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <new>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ito/detail/parallel_branch.hpp"
#include "ito/detail/task_frame.hpp"

namespace ito {

namespace detail {

// The state of a record whose future was dropped before it ran.
inline constexpr std::uintptr_t task_record_dropped = 2;

struct task_record : branch {
  // Destroys what the record holds (its result, a kept exception) before its
  // memory goes back; orphaned: nobody will read it (a kept exception is
  // reported, as for a dropped future's ULT).
  void (*destroy)(task_record*, bool orphaned) noexcept = nullptr;
  bool exited = false;  // ended by ito::exit(): no result, no exception
  result_box<std::exception_ptr> error;
};

template <class R>
struct task_record_for : task_record {
  result_box<R> result;
};

// A record's whole size: the call and its result must fit (else
// create_thread makes a ULT, whose frame has room for anything).
inline constexpr std::size_t task_record_bytes = 192;
inline constexpr std::size_t task_record_align = 64;  // no two share a line

// Memory for a record from the calling worker's cache; null where records
// are not used (the distributed mode: other processes' thieves take ULTs).
// usage_error(EPERM) outside a ULT.
void* task_record_memory();
// Gives the memory of a record that was never queued back (its call's
// constructor threw).
void free_task_record_memory(void* memory) noexcept;
// Queues r on the calling worker: from here on it counts as a ULT that has
// not finished (the runtime does not stop before it has run).
void queue_task_record(task_record* r) noexcept;
// Returns once r has run: taken back and run here as a call when it is
// still the newest item of this worker's deque (and the stack has room),
// else waited for.
void wait_task_record(task_record* r);
// After wait_task_record: destroys what r holds and frees it.
void free_task_record(task_record* r) noexcept;
// The future was dropped: r is freed now if it has run, else by whoever
// runs it.
void drop_task_record(task_record* r) noexcept;
// Inside run's handler: keeps the exception being handled in r (or marks
// r exited, for ito::exit()).
void keep_task_exception(task_record* r) noexcept;
// Destroys the exception r keeps, first reporting it when orphaned. Out of
// line, as everything here that reaches libstdc++ (parallel_branch.hpp).
void drop_task_exception(task_record* r, bool orphaned) noexcept;

template <class F, class... A>
struct task_record_of : task_record_for<std::invoke_result_t<std::decay_t<F>, std::decay_t<A>...>> {
  using result_type = std::invoke_result_t<std::decay_t<F>, std::decay_t<A>...>;
  using call_type = std::tuple<std::decay_t<F>, std::decay_t<A>...>;

  template <class G, class... B>
  explicit task_record_of(G&& fn, B&&... args) : call(std::forward<G>(fn), std::forward<B>(args)...) {
    this->run = &run_call;
    this->destroy = &destroy_held;
  }

  // Runs once, wherever it runs; what it throws stays in the record.
  static void run_call(branch* b) noexcept {
    auto* self = static_cast<task_record_of*>(b);
    try {
      if constexpr (std::is_void_v<result_type>) {
        std::apply([](auto&& f, auto&&... a) { std::invoke(std::move(f), std::move(a)...); },
                   self->call);
        self->result.has = true;
      } else {
        self->result.emplace(std::apply(
            [](auto&& f, auto&&... a) -> result_type {
              return std::invoke(std::move(f), std::move(a)...);
            },
            self->call));
      }
    } catch (...) {
      keep_task_exception(self);
    }
    self->call.~call_type();
  }
  static void destroy_held(task_record* r, bool orphaned) noexcept {
    auto* self = static_cast<task_record_of*>(r);
    if (self->error.has) [[unlikely]] drop_task_exception(self, orphaned);
    self->result.reset();
    // The call was destroyed when it ran.
    self->~task_record_of();
  }
  // Never destroyed through the member: run_call ends its life.
  ~task_record_of() {}

  union {
    call_type call;
  };
};

// Whether create_thread(fn, args...) may queue a record.
template <class F, class... A>
inline constexpr bool fits_task_record = sizeof(task_record_of<F, A...>) <= task_record_bytes &&
                                         alignof(task_record_of<F, A...>) <= task_record_align;

}  // namespace detail

}  // namespace ito
