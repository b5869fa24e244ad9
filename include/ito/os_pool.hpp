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
#include "ito/detail/pool_job.hpp"

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
