// SPDX-License-Identifier: Apache-2.0
// ito::os_pool: an elastic pool of reusable OS threads. A thread runs a job,
// then sleeps until it is handed the next one; the pool grows when a job finds
// no sleeping thread, and a thread going to sleep retires when more than
// total/8 + bias threads would be idle (see docs/IO.md). It works with or without the ULT runtime.
//
//   ito::os_pool pool;                       // ITO_POOL_MIN/MAX/BIAS or defaults
//   auto f = pool.submit(std::plus<>{}, 1, 2);
//   if (!f.ready()) { /* do something else */ }
//   int three = f.get();                     // a ULT is suspended, a thread blocks
#pragma once

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ito/error.hpp"
#include "ito/options.hpp"
#include "ito/thread.hpp"

namespace ito {

// Unset fields are filled from ITO_POOL_MIN, ITO_POOL_MAX, ITO_POOL_BIAS, then
// from the defaults below.
struct os_pool_options {
  // Started by the constructor; the pool never retires below this many.
  std::optional<unsigned> min_threads;
  // The most threads at once; further jobs wait in a FIFO queue.
  std::optional<unsigned> max_threads;
  // Idle threads tolerated beyond total/8 before one retires (positive).
  std::optional<unsigned> bias;

  static constexpr unsigned default_min = 0;
  static constexpr unsigned default_max = 256;
  static constexpr unsigned default_bias = 2;
  static constexpr unsigned limit_max = 65536;   // max_threads in [1, limit_max]
  static constexpr unsigned limit_bias = 65536;  // bias in [1, limit_bias]
};

// Fills every unset field (environment, then defaults) and checks them all:
// throws config_error naming the field or ITO_POOL_* variable and its range.
os_pool_options resolve_pool_options(os_pool_options requested);

// A snapshot of a pool's counters.
struct os_pool_stats {
  unsigned total = 0;     // threads alive (running a job, about to, or asleep)
  unsigned sleeping = 0;  // threads asleep, waiting for a job
  unsigned queued = 0;    // jobs waiting for a thread
  std::uint64_t started = 0;   // threads ever started
  std::uint64_t retired = 0;   // threads ended by the retire rule
  std::uint64_t jobs_run = 0;  // jobs finished
};

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

// The result of os_pool::submit. Move-only; get() once. Dropping a future that
// was never waited for is fine: the job still runs, its result is discarded.
template <class R>
class os_future {
 public:
  os_future() = default;
  os_future(os_future&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  os_future& operator=(os_future&& o) noexcept {
    if (this != &o) {
      if (s_) s_->release();
      s_ = std::exchange(o.s_, nullptr);
    }
    return *this;
  }
  os_future(const os_future&) = delete;
  os_future& operator=(const os_future&) = delete;
  ~os_future() {
    if (s_) s_->release();
  }

  bool valid() const noexcept { return s_ != nullptr; }
  // True once the job has finished (returned or thrown); never waits.
  bool ready() const {
    check("ready");
    return s_->done.done();
  }
  // Waits for the job: a ULT is suspended, an OS thread blocks.
  void wait() const {
    check("wait");
    s_->done.wait();
  }
  // Waits, then returns the job's value or rethrows its exception. Once only.
  R get() {
    check("get");
    s_->done.wait();
    struct drop_at_exit {
      detail::future_state<R>* s;
      ~drop_at_exit() { s->release(); }
    } drop{std::exchange(s_, nullptr)};
    if (drop.s->error) {
      // Moved out, so that the exception's last owner is this thread (the
      // pool thread may free the state).
      std::exception_ptr e = std::move(drop.s->error);
      std::rethrow_exception(std::move(e));
    }
    return drop.s->result.take();
  }

 private:
  friend class os_pool;
  explicit os_future(detail::future_state<R>* s) noexcept : s_(s) {}
  void check(const char* what) const {
    if (!s_)
      throw usage_error(EINVAL, std::string("ito::os_future::") + what +
                                    ": no job (already taken by get, moved from, or empty)");
  }
  detail::future_state<R>* s_ = nullptr;
};

class os_pool {
 public:
  // Starts min_threads threads. Throws config_error for bad options or a bad
  // ITO_POOL_* variable, std::system_error if a minimum thread cannot start.
  explicit os_pool(const os_pool_options& requested = {});
  // Runs every job still queued (none is dropped), waits for the running ones,
  // then ends all threads. From a ULT, the ULT is suspended meanwhile. Must not
  // be called from one of this pool's own threads (that aborts).
  ~os_pool();
  os_pool(const os_pool&) = delete;
  os_pool& operator=(const os_pool&) = delete;

  // Runs fn(args...) (decay-copied) on a pool thread; the future holds the
  // plain return value. Wakes a sleeping thread, else starts one (below max),
  // else queues the job. Throws std::system_error only if no thread exists and
  // none can be started.
  template <class F, class... A>
  auto submit(F&& fn, A&&... args)
      -> os_future<std::invoke_result_t<std::decay_t<F>, std::decay_t<A>...>> {
    using R = std::invoke_result_t<std::decay_t<F>, std::decay_t<A>...>;
    // One allocation per submit: the shared state the future and the pool
    // thread both reach (delegate() avoids even this; see ito/delegate.hpp).
    auto* s = new detail::task_state<R, std::decay_t<F>, std::decay_t<A>...>(
        std::forward<F>(fn), std::forward<A>(args)...);
    try {
      post(s);
    } catch (...) {
      s->call.reset();
      delete s;
      throw;
    }
    return os_future<R>(s);
  }

  // The low-level entry: job->run(job) runs on a pool thread. The caller owns
  // the job's memory and keeps it alive until run reports.
  void post(detail::pool_job* job);

  os_pool_stats stats() const;
  const os_pool_options& settings() const noexcept;

 private:
  detail::pool_engine* engine_;
};

}  // namespace ito
