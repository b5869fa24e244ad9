// SPDX-License-Identifier: Apache-2.0
// Internal to ito (namespace ito::detail; not for users to name): os_pool's
// jobs, the one-shot completion a waiter sleeps on, and os_future's shared
// state. Included by ito/os_pool.hpp and ito/delegate.hpp.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ito/detail/task_frame.hpp"  // result_box

namespace ito {

namespace detail {

// A unit of work for a pool thread: run(job) does the work and keeps its
// result; finish(job) reports it, and the job may be gone from then on. The
// pool calls finish once the thread is ready for more work (back on the idle
// list, or holding the next job), so a caller that submits again as soon as it
// is woken finds that thread instead of starting another. Intrusive, so that a
// job can live anywhere: on the heap (os_future) or on a suspended ULT's stack
// (delegate), with no allocation by the pool.
struct pool_job {
  void (*run)(pool_job* self) noexcept = nullptr;
  void (*finish)(pool_job* self) noexcept = nullptr;
  pool_job* next = nullptr;  // the pool's queue link
};

// A one-shot event: one waiter (a ULT or an OS thread), one signal. A waiting
// ULT is suspended and made runnable by the signalling thread directly.
class completion {
 public:
  completion() = default;
  completion(const completion&) = delete;
  completion& operator=(const completion&) = delete;

  bool done() const noexcept { return state_.load(std::memory_order_acquire) == 1; }
  // Returns once signal() has been called. From a ULT the ULT is suspended
  // (its worker runs others) unless block_thread, which blocks the OS thread.
  void wait(bool block_thread = false) noexcept;
  // Wakes the waiter. The completion may be destroyed as soon as the waiter
  // returns, so the signaller must not touch it after this call.
  void signal() noexcept;

 private:
  friend struct completion_access;
  // 0 pending, 1 done, 2 an OS thread waits on os_word_, else the waiting ULT.
  std::atomic<std::uintptr_t> state_{0};
  // The futex word of an OS-thread waiter: 1 once signalled.
  std::atomic<std::uint32_t> os_word_{0};
};

// An os_future's shared state: the pool thread and the future each hold a
// reference; the last to let go frees it.
template <class R>
struct future_state : pool_job {
  std::atomic<int> refs{2};
  completion done;
  result_box<R> result;
  std::exception_ptr error;
  void (*destroy)(future_state* self) noexcept = nullptr;

  void release() noexcept {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) destroy(this);
  }
};

template <class R, class F, class... A>
struct task_state final : future_state<R> {
  std::optional<std::tuple<F, A...>> call;

  template <class G, class... B>
  explicit task_state(G&& g, B&&... b) {
    call.emplace(std::forward<G>(g), std::forward<B>(b)...);
    this->run = &task_state::run_job;
    this->finish = &task_state::finish_job;
    this->destroy = &task_state::destroy_state;
  }

  static void run_job(pool_job* p) noexcept {
    auto* s = static_cast<task_state*>(p);
    try {
      if constexpr (std::is_void_v<R>) {
        std::apply([](auto&& f, auto&&... a) { std::invoke(std::move(f), std::move(a)...); },
                   *s->call);
        s->result.has = true;
      } else {
        s->result.emplace(std::apply(
            [](auto&& f, auto&&... a) -> R { return std::invoke(std::move(f), std::move(a)...); },
            *s->call));
      }
    } catch (...) {
      s->error = std::current_exception();
    }
    // Whatever the callable captured is released before get() returns, as
    // with std::async.
    s->call.reset();
  }
  static void finish_job(pool_job* p) noexcept {
    auto* s = static_cast<task_state*>(p);
    s->done.signal();
    s->release();
  }
  static void destroy_state(future_state<R>* p) noexcept {
    auto* s = static_cast<task_state*>(p);
    s->result.reset();
    delete s;
  }
};

class pool_engine;

}  // namespace detail

}  // namespace ito
