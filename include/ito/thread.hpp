// SPDX-License-Identifier: Apache-2.0
// The C++ ULT API: start_main_thread, create_thread, join, yield; futures
// whose result lives at the top of the child's stack (no heap allocation).
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <new>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ito/error.hpp"
#include "ito/runtime.hpp"
#include "ito/ult.hpp"
#include "ito/detail/task_frame.hpp"

namespace ito {

template <class R>
class future;

namespace detail {
template <class F, class... A>
auto start_thread(const void* near_data, F&& fn, A&&... args)
    -> future<std::invoke_result_t<std::decay_t<F>, std::decay_t<A>...>>;
}  // namespace detail

// The result of create_thread. Move-only. Destroying a future that was never
// waited for detaches its ULT.
template <class R>
class future {
 public:
  future() = default;
  future(future&& o) noexcept : id_(std::exchange(o.id_, {})), result_(o.result_), error_(o.error_) {}
  future& operator=(future&& o) noexcept {
    if (this != &o) {
      drop();
      id_ = std::exchange(o.id_, {});
      result_ = o.result_;
      error_ = o.error_;
    }
    return *this;
  }
  future(const future&) = delete;
  future& operator=(const future&) = delete;
  ~future() { drop(); }

  bool valid() const noexcept { return id_.p != nullptr; }
  // True when the ULT has finished; never waits.
  bool ready() const {
    check_valid("ready");
    return detail::ult_finished(id_);
  }
  // Waits for the ULT to finish, keeping the result for get().
  void wait() const {
    check_valid("wait");
    detail::ult_wait(id_);
  }
  // Waits, then returns the result (or rethrows the ULT's exception). Once only.
  R get() {
    check_valid("get");
    detail::ult_wait(id_);
    ult_id id = std::exchange(id_, {});
    struct releaser {
      ult_id id;
      ~releaser() { detail::ult_release(id); }
    } release_at_exit{id};
    if (error_->has) [[unlikely]] detail::rethrow_stored(error_);
    if (!result_->has) [[unlikely]] {
      if constexpr (std::is_void_v<R>) return;
      else detail::throw_no_result();
    }
    return result_->take();
  }

 private:
  template <class F, class... A>
  friend auto detail::start_thread(const void* near_data, F&& fn, A&&... args)
      -> future<std::invoke_result_t<std::decay_t<F>, std::decay_t<A>...>>;

  void check_valid(const char* what) const {
    if (!valid()) [[unlikely]] detail::throw_invalid_future(what);
  }
  void drop() noexcept {
    if (valid()) detail::detach_quietly(std::exchange(id_, {}));
  }

  ult_id id_{};
  detail::result_box<R>* result_ = nullptr;
  detail::result_box<std::exception_ptr>* error_ = nullptr;
};

namespace detail {

// create_thread's body; near_data: null, or near(p)'s p.
template <class F, class... A>
auto start_thread(const void* near_data, F&& fn, A&&... args)
    -> future<std::invoke_result_t<std::decay_t<F>, std::decay_t<A>...>> {
  using frame = task_frame<F, A...>;
  using R = typename frame::result_type;
  allocated_ult th = spawn_prepare(sizeof(frame), frame::trivial ? nullptr : &frame::cleanup,
                                   &frame::on_exception, frame::error_offset(),
                                   frame::result_local);
  auto* f = ::new (th.ptr) frame;
  ::new (f->call_bytes) typename frame::call_type(std::forward<F>(fn), std::forward<A>(args)...);
  f->call_alive = true;
  future<R> result;
  result.id_ = th.id;
  result.result_ = &f->result;
  result.error_ = &f->error;
  if (near_data) spawn_start_near(th, &frame::run, near_data);
  else spawn_start(th, &frame::run);
  return result;
}

}  // namespace detail

// Creates a ULT running fn(args...) (decay-copied, as std::thread does) and
// switches to it at once; the caller continues when a worker resumes it.
// The copies live at the top of the new ULT's stack: when they cannot fit it,
// usage_error(E2BIG) is thrown before anything is copied.
template <class F, class... A>
auto create_thread(F&& fn, A&&... args)
    -> future<std::invoke_result_t<std::decay_t<F>, std::decay_t<A>...>> {
  return detail::start_thread(nullptr, std::forward<F>(fn), std::forward<A>(args)...);
}

// Where a new ULT should run: near(p) names the data it will work on. In the
// distributed mode (ito/dist.hpp), a ULT created near DSM data that a rank of
// another node holds (its home) starts on that rank, so that a loop over a
// distributed array computes each part where it lives; the creator goes on
// at once (help-first) and joins it as any other. A hint: anywhere else (one
// process, ranks that share one copy, data held here or not yet placed, a
// result that is not trivially copyable), it is create_thread(fn, args...).
struct near {
  explicit near(const void* data) noexcept : data(data) {}
  const void* data;
};

template <class F, class... A>
auto create_thread(near where, F&& fn, A&&... args)
    -> future<std::invoke_result_t<std::decay_t<F>, std::decay_t<A>...>> {
  return detail::start_thread(where.data, std::forward<F>(fn), std::forward<A>(args)...);
}

// Waits for the ULT and returns its result: decltype(fn(args...)), references kept.
template <class R>
R join(future<R>&& f) {
  return f.get();
}
template <class R>
R join(future<R>& f) {
  return f.get();
}

// Runs fn(args...) as the first ULT on `workers` workers; returns its result
// once it ends and every other ULT has finished.
template <class F, class... A>
decltype(auto) start_main_thread_with_worker_size(std::size_t workers, F&& fn, A&&... args) {
  options o;
  o.workers = static_cast<unsigned>(workers);
  runtime rt(o);
  return std::invoke(std::forward<F>(fn), std::forward<A>(args)...);
}

// As above with one worker per CPU (or ITO_WORKERS).
template <class F, class... A>
decltype(auto) start_main_thread(F&& fn, A&&... args) {
  runtime rt;
  return std::invoke(std::forward<F>(fn), std::forward<A>(args)...);
}

}  // namespace ito
