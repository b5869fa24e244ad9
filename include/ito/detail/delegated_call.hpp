// SPDX-License-Identifier: Apache-2.0
// Internal to ito (namespace ito::detail; not for users to name): a delegated
// call's job, which lives on the suspended ULT's stack. Included by
// ito/delegate.hpp.
#pragma once

#include <exception>
#include <functional>
#include <type_traits>

#include "ito/detail/pool_job.hpp"

namespace ito {

enum class delegate_mode;

namespace detail {
// True when the caller is a ULT (delegation pays off only there).
bool delegation_applies() noexcept;
// Posts the job to the delegation pool and waits for `done` as the mode says.
void delegate_and_wait(pool_job* job, completion& done, delegate_mode mode);

// The job lives on the suspended ULT's stack: delegation allocates nothing.
template <class F, class R>
struct delegated_call : pool_job {
  F* fn;
  result_box<R> result;
  std::exception_ptr error;
  completion done;

  explicit delegated_call(F& f) : fn(&f) {
    run = &delegated_call::run_job;
    finish = &delegated_call::finish_job;
  }
  delegated_call(const delegated_call&) = delete;
  delegated_call& operator=(const delegated_call&) = delete;
  ~delegated_call() { result.reset(); }

  static void run_job(pool_job* p) noexcept {
    auto* c = static_cast<delegated_call*>(p);
    try {
      if constexpr (std::is_void_v<R>) {
        std::invoke(*c->fn);
        c->result.has = true;
      } else {
        c->result.emplace(std::invoke(*c->fn));
      }
    } catch (...) {
      c->error = std::current_exception();
    }
  }
  static void finish_job(pool_job* p) noexcept {
    // Wakes the caller: its frame, this job included, may be gone after this.
    static_cast<delegated_call*>(p)->done.signal();
  }
};
}  // namespace detail

}  // namespace ito
