// SPDX-License-Identifier: Apache-2.0
// ULT-local keys: per-ULT values, destructors exactly once per ULT that set a
// value, the POSIX rounds rule, key_delete, and plain OS threads.
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
using ito::test::usage_error_code;

// Deletes the key at the end of a test, so tests do not leak keys.
struct scoped_key {
  ito::key k;
  explicit scoped_key(void (*destructor)(void*) = nullptr) : k(ito::key_create(destructor)) {}
  scoped_key(const scoped_key&) = delete;
  scoped_key& operator=(const scoped_key&) = delete;
  ~scoped_key() {
    try {
      ito::key_delete(k);
    } catch (const ito::usage_error&) {  // the test deleted it already
    }
  }
};

void count_call(void* counter) { static_cast<std::atomic<int>*>(counter)->fetch_add(1); }

class keys_at_workers : public ::testing::TestWithParam<unsigned> {};

TEST_P(keys_at_workers, destructor_runs_exactly_once_per_ult_that_set_a_value) {
  const int ults = static_cast<int>(live_ults(400));
  ito::start_main_thread_with_worker_size(GetParam(), [&] {
    scoped_key key(&count_call);
    std::vector<std::atomic<int>> calls(ults);
    std::vector<ito::future<void>> done;
    for (int i = 0; i < ults; ++i) {
      done.push_back(ito::create_thread(ito::own_ult, [&, i] {
        EXPECT_EQ(ito::get_specific(key.k), nullptr);
        if (i % 2 == 0) ito::set_specific(key.k, &calls[static_cast<std::size_t>(i)]);
        ito::yield();
      }));
    }
    for (auto& f : done) f.get();
    int wrong = 0;
    for (int i = 0; i < ults; ++i) wrong += calls[static_cast<std::size_t>(i)].load() != (i % 2 == 0);
    EXPECT_EQ(wrong, 0);
  });
}

TEST_P(keys_at_workers, each_ult_sees_its_own_value_across_migrations) {
  const int ults = static_cast<int>(live_ults(100));
  ito::start_main_thread_with_worker_size(GetParam(), [&] {
    scoped_key first, second;
    std::atomic<int> mismatches{0};
    std::vector<ito::future<void>> done;
    for (int i = 0; i < ults; ++i) {
      done.push_back(ito::create_thread(ito::own_ult, [&, i] {
        auto* mine = reinterpret_cast<void*>(static_cast<std::uintptr_t>(i + 1));
        ito::set_specific(second.k, mine);  // the higher key first: the table grows later
        ito::set_specific(first.k, &mismatches);
        for (int r = 0; r < 20; ++r) {
          ito::yield();  // may move to another worker
          if (ito::get_specific(second.k) != mine) mismatches.fetch_add(1);
          if (ito::get_specific(first.k) != &mismatches) mismatches.fetch_add(1);
        }
      }));
    }
    for (auto& f : done) f.get();
    EXPECT_EQ(mismatches.load(), 0);
  });
}

INSTANTIATE_TEST_SUITE_P(workers, keys_at_workers, ::testing::Values(1u, 2u, 4u));

// A destructor that sets its value again `resets` times.
struct resetting {
  static inline ito::key key{};
  static inline std::atomic<int> calls{0};
  static inline int resets = 0;
  static void destroy(void* v) {
    if (calls.fetch_add(1) < resets) ito::set_specific(key, v);
  }
};

TEST(keys, destructors_rerun_while_values_are_set_again_up_to_four_rounds) {
  ito::start_main_thread_with_worker_size(2, [] {
    scoped_key key(&resetting::destroy);
    resetting::key = key.k;
    int value = 0;
    for (int resets : {0, 2, 100}) {
      resetting::calls = 0;
      resetting::resets = resets;
      ito::create_thread(ito::own_ult, [&] { ito::set_specific(key.k, &value); }).get();
      // Called once, then once per re-set value, but at most four rounds.
      EXPECT_EQ(resetting::calls.load(), std::min(resets + 1, 4)) << resets << " resets";
    }
  });
}

struct chained {
  static inline ito::key later{};
  static inline std::atomic<int> later_calls{0};
  static void set_later(void* v) { ito::set_specific(later, v); }
  static void count_later(void*) { later_calls.fetch_add(1); }
};

TEST(keys, a_value_set_by_a_destructor_on_a_new_key_is_destroyed_next_round) {
  ito::start_main_thread_with_worker_size(1, [] {
    scoped_key first(&chained::set_later);
    // Use a high index so that setting it from the destructor grows the table.
    std::vector<ito::key> filler;
    for (int i = 0; i < 40; ++i) filler.push_back(ito::key_create());
    scoped_key later(&chained::count_later);
    chained::later = later.k;
    int value = 0;
    ito::create_thread(ito::own_ult, [&] { ito::set_specific(first.k, &value); }).get();
    EXPECT_EQ(chained::later_calls.load(), 1);
    for (ito::key k : filler) ito::key_delete(k);
  });
}

TEST(keys, delete_drops_values_without_destroying_them) {
  ito::start_main_thread_with_worker_size(2, [] {
    std::atomic<int> calls{0};
    ito::key k = ito::key_create(&count_call);
    ito::create_thread(ito::own_ult, [&] {
      ito::set_specific(k, &calls);
      ito::key_delete(k);
      EXPECT_EQ(ito::get_specific(k), nullptr);
      EXPECT_EQ(usage_error_code([&] { ito::set_specific(k, &calls); }), EINVAL);
      // A new key may reuse the index; the old value must not show through.
      scoped_key again(&count_call);
      EXPECT_EQ(ito::get_specific(again.k), nullptr);
    }).get();
    EXPECT_EQ(calls.load(), 0);
    EXPECT_EQ(usage_error_code([&] { ito::key_delete(k); }), EINVAL);
  });
}

TEST(keys, bad_keys_are_rejected) {
  EXPECT_EQ(usage_error_code([] { ito::key_delete(ito::max_keys); }), EINVAL);
  EXPECT_EQ(usage_error_code([] { ito::key_delete(ito::max_keys - 1); }), EINVAL);
  EXPECT_EQ(usage_error_code([] { ito::set_specific(ito::max_keys + 7, nullptr); }), EINVAL);
  EXPECT_EQ(ito::get_specific(ito::max_keys + 7), nullptr);
}

TEST(keys, creating_more_than_max_keys_throws_eagain) {
  std::vector<ito::key> keys;
  int code = 0;
  for (unsigned i = 0; i <= ito::max_keys && code == 0; ++i) {
    code = usage_error_code([&] { keys.push_back(ito::key_create()); });
  }
  EXPECT_EQ(code, EAGAIN);
  EXPECT_EQ(keys.size(), ito::max_keys);
  for (ito::key k : keys) ito::key_delete(k);
}

TEST(keys, plain_os_threads_and_the_main_ult_have_their_own_values) {
  scoped_key key(&count_call);
  std::atomic<int> calls{0};
  std::thread([&] {
    EXPECT_EQ(ito::get_specific(key.k), nullptr);
    ito::set_specific(key.k, &calls);
    EXPECT_EQ(ito::get_specific(key.k), &calls);
  }).join();
  EXPECT_EQ(calls.load(), 1);  // destroyed at thread exit
  ito::start_main_thread_with_worker_size(2, [&] {
    int mine = 0;
    ito::set_specific(key.k, &mine);
    EXPECT_EQ(ito::create_thread(ito::own_ult, [&] { return ito::get_specific(key.k); }).get(), nullptr);
    EXPECT_EQ(ito::get_specific(key.k), &mine);
    ito::set_specific(key.k, nullptr);
  });
}

}  // namespace
