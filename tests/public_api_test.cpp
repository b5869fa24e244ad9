// SPDX-License-Identifier: Apache-2.0
// The public C++ API as a program sees it (issue 46 item 3): ito/ito.hpp
// alone brings all of it, and the spellings renamed in this release still
// compile and behave as the new ones (deprecated, for one release).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <new>
#include <type_traits>
#include <unistd.h>

#include "ito/ito.hpp"

namespace {

using namespace std::chrono_literals;

TEST(public_api, the_umbrella_header_brings_every_part) {
  ito::start_main_thread_with_worker_size(2, [] {
    // thread + parallel
    auto f = ito::create_thread([] { return 6; });
    int a = 0, b = 0;
    ito::parallel_invoke([&] { a = 1; }, [&] { b = 2; });
    EXPECT_EQ(ito::join(std::move(f)) + a + b, 9);
    // sync
    ito::mutex m;
    { std::lock_guard<ito::mutex> g(m); }
    // flow
    ito::flow::graph g;
    std::atomic<int> ran{0};
    ito::flow::node& n = g.add("n", [&] { ran.fetch_add(1); });
    ito::flow::completion done = n.completion();
    g.run();
    done.wait();
    g.wait();
    EXPECT_EQ(ran.load(), 1);
    // os_pool, delegate, io
    ito::os_pool pool;
    ito::os_future<int> pf = pool.submit([] { return 7; });
    EXPECT_EQ(pf.get(), 7);
    EXPECT_EQ(ito::delegate([] { return 8; }), 8);
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    EXPECT_EQ(ito::io::write(p[1], "x", 1), 1);
    char c = 0;
    EXPECT_EQ(ito::io::read(p[0], &c, 1), 1);
    EXPECT_EQ(c, 'x');
    ito::io::close(p[0]);
    ito::io::close(p[1]);
  });
}

TEST(public_api, sleep_for_and_sleep_until_work_in_a_ult_and_outside) {
  const auto t0 = std::chrono::steady_clock::now();
  ito::sleep_for(2ms);  // a plain thread sleeps
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 2ms);
  ito::start_main_thread_with_worker_size(1, [] {
    const auto t1 = std::chrono::steady_clock::now();
    auto other = ito::create_thread([] { return 1; });  // runs while we sleep
    ito::sleep_until(t1 + 2ms);
    EXPECT_GE(std::chrono::steady_clock::now() - t1, 2ms);
    EXPECT_EQ(ito::join(std::move(other)), 1);
    ito::sleep_for(-1s);  // past: returns at once
  });
}

struct frame {
  std::atomic<int>* out;
  static void body(void* p) { static_cast<frame*>(p)->out->store(42); }
};

TEST(public_api, the_low_level_api_lives_in_ito_lowlevel) {
  ito::start_main_thread_with_worker_size(2, [] {
    std::atomic<int> out{0};
    ito::lowlevel::allocated_ult th = ito::lowlevel::allocate(sizeof(frame));
    ::new (th.ptr) frame{&out};
    ito::lowlevel::fork(th, &frame::body);
    ito::lowlevel::join(th.id);
    EXPECT_EQ(out.load(), 42);
  });
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
TEST(public_api, the_former_spellings_still_compile_and_work) {
  static_assert(std::is_same_v<ito::allocated_ult, ito::lowlevel::allocated_ult>);
  static_assert(std::is_same_v<ito::flow::future, ito::flow::completion>);
  ito::start_main_thread_with_worker_size(2, [] {
    std::atomic<int> out{0};
    ito::allocated_ult th = ito::allocate(sizeof(frame));
    ::new (th.ptr) frame{&out};
    ito::fork(th, &frame::body);
    ito::join(th.id);
    EXPECT_EQ(out.load(), 42);
    ito::allocated_ult th2 = ito::allocate(sizeof(frame));
    ::new (th2.ptr) frame{&out};
    ito::fork(th2, &frame::body);
    ito::detach(th2.id);
    ito::sleep_for_ns(1000);
    EXPECT_EQ(ito::io::sleep_for(1us), 0);
    EXPECT_EQ(ito::io::sleep_until(std::chrono::steady_clock::now()), 0);
    EXPECT_EQ(ito::io::sleep_for_ns(1000), 0);
  });
}
#pragma GCC diagnostic pop

// With `using namespace ito`, an unqualified fork(th, f) finds ito::lowlevel's
// by argument-dependent lookup; the deprecated ito::fork, a template, loses
// to it instead of making the call ambiguous.
TEST(public_api, an_unqualified_fork_is_not_ambiguous) {
  using namespace ito;
  start_main_thread_with_worker_size(1, [] {
    std::atomic<int> out{0};
    lowlevel::allocated_ult th = lowlevel::allocate(sizeof(frame));
    ::new (th.ptr) frame{&out};
    fork(th, &frame::body);
    lowlevel::join(th.id);
    EXPECT_EQ(out.load(), 42);
  });
}

}  // namespace
