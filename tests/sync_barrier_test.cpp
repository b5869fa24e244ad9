// SPDX-License-Identifier: Apache-2.0
// ito::barrier: many phases with one serial arriver each, writes published
// across the barrier, reuse, and plain OS threads as participants.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <thread>
#include <vector>

#include "ito/error.hpp"
#include "ito/sync.hpp"
#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

using ito::test::live_ults;

using ito::test::scaled;

class barrier_at_workers : public ::testing::TestWithParam<unsigned> {};

TEST_P(barrier_at_workers, each_phase_sees_all_writes_and_has_one_serial_arriver) {
  const std::size_t ults = live_ults(64);
  const std::size_t phases = scaled(500) < 20 ? 20 : scaled(500);
  ito::start_main_thread_with_worker_size(GetParam(), [&] {
    ito::barrier b(static_cast<std::uint32_t>(ults));
    // Two buffers, alternating: phase p writes buffer p % 2, then everyone
    // reads all of it. Nobody can write it again (phase p + 2) before every
    // reader has arrived at phase p + 1's barrier. Plain ints: only the
    // barrier orders these accesses (TSan checks that it does).
    std::vector<std::uint64_t> data[2] = {std::vector<std::uint64_t>(ults),
                                          std::vector<std::uint64_t>(ults)};
    std::vector<std::atomic<int>> serials(phases);
    std::atomic<int> bad_reads{0};
    std::vector<ito::future<void>> done;
    for (std::size_t i = 0; i < ults; ++i) {
      done.push_back(ito::create_thread([&, i] {
        for (std::size_t p = 0; p < phases; ++p) {
          data[p % 2][i] = p * ults + i;
          if (b.arrive_and_wait()) serials[p].fetch_add(1);
          for (std::size_t j = 0; j < ults; ++j)
            if (data[p % 2][j] != p * ults + j) bad_reads.fetch_add(1);
        }
      }));
    }
    for (auto& f : done) f.get();
    EXPECT_EQ(bad_reads.load(), 0);
    int wrong_serials = 0;
    for (auto& s : serials) wrong_serials += s.load() != 1;
    EXPECT_EQ(wrong_serials, 0);
  });
}

TEST_P(barrier_at_workers, a_barrier_of_one_never_waits_and_is_always_serial) {
  ito::start_main_thread_with_worker_size(GetParam(), [] {
    ito::barrier b(1);
    for (int i = 0; i < 10; ++i) EXPECT_TRUE(b.arrive_and_wait());
  });
}

INSTANTIATE_TEST_SUITE_P(workers, barrier_at_workers, ::testing::Values(1u, 2u, 4u));

TEST(barrier, count_zero_throws_einval) {
  try {
    ito::barrier b(0);
    ADD_FAILURE() << "no exception";
  } catch (const ito::usage_error& e) {
    EXPECT_EQ(e.code(), EINVAL);
  }
}

TEST(barrier, plain_os_threads_and_ults_meet_at_it) {
  const int phases = 200;
  ito::start_main_thread_with_worker_size(2, [&] {
    ito::barrier b(4);
    std::atomic<int> serials{0};
    auto run = [&] {
      for (int p = 0; p < phases; ++p)
        if (b.arrive_and_wait()) serials.fetch_add(1);
    };
    std::thread t1(run), t2(run);
    auto u1 = ito::create_thread(run), u2 = ito::create_thread(run);
    u1.get();
    u2.get();
    t1.join();
    t2.join();
    EXPECT_EQ(serials.load(), phases);
  });
}

}  // namespace
