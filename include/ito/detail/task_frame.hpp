// SPDX-License-Identifier: Apache-2.0
// Internal to ito (namespace ito::detail; not for users to name): the frame
// create_thread builds at the top of a new ULT's stack, and the box a result
// or an exception is kept in. Included by ito/thread.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <new>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ito/ult.hpp"

namespace ito {

namespace detail {

// Holds a result of any type, references included.
template <class R>
struct result_box {
  alignas(R) unsigned char bytes[sizeof(R)];
  bool has = false;
  template <class... A>
  void emplace(A&&... a) {
    ::new (bytes) R(std::forward<A>(a)...);
    has = true;
  }
  R take() { return std::move(*std::launder(reinterpret_cast<R*>(bytes))); }
  void reset() noexcept {
    if (has) std::launder(reinterpret_cast<R*>(bytes))->~R();
    has = false;
  }
};
template <class R>
struct result_box<R&> {
  R* ptr = nullptr;
  bool has = false;
  void emplace(R& r) { ptr = &r, has = true; }
  R& take() { return *ptr; }
  void reset() noexcept { has = false; }
};
template <>
struct result_box<void> {
  bool has = false;
  void take() {}
  void reset() noexcept { has = false; }
};

// The cold ends of future's calls, out of line: in split-stack programs (the
// lazy and fair_use policies) a function that calls into libstdc++ (throw,
// rethrow, catch) pays ~8 ns on every call, whichever path it takes.
[[noreturn]] void rethrow_stored(result_box<std::exception_ptr>* error);
[[noreturn]] void throw_invalid_future(const char* what);
[[noreturn]] void throw_no_result();
void detach_quietly(ult_id id) noexcept;  // a usage_error (runtime gone) is dropped
// An exception that no join will ever see (its future was dropped): said on
// stderr with its type and what(), then destroyed.
void report_orphaned_exception(result_box<std::exception_ptr>* error,
                               unsigned long long ult_id) noexcept;

template <class F, class... Args>
struct task_frame {
  using result_type = std::invoke_result_t<std::decay_t<F>, std::decay_t<Args>...>;
  using call_type = std::tuple<std::decay_t<F>, std::decay_t<Args>...>;
  // Nothing to destroy at release unless an exception is stored (the boxes
  // below are raw storage: what they hold decides).
  static constexpr bool trivial =
      std::is_trivially_destructible_v<call_type> &&
      (std::is_void_v<result_type> || std::is_reference_v<result_type> ||
       std::is_trivially_destructible_v<result_type>);

  // A result that cannot be copied byte for byte to another process.
  static constexpr bool result_local =
      !std::is_void_v<result_type> && !std::is_reference_v<result_type> &&
      !std::is_trivially_copyable_v<result_type>;

  alignas(call_type) unsigned char call_bytes[sizeof(call_type)];
  bool call_alive = false;
  result_box<result_type> result;
  // Boxed, so that a frame of trivial types needs no cleanup call at release
  // (the fib path); storing an exception adds one.
  result_box<std::exception_ptr> error;

  call_type& call() { return *std::launder(reinterpret_cast<call_type*>(call_bytes)); }
  // Where `error` lies (the distributed mode moves an exception between
  // processes through it). No virtual bases here: offsetof is exact.
  static constexpr std::uint32_t error_offset() {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
    return static_cast<std::uint32_t>(offsetof(task_frame, error));
#pragma GCC diagnostic pop
  }
  void destroy_call() noexcept {
    if (call_alive) call().~call_type();
    call_alive = false;
  }

  // No try/catch here: the ULT's entry catches and calls on_exception.
  static void run(void* p) {
    auto* self = static_cast<task_frame*>(p);
    if constexpr (std::is_void_v<result_type>) {
      std::apply([](auto&& f, auto&&... a) { std::invoke(std::move(f), std::move(a)...); },
                 self->call());
      self->result.has = true;
    } else {
      self->result.emplace(std::apply(
          [](auto&& f, auto&&... a) -> result_type {
            return std::invoke(std::move(f), std::move(a)...);
          },
          self->call()));
    }
    self->destroy_call();
  }
  // Inside the handler at the ULT's entry, when run threw; `exiting`: it was
  // ito::exit(), which leaves no result and no exception.
  static void on_exception(void* p, bool exiting) noexcept {
    auto* self = static_cast<task_frame*>(p);
    self->destroy_call();
    if (exiting) return;
    self->error.emplace(std::current_exception());
    if constexpr (trivial) detail::set_own_cleanup(&cleanup);
  }
  // orphaned_id: the ULT's id when nobody joined it, else 0.
  static void cleanup(void* p, unsigned long long orphaned_id) noexcept {
    auto* self = static_cast<task_frame*>(p);
    if (orphaned_id && self->error.has) [[unlikely]]
      detail::report_orphaned_exception(&self->error, orphaned_id);
    self->destroy_call();
    self->result.reset();
    self->error.reset();
    self->~task_frame();
  }
};

}  // namespace detail

}  // namespace ito
