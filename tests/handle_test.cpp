// SPDX-License-Identifier: Apache-2.0
// C and POSIX handles stay safe when stale: they are checked in a table, never
// by reading the ULT's (maybe unmapped) stack, and their reuse count is wide
// enough that a stale handle does not come to name a live ULT.
#define ITO_PTHREAD_NO_RENAME 1
#include "ito/pthread.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "ito/ito.h"
#include "test_support.hpp"

namespace {

TEST(handles, stale_handle_of_a_ult_whose_dedicated_stack_was_unmapped_is_esrch) {
  ASSERT_EQ(ito_init(nullptr), 0);
  pthread_attr_t attr;
  ASSERT_EQ(ito_pthread_attr_init(&attr), 0);
  ASSERT_EQ(ito_pthread_attr_setstacksize(&attr, 1 << 20), 0);  // larger than the pool's
  pthread_t t[40];
  for (auto& th : t)
    ASSERT_EQ(ito_pthread_create(&th, &attr, [](void* p) -> void* { return p; }, nullptr), 0);
  for (auto& th : t) ASSERT_EQ(ito_pthread_join(th, nullptr), 0);
  for (auto& th : t) {
    EXPECT_EQ(ito_pthread_join(th, nullptr), ESRCH);
    EXPECT_EQ(ito_pthread_detach(th), ESRCH);
  }
  ito_pthread_attr_destroy(&attr);
  ASSERT_EQ(ito_finalize(), 0);
}

TEST(handles, a_stale_handle_never_names_a_ult_that_reuses_its_place) {
  // 70,000 fibers are minutes under TSan, and the property is not about threads.
  if (ito::test::tsan) GTEST_SKIP() << "a single-worker counting test; too slow under TSan";
  ito_options_t o = ITO_OPTIONS_INIT;
  o.workers = 1;  // one worker: every new ULT reuses the last one's descriptor
  ASSERT_EQ(ito_init(&o), 0);
  auto body = [](void*) -> void* { return nullptr; };
  ito_ult_t first;
  ASSERT_EQ(ito_create(&first, body, nullptr), 0);
  ASSERT_EQ(ito_join(first, nullptr), 0);
  int aliased = 0;
  for (int i = 0; i < 70'000; ++i) {  // past a 16-bit reuse count
    ito_ult_t h;
    ASSERT_EQ(ito_create(&h, body, nullptr), 0);
    if (h == first || ito_detach(first) != ESRCH) ++aliased;
    ASSERT_EQ(ito_join(h, nullptr), 0);
  }
  EXPECT_EQ(aliased, 0);
  ASSERT_EQ(ito_finalize(), 0);
}

TEST(handles, self_handle_is_stable_and_equal_to_the_creator_s) {
  ASSERT_EQ(ito_init(nullptr), 0);
  static ito_ult_t seen;
  ito_ult_t h;
  ASSERT_EQ(ito_create(&h, [](void*) -> void* {
    seen = ito_self();
    return reinterpret_cast<void*>(ito_self() == seen ? 1 : 0);
  }, nullptr), 0);
  void* same = nullptr;
  ASSERT_EQ(ito_join(h, &same), 0);
  EXPECT_EQ(seen, h);
  EXPECT_EQ(same, reinterpret_cast<void*>(1));
  EXPECT_EQ(ito_self(), ito_self());
  EXPECT_NE(ito_self(), ITO_ULT_NULL);
  ASSERT_EQ(ito_finalize(), 0);
}

TEST(handles, a_handle_from_a_stopped_runtime_is_esrch_in_the_next) {
  ASSERT_EQ(ito_init(nullptr), 0);
  ito_ult_t h;
  ASSERT_EQ(ito_create(&h, [](void*) -> void* { return nullptr; }, nullptr), 0);
  ito_ult_t main_handle = ito_self();
  ASSERT_EQ(ito_finalize(), 0);  // h was never joined
  ASSERT_EQ(ito_init(nullptr), 0);
  EXPECT_EQ(ito_join(h, nullptr), ESRCH);
  EXPECT_EQ(ito_detach(main_handle), ESRCH);
  ASSERT_EQ(ito_finalize(), 0);
}

}  // namespace
