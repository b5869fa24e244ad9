// SPDX-License-Identifier: Apache-2.0
// The C++ ULT API: start_main_thread, create_thread, join, yield; futures
// whose result lives in the child's record (task_record.hpp) or at the top
// of its stack (no heap allocation in steady state).
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
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
#include "ito/detail/task_record.hpp"

namespace ito {

template <class R>
class future;

namespace detail {
struct future_access;  // how create_thread fills a future
}  // namespace detail

// The result of create_thread. Move-only. Destroying a future that was never
// waited for detaches its ULT (which still runs).
template <class R>
class future {
 public:
  future() = default;
  future(future&& o) noexcept
      : id_(std::exchange(o.id_, {})),
        result_(o.result_),
        error_(o.error_),
        record_(std::exchange(o.record_, nullptr)) {}
  future& operator=(future&& o) noexcept {
    if (this != &o) {
      drop();
      id_ = std::exchange(o.id_, {});
      result_ = o.result_;
      error_ = o.error_;
      record_ = std::exchange(o.record_, nullptr);
    }
    return *this;
  }
  future(const future&) = delete;
  future& operator=(const future&) = delete;
  ~future() { drop(); }

  bool valid() const noexcept { return id_.p != nullptr || record_ != nullptr; }
  // True when the ULT has finished; never waits. (A child still queued, not
  // started, is not.)
  bool ready() const {
    check_valid("ready");
    if (record_) return record_->state.load(std::memory_order_acquire) == detail::branch_finished;
    return detail::ult_finished(id_);
  }
  // Waits for the ULT to finish, keeping the result for get().
  void wait() const {
    check_valid("wait");
    if (record_) return detail::wait_task_record(record_);
    detail::ult_wait(id_);
  }
  // Waits, then returns the result (or rethrows the ULT's exception). Once only.
  R get() {
    if (record_) [[likely]] return get_from_record();
    check_valid("get");
    return get_from_ult();
  }

 private:
  friend struct detail::future_access;

  void check_valid(const char* what) const {
    if (!valid()) [[unlikely]] detail::throw_invalid_future(what);
  }
  void drop() noexcept {
    if (record_) detail::drop_task_record(std::exchange(record_, nullptr));
    else if (valid()) detail::detach_quietly(std::exchange(id_, {}));
  }
  R get_from_ult() {
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
  // Frees a record when it goes out of scope.
  struct record_releaser {
    detail::task_record* r;
    ~record_releaser() { detail::free_task_record(r); }
  };
  R get_from_record() {
    detail::task_record_for<R>* r = record_;
    if constexpr (detail::result_fits_word<R>) {
      // One call joins, copies the result out and frees the record.
      const detail::joined_word j = detail::join_task_record_word(r);
      record_ = nullptr;  // after the join, which throws outside a ULT
      if (j.returned) [[likely]] return detail::result_from_word<R>(j.word);
      return from_record_that_did_not_return(r);
    } else {
      detail::wait_task_record(r);
      record_ = nullptr;
      if (r->did_not_return) [[unlikely]] return from_record_that_did_not_return(r);
      if constexpr (std::is_reference_v<R> || std::is_trivially_destructible_v<R>) {
        // Nothing left to destroy: only the memory goes back.
        R value = r->result.take();
        detail::free_task_record_memory(r);
        return value;
      } else {
        record_releaser release_at_exit{r};
        return r->result.take();
      }
    }
  }
  // The child threw (rethrown here) or called ito::exit() (no result: an
  // error, except for void); the record is freed either way.
  static R from_record_that_did_not_return(detail::task_record* r) {
    record_releaser release_at_exit{r};
    if (r->error.has) detail::rethrow_stored(&r->error);
    if constexpr (std::is_void_v<R>) return;
    else detail::throw_no_result();
  }

  ult_id id_{};
  detail::result_box<R>* result_ = nullptr;
  detail::result_box<std::exception_ptr>* error_ = nullptr;
  // A queued record instead of a ULT (id_ empty then).
  detail::task_record_for<R>* record_ = nullptr;
};

namespace detail {

struct future_access {
  template <class R>
  static future<R> of_record(task_record_for<R>* r) noexcept {
    future<R> f;
    f.record_ = r;
    return f;
  }
  template <class R>
  static future<R> of_ult(ult_id id, result_box<R>* result, result_box<std::exception_ptr>* error) noexcept {
    future<R> f;
    f.id_ = id;
    f.result_ = result;
    f.error_ = error;
    return f;
  }
};

// A child as a ULT of its own, child-first; near_data: null, or near(p)'s p.
template <class F, class... A>
auto start_ult(const void* near_data, F&& fn, A&&... args)
    -> future<std::invoke_result_t<std::decay_t<F>, std::decay_t<A>...>> {
  using frame = task_frame<F, A...>;
  allocated_ult th = spawn_prepare(sizeof(frame), frame::trivial ? nullptr : &frame::cleanup,
                                   &frame::on_exception, frame::error_offset(),
                                   frame::result_local);
  auto* f = ::new (th.ptr) frame;
  ::new (f->call_bytes) typename frame::call_type(std::forward<F>(fn), std::forward<A>(args)...);
  f->call_alive = true;
  auto result = future_access::of_ult(th.id, &f->result, &f->error);
  if (near_data) spawn_start_near(th, &frame::run, near_data);
  else spawn_start(th, &frame::run);
  return result;
}
// create_thread's ULT where it had a record in mind but got no memory for
// one (records are not used: the distributed mode). Out of line: inlined,
// it made fib's create_thread save three more registers and take 11.9
// instead of 9.4 ns (BENCHMARKS.md, "create_thread's ULT fallback out of
// line, ...").
template <class F, class... A>
[[gnu::noinline, gnu::cold]] auto start_ult_without_record(F&& fn, A&&... args)
    -> future<std::invoke_result_t<std::decay_t<F>, std::decay_t<A>...>> {
  return start_ult(nullptr, std::forward<F>(fn), std::forward<A>(args)...);
}
// create_thread's body: a record where the call and its result fit one,
// else a ULT.
template <class F, class... A>
auto start_thread(F&& fn, A&&... args)
    -> future<std::invoke_result_t<std::decay_t<F>, std::decay_t<A>...>> {
  using R = std::invoke_result_t<std::decay_t<F>, std::decay_t<A>...>;
  if constexpr (word_call<F, A...>::fits) {
    // The elements are trivially copyable: copying them leaves them as they
    // were for the ULT path.
    if (task_record* r = word_call<F, A...>::queue(fn, args...)) [[likely]]
      return future_access::of_record<R>(r);
    return start_ult_without_record(std::forward<F>(fn), std::forward<A>(args)...);
  } else if constexpr (fits_task_record<F, A...>) {
    if (void* memory = task_record_memory()) [[likely]] {
      struct memory_guard {
        void* m;
        ~memory_guard() {
          if (m) [[unlikely]] free_task_record_memory(m);
        }
      } guard{memory};
      auto* r = ::new (memory) task_record_of<F, A...>(std::forward<F>(fn), std::forward<A>(args)...);
      guard.m = nullptr;
      queue_task_record(r);
      return future_access::of_record<R>(r);
    }
    return start_ult_without_record(std::forward<F>(fn), std::forward<A>(args)...);
  } else {
    return start_ult(nullptr, std::forward<F>(fn), std::forward<A>(args)...);
  }
}

}  // namespace detail

// Creates a ULT running fn(args...) (decay-copied, as std::thread does).
//
// Where the call and its result fit in a record (task_record.hpp: 192 bytes
// with the record's own words; fib's call travels in two of them), the
// child is queued on the caller's worker and the caller goes on
// (help-first); the future's get() takes it back and runs it as a plain
// call on the caller's stack when nobody took it first (a push, a pop and a
// call). A child that a thief, or this worker while the caller blocks or
// yields, takes first runs as a ULT of its own, and only then does get()
// wait. A child run by get() runs as part
// of the ULT calling get(): its ULT id, ULT-local values and held locks are
// that ULT's, and it runs on that ULT's stack when at least half a stack
// size is left there (else it gets a ULT and a stack of its own). So a
// caller that waits for a child must do it by a join, a lock, or a yield,
// never by spinning (as with any cooperative ULT).
//
// Otherwise (a larger call, create_thread(own_ult, ...) below,
// create_thread(near(...)), the distributed mode, a flow node's body) the
// child is a ULT whose call lives at the top of its
// stack, and it runs at once (child-first; help-first from the main ULT);
// the caller continues when a worker resumes it. When the copies cannot fit
// that stack, usage_error(E2BIG) is thrown before anything is copied.
template <class F, class... A>
auto create_thread(F&& fn, A&&... args)
    -> future<std::invoke_result_t<std::decay_t<F>, std::decay_t<A>...>> {
  return detail::start_thread(std::forward<F>(fn), std::forward<A>(args)...);
}

// create_thread(own_ult, fn, args...): the child is always a ULT of its own,
// started at once (child-first; help-first from the main ULT), with its own
// id, ULT-local values, lock ownership, exception state and stack, whoever
// runs it and whenever it is joined: for a child that needs a thread's
// identity (it takes a lock its creator holds, keeps ULT-locals, is named
// in reports), or that must start before its creator goes on.
struct own_ult_t {
  explicit own_ult_t() = default;
};
inline constexpr own_ult_t own_ult{};

template <class F, class... A>
auto create_thread(own_ult_t, F&& fn, A&&... args)
    -> future<std::invoke_result_t<std::decay_t<F>, std::decay_t<A>...>> {
  return detail::start_ult(nullptr, std::forward<F>(fn), std::forward<A>(args)...);
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
  return detail::start_ult(where.data, std::forward<F>(fn), std::forward<A>(args)...);
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
