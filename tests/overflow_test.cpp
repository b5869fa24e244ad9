// SPDX-License-Identifier: Apache-2.0
// A ULT that overflows its stack hits the guard page below it; the runtime
// reports which ULT and how large its stack was, then aborts.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

// Recurses without bound; the volatile buffer keeps every frame alive and big.
[[gnu::noinline]] int recurse_forever(int depth) {
  volatile char frame[512];
  std::memset(const_cast<char*>(frame), depth & 0xFF, sizeof frame);
  if (depth < 0) return frame[0];  // never: keeps the call from being a loop
  return recurse_forever(depth + 1) + frame[depth % sizeof frame];
}

const char* const overflow_message = "ito: stack overflow in ULT [0-9]+ \\(stack [0-9]+ bytes\\)";

class overflow : public ::testing::Test {
 protected:
  void SetUp() override {
    GTEST_FLAG_SET(death_test_style, ito::test::threadsafe_death_style);
  }
};

TEST_F(overflow, unbounded_recursion_in_a_ult_is_reported_and_aborts) {
  EXPECT_DEATH(
      {
        ito::start_main_thread_with_worker_size(2, [] {
          ito::join(ito::create_thread(ito::own_ult, [] { return recurse_forever(0); }));
        });
      },
      overflow_message);
}

TEST_F(overflow, the_report_names_the_configured_stack_size) {
  EXPECT_DEATH(
      {
        ito::options o;
        o.workers = 1;
        o.stack_size = 32 * 1024;
        ito::runtime rt(o);
        auto f = ito::create_thread(ito::own_ult, [] { return recurse_forever(0); });
        ito::yield();  // it starts on its own stack (joined first, it would run inline)
        ito::join(f);
      },
      // 32 KiB less the cache-colouring offset of its top (under 4 KiB).
      "ito: stack overflow in ULT [0-9]+ \\(stack (2[89]|3[0-2])[0-9]{3} bytes\\)");
}

// Joined by the main ULT before it started, a child runs on the main ULT's
// stack (the OS thread's): an overflow there names it, and where it ran.
TEST_F(overflow, a_child_run_inline_by_the_main_ult_is_named_in_the_report) {
  EXPECT_DEATH(
      {
        ito::start_main_thread_with_worker_size(1, [] {
          ito::join(ito::create_thread(ito::own_ult, [] { return recurse_forever(0); }));
        });
      },
      "ito: stack overflow in ULT [1-9][0-9]* \\(stack [0-9]+ bytes\\), on the stack of ULT 0, "
      "which joined it before it started and ran it inline");
}

TEST_F(overflow, overflow_in_a_deeply_nested_ult_on_a_thief_worker) {
  EXPECT_DEATH(
      {
        ito::start_main_thread_with_worker_size(4, [] {
          struct nest {
            static int go(int level) {
              if (level == 0) return recurse_forever(0);
              auto f = ito::create_thread(ito::own_ult, go, level - 1);
              return ito::join(f);
            }
          };
          ito::join(ito::create_thread(ito::own_ult, nest::go, 10));
        });
      },
      overflow_message);
}

TEST_F(overflow, a_segfault_that_is_not_an_overflow_is_left_alone) {
  // Only guard-page faults are reported as overflows; a wild write goes to the
  // previous SIGSEGV handler: the default one (killed by SIGSEGV), or the
  // sanitizer's (a SEGV report, exit status 1 for ASan, 66 for TSan).
  auto wild_write = [] {
    ito::start_main_thread_with_worker_size(1, [] {
      ito::join(ito::create_thread(ito::own_ult, [] {
        volatile std::uintptr_t address = 16;  // opaque to the optimiser
        *reinterpret_cast<volatile int*>(address) = 1;
      }));
    });
  };
  if (ito::test::asan) {
    EXPECT_EXIT(wild_write(), ::testing::ExitedWithCode(1), "AddressSanitizer: SEGV on unknown address");
  } else if (ito::test::tsan) {
    EXPECT_EXIT(wild_write(), ::testing::ExitedWithCode(66), "ThreadSanitizer: SEGV on unknown address");
  } else {
    EXPECT_EXIT(wild_write(), ::testing::KilledBySignal(SIGSEGV), "");
  }
}

}  // namespace
