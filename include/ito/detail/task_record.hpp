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
// The common shape (word_call: a function and arguments of at most two
// trivially copyable words, a result of at most a word) costs two calls into
// the library, queue_word_call and join_task_record_word: the record's
// words travel in registers and its result in result_word, so the library
// writes, runs and frees it without knowing its types. Other calls are
// built here (task_record_of) and their results kept in a result_box.
//
//   state   0            queued, or running
//           finished     ran (did_not_return and error say how)
//           detached     its future was dropped first: whoever runs it frees it
//           waiter W     its future's holder suspended on it; its end wakes W
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
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

// A result kept in the record's own word (task_record::result_word): one of
// at most a word that needs no destructor, or none.
template <class R>
constexpr bool fits_word() {
  if constexpr (std::is_void_v<R> || std::is_reference_v<R>) return std::is_void_v<R>;
  else
    return std::is_trivially_copyable_v<R> && sizeof(R) <= sizeof(std::uint64_t) &&
           alignof(R) <= alignof(std::uint64_t);
}
template <class R>
inline constexpr bool result_fits_word = fits_word<R>();

struct task_record : branch {
  // Destroys what the derived record holds (its result, its object) before
  // its memory goes back; null: nothing. orphaned: nobody will read it.
  void (*destroy)(task_record*, bool orphaned) noexcept = nullptr;
  // Ended without returning: it threw (error holds what) or called
  // ito::exit() (error empty). One flag for the join to test.
  bool did_not_return = false;
  // What the call threw; reported when orphaned (as for a dropped future's
  // ULT), then destroyed, before destroy runs.
  result_box<std::exception_ptr> error;
  // Written before they are read: a result_fits_word result's bytes, once
  // the call returned; a word call's elements (word_call).
  std::uint64_t result_word;
  std::uint64_t call_words[2];
};

// The record get() reads a result of type R from.
template <class R>
struct task_record_with_result : task_record {
  result_box<R> result;
};
template <class R>
using task_record_for =
    std::conditional_t<result_fits_word<R>, task_record, task_record_with_result<R>>;

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
// task_record_memory, a record whose call is the two words (word_call) that
// run reads, and queue_task_record, in one call; null as task_record_memory.
task_record* queue_word_call(void (*run)(branch*) noexcept, std::uint64_t first,
                             std::uint64_t second);
// Returns once r has run: taken back and run here as a call when it is
// still the newest item of this worker's deque (and the stack has room),
// else waited for.
void wait_task_record(task_record* r);
// get()'s join for a result_fits_word result: waits for r as
// wait_task_record does; when its call returned, frees r and gives its
// result_word back; else (it threw, or exited) r stays for get() to report.
struct joined_word {
  std::uint64_t word;
  bool returned;
};
joined_word join_task_record_word(task_record* r);
// After wait_task_record: destroys what r holds and frees it.
void free_task_record(task_record* r) noexcept;
// The future was dropped: r is freed now if it has run, else by whoever
// runs it.
void drop_task_record(task_record* r) noexcept;
// Inside run's handler: keeps the exception being handled in r (nothing
// for ito::exit()) and marks r did_not_return.
void keep_task_exception(task_record* r) noexcept;
// Destroys the exception r keeps, first reporting it when orphaned. Out of
// line, as everything here that reaches libstdc++ (parallel_branch.hpp).
void drop_task_exception(task_record* r, bool orphaned) noexcept;

// Keeps a call's value in r.
template <class R, class Call>
void store_task_result(task_record_for<R>* r, Call&& call) {
  if constexpr (std::is_void_v<R>) {
    std::forward<Call>(call)();
  } else if constexpr (result_fits_word<R>) {
    const R value = std::forward<Call>(call)();
    // One word store, as the join reads it (a narrower store would stall
    // that load).
    std::uint64_t word = 0;
    std::memcpy(&word, &value, sizeof(R));
    r->result_word = word;
  } else {
    r->result.emplace(std::forward<Call>(call)());
  }
}
// A result_fits_word result, out of a word.
template <class R>
R result_from_word(const std::uint64_t& word) noexcept {
  if constexpr (!std::is_void_v<R>) {
    alignas(R) unsigned char bytes[sizeof(R)];
    std::memcpy(bytes, &word, sizeof(R));
    return *std::launder(reinterpret_cast<R*>(bytes));
  }
}

// A call that travels in a record's call_words, built by the library in one
// call (queue_word_call): a function and its arguments, each trivially
// copyable, each at a word boundary, in two words at most, with a
// result_fits_word result. (fib(n - 1): a function pointer and an int.)
template <class F, class... A>
struct word_call {
  using result_type = std::invoke_result_t<std::decay_t<F>, std::decay_t<A>...>;
  static constexpr std::size_t words(std::size_t bytes) { return (bytes + 7) / 8; }
  static constexpr std::size_t count = 1 + sizeof...(A);
  // Element i's first word.
  static constexpr std::size_t word_of(std::size_t i) {
    constexpr std::size_t sizes[] = {sizeof(std::decay_t<F>), sizeof(std::decay_t<A>)...};
    std::size_t w = 0;
    for (std::size_t k = 0; k < i; ++k) w += words(sizes[k]);
    return w;
  }
  static constexpr bool fits =
      result_fits_word<result_type> && word_of(count) <= 2 &&
      std::is_trivially_copyable_v<std::decay_t<F>> && alignof(std::decay_t<F>) <= 8 &&
      ((std::is_trivially_copyable_v<std::decay_t<A>> && alignof(std::decay_t<A>) <= 8) && ...);

  template <class G, class... B>
  static task_record* queue(G&& fn, B&&... args) {
    std::uint64_t w[2] = {0, 0};
    put<0>(w, std::forward<G>(fn), std::forward<B>(args)...);
    return queue_word_call(&run, w[0], w[1]);
  }

  static void run(branch* b) noexcept {
    auto* r = static_cast<task_record*>(b);
    try {
      store_task_result<result_type>(r, [r] { return call(r, std::index_sequence_for<A...>{}); });
    } catch (...) {
      keep_task_exception(r);
    }
  }

 private:
  template <std::size_t I, class X, class... Rest>
  static void put(std::uint64_t* words, X&& x, Rest&&... rest) {
    using E = std::tuple_element_t<I, std::tuple<std::decay_t<F>, std::decay_t<A>...>>;
    const E e(std::forward<X>(x));
    std::memcpy(words + word_of(I), &e, sizeof(E));
    if constexpr (sizeof...(Rest) > 0) put<I + 1>(words, std::forward<Rest>(rest)...);
  }
  // Element I, read word by word: the record was often written a few
  // instructions ago, by two word stores, and a wider load than the store
  // it reads cannot take its value from the store buffer (a stall of a
  // dozen cycles on every child).
  template <std::size_t I>
  static auto element(const task_record* r) noexcept {
    using E = std::tuple_element_t<I, std::tuple<std::decay_t<F>, std::decay_t<A>...>>;
    alignas(E) unsigned char bytes[sizeof(E)];
    const std::uint64_t first = r->call_words[word_of(I)];
    if constexpr (sizeof(E) <= 8) {
      std::memcpy(bytes, &first, sizeof(E));
    } else {
      const std::uint64_t second = r->call_words[word_of(I) + 1];
      std::memcpy(bytes, &first, 8);
      std::memcpy(bytes + 8, &second, sizeof(E) - 8);
    }
    return *std::launder(reinterpret_cast<E*>(bytes));
  }
  template <std::size_t... I>
  static result_type call(const task_record* r, std::index_sequence<I...>) {
    return std::invoke(element<0>(r), element<I + 1>(r)...);
  }
};

template <class F, class... A>
struct task_record_of : task_record_for<std::invoke_result_t<std::decay_t<F>, std::decay_t<A>...>> {
  using result_type = std::invoke_result_t<std::decay_t<F>, std::decay_t<A>...>;
  using call_type = std::tuple<std::decay_t<F>, std::decay_t<A>...>;

  template <class G, class... B>
  explicit task_record_of(G&& fn, B&&... args) : call(std::forward<G>(fn), std::forward<B>(args)...) {
    this->run = &run_call;
    if constexpr (!result_fits_word<result_type>) this->destroy = &destroy_result;
  }

  // Runs once, wherever it runs; what it throws stays in the record.
  static void run_call(branch* b) noexcept {
    auto* self = static_cast<task_record_of*>(b);
    try {
      store_task_result<result_type>(self, [self]() -> result_type {
        return std::apply(
            [](auto&& f, auto&&... a) -> result_type {
              return std::invoke(std::move(f), std::move(a)...);
            },
            self->call);
      });
    } catch (...) {
      keep_task_exception(self);
    }
    self->call.~call_type();
  }
  static void destroy_result(task_record* r, bool) noexcept {
    static_cast<task_record_of*>(r)->result.reset();
  }
  // Never destroyed as a whole: run_call ends the call's life, the result
  // is destroyed through destroy.
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
