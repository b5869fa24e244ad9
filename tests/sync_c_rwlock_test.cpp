// SPDX-License-Identifier: Apache-2.0
// The C reader-writer lock (ito_rwlock_t in ito/sync.h): its return codes, its
// static initialiser, and readers and writers from ULTs and plain threads.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <thread>
#include <vector>

#include "ito/sync.h"
#include "ito/sync.hpp"
#include "ito/thread.hpp"

namespace {

ito_rwlock_t g_static_rwlock = ITO_RWLOCK_INITIALIZER;

TEST(sync_c_rwlock, codes) {
  ito::start_main_thread_with_worker_size(2, [] {
    ito_rwlock_t l;
    EXPECT_EQ(ito_rwlock_init(nullptr), EINVAL);
    ASSERT_EQ(ito_rwlock_init(&l), 0);
    EXPECT_EQ(ito_rwlock_unlock(&l), EPERM);
    ASSERT_EQ(ito_rwlock_wrlock(&l), 0);
    EXPECT_EQ(ito_rwlock_wrlock(&l), EDEADLK);
    EXPECT_EQ(ito_rwlock_rdlock(&l), EDEADLK);
    EXPECT_EQ(ito_rwlock_trywrlock(&l), EDEADLK);
    EXPECT_EQ(ito_rwlock_tryrdlock(&l), EDEADLK);
    EXPECT_EQ(ito::create_thread(ito::own_ult, [&] { return ito_rwlock_tryrdlock(&l); }).get(), EBUSY);
    EXPECT_EQ(ito::create_thread(ito::own_ult, [&] { return ito_rwlock_unlock(&l); }).get(), EPERM);
    EXPECT_EQ(ito_rwlock_destroy(&l), EBUSY);
    ASSERT_EQ(ito_rwlock_unlock(&l), 0);

    ASSERT_EQ(ito_rwlock_rdlock(&l), 0);
    ASSERT_EQ(ito_rwlock_tryrdlock(&l), 0);
    EXPECT_EQ(ito_rwlock_trywrlock(&l), EBUSY);
    EXPECT_EQ(ito_rwlock_destroy(&l), EBUSY);
    ASSERT_EQ(ito_rwlock_unlock(&l), 0);
    ASSERT_EQ(ito_rwlock_unlock(&l), 0);
    EXPECT_EQ(ito_rwlock_unlock(&l), EPERM);
    EXPECT_EQ(ito_rwlock_destroy(&l), 0);
  });
}

TEST(sync_c_rwlock, statically_initialised_lock_protects_a_pair) {
  ito::start_main_thread_with_worker_size(4, [] {
    std::uint64_t a = 0, b = 0;
    std::atomic<int> torn{0};
    std::vector<ito::future<void>> done;
    for (int u = 0; u < 16; ++u) {
      done.push_back(ito::create_thread(ito::own_ult, [&, u] {
        for (int r = 0; r < 500; ++r) {
          if ((r + u) % 5 == 0) {
            ASSERT_EQ(ito_rwlock_wrlock(&g_static_rwlock), 0);
            ++a;
            ito::yield();
            ++b;
            ASSERT_EQ(ito_rwlock_unlock(&g_static_rwlock), 0);
          } else {
            ASSERT_EQ(ito_rwlock_rdlock(&g_static_rwlock), 0);
            if (a != b) ++torn;
            ASSERT_EQ(ito_rwlock_unlock(&g_static_rwlock), 0);
          }
        }
      }));
    }
    for (auto& f : done) f.get();
    EXPECT_EQ(torn.load(), 0);
    EXPECT_EQ(a, b);
    EXPECT_EQ(ito_rwlock_destroy(&g_static_rwlock), 0);
  });
}

TEST(sync_c_rwlock, plain_threads_wait_for_a_writer) {
  ito_rwlock_t l = ITO_RWLOCK_INITIALIZER;
  ASSERT_EQ(ito_rwlock_wrlock(&l), 0);
  std::atomic<int> got{0};
  std::thread reader([&] {
    EXPECT_EQ(ito_rwlock_rdlock(&l), 0);  // waits for the unlock below, or comes after it
    got = 1;
    EXPECT_EQ(ito_rwlock_unlock(&l), 0);
  });
  ASSERT_EQ(ito_rwlock_unlock(&l), 0);
  reader.join();
  EXPECT_EQ(got.load(), 1);
  EXPECT_EQ(ito_rwlock_destroy(&l), 0);
}

}  // namespace
