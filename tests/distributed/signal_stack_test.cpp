// SPDX-License-Identifier: Apache-2.0
// A call from a ULT onto its worker's signal stack (src/distributed/
// large_stack.hpp), without MPI: a body that needs far more than a ULT's
// 64 KiB runs to its end there, on the same OS thread, and comes back with
// its result or its exception; from the signal stack itself, or from an OS
// thread's stack, it runs in place. MPICH's handler of an incoming active
// message takes a 128 KiB frame, and a checkout's flush once ran it on a ULT.
#include "distributed/large_stack.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <pthread.h>
#include <stdexcept>
#include <vector>

#include "ito/thread.hpp"
#include "sched/overflow.hpp"

namespace {

namespace detail = ito::dist::detail;

// Touches `bytes` of stack below its frame, as MPICH's handler does; its sum
// keeps the compiler from dropping the buffer.
[[gnu::noinline]] unsigned deep_frame(std::size_t bytes) {
  auto* buffer = static_cast<volatile unsigned char*>(__builtin_alloca(bytes));
  for (std::size_t i = 0; i < bytes; i += 512) buffer[i] = static_cast<unsigned char>(i >> 9);
  unsigned sum = 0;
  for (std::size_t i = 0; i < bytes; i += 512) sum += buffer[i];
  return sum;
}

unsigned expected_sum(std::size_t bytes) {
  unsigned sum = 0;
  for (std::size_t i = 0; i < bytes; i += 512) sum += static_cast<unsigned char>(i >> 9);
  return sum;
}

// Where the caller runs: this function's own frame, just below the caller's.
[[gnu::noinline]] const char* here() { return static_cast<const char*>(__builtin_frame_address(0)); }

TEST(signal_stack, a_ults_deep_call_runs_on_its_workers_signal_stack_and_comes_back) {
  constexpr std::size_t deep = 256 * 1024;  // four ULT stacks' worth
  ito::start_main_thread_with_worker_size(2, [] {
    std::vector<ito::future<void>> ults;
    for (int i = 0; i < 16; ++i)
      ults.push_back(ito::create_thread(ito::own_ult, [i] {
        const char* ult_frame = here();
        const pthread_t thread = pthread_self();
        unsigned got = 0;
        const char* body_frame = nullptr;
        detail::on_the_signal_stack([&] {
          body_frame = here();
          EXPECT_TRUE(pthread_equal(thread, pthread_self()));  // same OS thread
          got = deep_frame(deep + static_cast<std::size_t>(i) * 4096);
        });
        EXPECT_EQ(got, expected_sum(deep + static_cast<std::size_t>(i) * 4096));
        // Not the ULT's stack: more than a ULT stack away from its frame.
        const auto distance = body_frame > ult_frame ? body_frame - ult_frame : ult_frame - body_frame;
        EXPECT_GT(static_cast<std::size_t>(distance), std::size_t{64} * 1024);
        EXPECT_EQ(here(), ult_frame);  // back on its own stack, its frame intact
        if (i % 4 == 0) ito::yield();  // still a ULT that may move and switch
      }));
    for (auto& u : ults) u.get();
  });
}

TEST(signal_stack, an_exception_comes_back_to_the_caller) {
  ito::start_main_thread_with_worker_size(1, [] {
    ito::create_thread(ito::own_ult, [] {
      EXPECT_THROW(detail::on_the_signal_stack([] { throw std::runtime_error("from the body"); }),
                   std::runtime_error);
      // And the stack is free for the next call.
      unsigned got = 0;
      detail::on_the_signal_stack([&] { got = deep_frame(128 * 1024); });
      EXPECT_EQ(got, expected_sum(128 * 1024));
    }).get();
  });
}

TEST(signal_stack, nested_calls_and_os_thread_stacks_run_in_place) {
  ito::start_main_thread_with_worker_size(1, [] {
    // The main ULT runs on its OS thread's stack: in place.
    const char* main_frame = here();
    const char* body_frame = nullptr;
    detail::on_the_signal_stack([&] { body_frame = here(); });
    const auto main_distance =
        body_frame > main_frame ? body_frame - main_frame : main_frame - body_frame;
    EXPECT_LT(static_cast<std::size_t>(main_distance), std::size_t{4096});
    ito::create_thread(ito::own_ult, [] {
      const char* outer = nullptr;
      const char* inner = nullptr;
      detail::on_the_signal_stack([&] {
        outer = here();
        detail::on_the_signal_stack([&] { inner = here(); });  // already there: in place
      });
      const auto gap = outer > inner ? outer - inner : inner - outer;
      EXPECT_LT(static_cast<std::size_t>(gap), std::size_t{4096});
    }).get();
  });
  // Outside any runtime: in place.
  bool ran = false;
  detail::on_the_signal_stack([&] { ran = true; });
  EXPECT_TRUE(ran);
}

}  // namespace
