// SPDX-License-Identifier: Apache-2.0
// ito::counting_semaphore. count_ alone serves the uncontended cases. A caller
// that finds no permit decrements it below zero, which registers it as a
// waiter before it reaches the queue; a release that sees a negative count
// owes that many waiters a permit and hands them over under the queue lock.
// A waiter that has not reached the queue yet finds its permit in unclaimed_.
#include <algorithm>
#include <cerrno>

#include "ito/error.hpp"
#include "ito/sync.hpp"
#include "sync/waiter.hpp"

namespace ito {

counting_semaphore::counting_semaphore(std::ptrdiff_t initial) : count_(initial) {
  if (initial < 0) throw usage_error(EINVAL, "ito::counting_semaphore: negative initial count");
}

bool counting_semaphore::try_acquire() noexcept {
  for (std::ptrdiff_t c = count_.load(std::memory_order_relaxed); c > 0;) {
    if (count_.compare_exchange_weak(c, c - 1, std::memory_order_acquire,
                                     std::memory_order_relaxed))
      return true;
  }
  return false;
}

void counting_semaphore::acquire() {
  std::ptrdiff_t c = count_.load(std::memory_order_relaxed);
  if (c > 0 && count_.compare_exchange_strong(c, c - 1, std::memory_order_acquire,
                                              std::memory_order_relaxed)) [[likely]]
    return;
  acquire_contended();
}

[[gnu::noinline]] void counting_semaphore::acquire_contended() {
  if (count_.fetch_sub(1, std::memory_order_acquire) > 0) return;  // a permit came meanwhile
  // Registered as a waiter: exactly one release unit is now owed to us.
  detail::waiter me(detail::calling_ult());
  lock_.lock();
  if (unclaimed_ > 0) {
    --unclaimed_;
    lock_.unlock();
    return;
  }
  detail::push_back(waiters_, &me);
  lock_.unlock();
  detail::park(me, "counting_semaphore", this);
}

void counting_semaphore::release(std::ptrdiff_t update) {
  if (update < 0) throw usage_error(EINVAL, "ito::counting_semaphore::release: negative update");
  if (update == 0) return;
  if (!add_permits(update, max())) [[unlikely]]
    throw usage_error(EOVERFLOW, "ito::counting_semaphore::release: the count would exceed max()");
}

// A CAS rather than a fetch_add: a count pushed past the limit must never be
// published, since a wrapped (negative) count would read as waiters owed permits.
bool counting_semaphore::add_permits(std::ptrdiff_t update, std::ptrdiff_t limit) noexcept {
  std::ptrdiff_t before = count_.load(std::memory_order_relaxed);
  do {
    if (before > limit - update) return false;
  } while (!count_.compare_exchange_weak(before, before + update, std::memory_order_release,
                                         std::memory_order_relaxed));
  if (before < 0) [[unlikely]] hand_permits(std::min(update, -before));
  return true;
}

[[gnu::noinline]] void counting_semaphore::hand_permits(std::ptrdiff_t permits) noexcept {
  detail::waiter* woken = nullptr;
  detail::waiter** last = &woken;
  lock_.lock();
  for (; permits > 0; --permits) {
    detail::waiter* w = detail::pop_front(waiters_);
    if (!w) {
      unclaimed_ += permits;
      break;
    }
    *last = w;
    last = &w->next;
  }
  *last = nullptr;
  lock_.unlock();
  detail::unpark_all(woken);
}

}  // namespace ito
