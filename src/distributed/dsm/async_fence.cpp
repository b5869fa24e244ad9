// SPDX-License-Identifier: Apache-2.0
#include "distributed/dsm/async_fence.hpp"

#include <time.h>

#include <atomic>
#include <cstdio>
#include <exception>
#include <functional>
#include <utility>

#include "distributed/dist_state.hpp"
#include "distributed/dsm/dsm.hpp"
#include "ito/delegate.hpp"
#include "ito/dist.hpp"
#include "ito/os_pool.hpp"

namespace ito::dist {
namespace {

std::atomic<int> g_pending{0};  // asynchronous fences queued or running

void report_callback_exception(const char* fence) noexcept {
  try {
    throw;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ito: dist: the callback of %s threw: %s\n", fence, e.what());
  } catch (...) {
    std::fprintf(stderr, "ito: dist: the callback of %s threw a non-std exception\n", fence);
  }
}

void run_async(void (*fence)(), std::function<void()> done, const char* name) {
  detail::require(name);
  g_pending.fetch_add(1, std::memory_order_relaxed);
  try {
    delegation_pool().submit([fence, name, done = std::move(done)] {
      fence();
      if (done) {
        try {
          done();
        } catch (...) {
          report_callback_exception(name);
        }
      }
      g_pending.fetch_sub(1, std::memory_order_release);
    });
  } catch (...) {
    g_pending.fetch_sub(1, std::memory_order_relaxed);
    throw;
  }
}

}  // namespace

void sd_fence_async(std::function<void()> done) {
  run_async(&detail::sd_fence, std::move(done), "ito::dist::sd_fence_async");
}

void si_fence_async(std::function<void()> done) {
  run_async(&detail::si_fence, std::move(done), "ito::dist::si_fence_async");
}

namespace detail {

void wait_for_async_fences() noexcept {
  const timespec pause{0, 50'000};
  while (g_pending.load(std::memory_order_acquire) != 0) nanosleep(&pause, nullptr);
}

}  // namespace detail
}  // namespace ito::dist
