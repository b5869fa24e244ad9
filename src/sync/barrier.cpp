// SPDX-License-Identifier: Apache-2.0
// ito::barrier. Arrivals are counted under the queue's spinlock; the last
// arriver of a phase takes the whole queue, resets the count for the next
// phase and wakes everyone outside the lock. Waiters of a finished phase are
// off the queue by then, so early arrivers of the next phase cannot mix in.
#include <cerrno>

#include "ito/error.hpp"
#include "ito/sync.hpp"
#include "sync/waiter.hpp"

namespace ito {

barrier::barrier(std::uint32_t count) : count_(count) {
  if (count == 0) throw usage_error(EINVAL, "ito::barrier: the count must be at least 1");
}

bool barrier::arrive_and_wait() {
  detail::waiter me(detail::calling_ult());
  lock_.lock();
  if (++arrived_ < count_) {
    detail::push_back(waiters_, &me);
    lock_.unlock();
    detail::park(me, "barrier", this);
    return false;
  }
  arrived_ = 0;
  detail::waiter* phase = detail::take_all(waiters_);
  lock_.unlock();
  // The spinlock ordered every arriver's writes before this point, and each
  // wake-up releases them to its waiter.
  detail::unpark_all(phase);
  return true;
}

}  // namespace ito
