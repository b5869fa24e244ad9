// SPDX-License-Identifier: Apache-2.0
// options.ult_tls (ITO_ULT_TLS) where TLS blocks cannot be made stops the
// start with a message saying why, never a runtime whose threads silently
// share their worker's TLS: in ASan and TSan builds, whose runtimes find
// each thread's own state through TLS of their own, of which a new block
// would hold only the empty initial image (docs/POSIX.md, "Not under ASan or
// TSan"), and off x86-64. Where blocks can be made, a runtime starts with
// them and each ito_create thread's __thread variable is its own.
#include <gtest/gtest.h>

#include <string>

#include "arch/sanitizer.hpp"
#include "ito/ito.h"
#include "ito/options.hpp"
#include "ito/runtime.hpp"

namespace {

// In the order sched/ult_tls.cpp's look_up() checks.
#if !defined(__x86_64__)
const char* const why_unavailable = "x86-64 only";
#elif ITO_ASAN || ITO_TSAN
const char* const why_unavailable = "does not work under a sanitizer";
#else
const char* const why_unavailable = nullptr;
#endif

__thread long own_value;

void* keep_own(void* arg) {
  own_value = reinterpret_cast<long>(arg);
  for (int i = 0; i < 20; ++i) ito_yield();
  return reinterpret_cast<void*>(own_value == reinterpret_cast<long>(arg) ? 1L : 0L);
}

TEST(ult_tls_config, blocks_start_or_are_refused_with_the_reason) {
  ito::options o;
  o.workers = 1;
  o.ult_tls = true;
  if (why_unavailable) {
    try {
      ito::runtime rt(o);
      ADD_FAILURE() << "a runtime started with TLS blocks that cannot work here";
    } catch (const ito::config_error& e) {
      EXPECT_FALSE(e.from_environment());
      EXPECT_NE(std::string(e.what()).find("ITO_ULT_TLS / options.ult_tls: "), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find(why_unavailable), std::string::npos) << e.what();
    }
    return;
  }
  ito::runtime rt(o);  // this thread is now the main ULT
  ito_ult_t t[4];
  for (long i = 0; i < 4; ++i)
    ASSERT_EQ(ito_create(&t[i], keep_own, reinterpret_cast<void*>(i + 1)), 0);
  int kept = 0;
  for (auto h : t) {
    void* r = nullptr;
    EXPECT_EQ(ito_join(h, &r), 0);
    kept += r != nullptr;
  }
  EXPECT_EQ(kept, 4);
}

}  // namespace
