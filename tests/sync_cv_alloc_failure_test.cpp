// SPDX-License-Identifier: Apache-2.0
// A timed wait whose timer cannot be armed (std::bad_alloc from the timer
// queue's node) must fail cleanly: the mutex still held, and no record of the
// failed wait left in the condition variable's queue, where it would dangle
// once the waiter's frame is gone. operator new is replaced in this program
// so that a test can make the next allocation of its thread fail.
#include <gtest/gtest.h>

#include <time.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <new>

#include "ito/sync.h"
#include "ito/sync.hpp"
#include "ito/thread.hpp"

namespace {
thread_local bool t_fail_next_allocation = false;
}  // namespace

// Out of line: GCC would otherwise inline free() next to a pointer it knows
// came from operator new and warn (-Wmismatched-new-delete) at -O2.
[[gnu::noinline]] void* operator new(std::size_t n) {
  if (t_fail_next_allocation) {
    t_fail_next_allocation = false;
    throw std::bad_alloc();
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

using namespace std::chrono_literals;

TEST(condition_variable_alloc_failure, a_wait_whose_timer_cannot_be_armed_leaves_nothing_queued) {
  ito::start_main_thread_with_worker_size(1, [] {
    ito_mutex_t m = ITO_MUTEX_INITIALIZER;
    ito_cond_t c = ITO_COND_INITIALIZER;
    ASSERT_EQ(ito_mutex_lock(&m), 0);
    timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += 10;
    // No switch happens before the timer is armed: the flag is still this
    // thread's when the timer queue allocates.
    t_fail_next_allocation = true;
    EXPECT_EQ(ito_cond_timedwait(&c, &m, &deadline), ENOMEM);
    t_fail_next_allocation = false;
    EXPECT_EQ(ito_mutex_trylock(&m), EBUSY);  // still held by us
    EXPECT_EQ(ito_cond_destroy(&c), 0) << "the failed wait left its record queued";
    EXPECT_EQ(ito_mutex_unlock(&m), 0);

    // The C++ form throws, with the lock still owned; the cv stays usable.
    ito::mutex cm;
    ito::condition_variable cv;
    std::unique_lock lock(cm);
    t_fail_next_allocation = true;
    EXPECT_THROW(cv.wait_for(lock, 10s), std::bad_alloc);
    t_fail_next_allocation = false;
    EXPECT_TRUE(lock.owns_lock());
    cv.notify_one();  // would claim a dangling record
    EXPECT_EQ(cv.wait_for(lock, 1ms), std::cv_status::timeout);
  });
}

}  // namespace
