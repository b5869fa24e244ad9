// SPDX-License-Identifier: Apache-2.0
// A frame that cannot fit the new ULT's stack (create_thread's decay-copied
// callable and arguments, allocate(size)) is refused with usage_error(E2BIG)
// before anything is copied; one that fits leaves the ULT room to run.
#include <gtest/gtest.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>

#include "ito/error.hpp"
#include "ito/thread.hpp"
#include "ito/ult.hpp"
#include "sched/overflow.hpp"
#include "sched/scheduler.hpp"

namespace {

constexpr std::size_t kib = 1024;
using big_array = std::array<char, 200 * kib>;

ito::options one_worker(std::size_t stack_size) {
  ito::options o;
  o.workers = 1;
  o.stack_size = stack_size;
  return o;
}

template <class F>
std::string expect_e2big(F&& f) {
  try {
    f();
  } catch (const ito::usage_error& e) {
    EXPECT_EQ(e.code(), E2BIG) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no usage_error";
  return {};
}

TEST(stack_frame_size, a_by_value_argument_larger_than_the_stack_is_refused) {
  ito::runtime rt(one_worker(64 * kib));
  auto big = std::make_unique<big_array>();
  (*big)[0] = 7;
  std::string what = expect_e2big([&] {
    auto f = ito::create_thread([](big_array a) { return a[0]; }, *big);
    ito::join(f);
  });
  // It names the frame's size, the stack's and the limit.
  EXPECT_NE(what.find(" 2048"), std::string::npos) << what;  // 204800-odd bytes of frame
  EXPECT_NE(what.find(" 65536-byte stack"), std::string::npos) << what;
  EXPECT_NE(what.find("at most " + std::to_string(ito::sched::max_frame_bytes(64 * kib))),
            std::string::npos)
      << what;
  // Nothing was taken: the runtime goes on.
  EXPECT_EQ(ito::join(ito::create_thread([](int x) { return x + 1; }, 41)), 42);
}

TEST(stack_frame_size, a_callable_larger_than_the_stack_is_refused) {
  ito::runtime rt(one_worker(64 * kib));
  auto big = std::make_unique<big_array>();
  expect_e2big([&] {
    auto f = ito::create_thread([copy = *big] { return copy[1]; });
    ito::join(f);
  });
}

TEST(stack_frame_size, allocate_refuses_a_frame_larger_than_the_stack) {
  ito::runtime rt(one_worker(64 * kib));
  std::string what = expect_e2big([] { ito::lowlevel::allocate(200 * kib); });
  EXPECT_NE(what.find(" 204800 bytes"), std::string::npos) << what;
  expect_e2big([] { ito::lowlevel::allocate(SIZE_MAX); });
  expect_e2big([] { ito::lowlevel::allocate(SIZE_MAX - 15); });
}

TEST(stack_frame_size, the_largest_frame_allowed_leaves_room_to_run) {
  for (std::size_t stack : {16 * kib, 64 * kib, 1024 * kib}) {
    ito::runtime rt(one_worker(stack));
    const std::size_t limit = ito::sched::max_frame_bytes(stack);
    ASSERT_GT(limit, 0u);
    ASSERT_LT(limit, stack);
    expect_e2big([&] { ito::lowlevel::allocate(limit + 1); });
    // At the limit it runs, and the room below its frame is at least the
    // promised minimum.
    ito::lowlevel::allocated_ult th = ito::lowlevel::allocate(limit);
    auto* u = static_cast<ito::sched::ult*>(th.id.p);
    EXPECT_GE(static_cast<char*>(th.ptr) - u->stack.lo,
              static_cast<std::ptrdiff_t>(ito::sched::min_run_room));
    struct ran {
      static void body(void* p) { *static_cast<volatile char*>(p) = 1; }
    };
    ito::lowlevel::fork(th, &ran::body);
    ito::lowlevel::join(th.id);
  }
}

TEST(stack_frame_size, a_large_frame_that_fits_is_accepted) {
  ito::runtime rt(one_worker(64 * kib));
  auto fits = std::make_unique<std::array<char, 32 * kib>>();
  (*fits)[5] = 9;
  EXPECT_EQ(ito::join(ito::create_thread([](const std::array<char, 32 * kib>& a) { return a[5]; },
                                         *fits)),
            9);
}

}  // namespace
