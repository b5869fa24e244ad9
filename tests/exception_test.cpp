// SPDX-License-Identifier: Apache-2.0
// Exceptions and ito::exit: what a ULT throws comes out of join/get with its
// type and contents intact, across workers and through nested joins;
// ito::exit() unwinds the ULT's stack (destructors run) to its entry.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

struct custom_error {
  int code;
  std::string where;
};

TEST(exception, runtime_error_is_rethrown_by_join) {
  ito::start_main_thread_with_worker_size(2, [] {
    auto f = ito::create_thread([]() -> int { throw std::runtime_error("boom"); });
    try {
      ito::join(f);
      ADD_FAILURE() << "join did not rethrow";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "boom");
    }
    EXPECT_FALSE(f.valid());  // the ULT is freed all the same
  });
}

TEST(exception, custom_type_is_preserved_and_is_the_same_object) {
  ito::start_main_thread_with_worker_size(2, [] {
    const custom_error* thrown_at = nullptr;
    auto f = ito::create_thread([&] {
      try {
        throw custom_error{42, "inside"};
      } catch (const custom_error& e) {
        thrown_at = &e;
        throw;
      }
    });
    try {
      f.get();
      ADD_FAILURE() << "get did not rethrow";
    } catch (const custom_error& e) {
      EXPECT_EQ(e.code, 42);
      EXPECT_EQ(e.where, "inside");
      EXPECT_EQ(&e, thrown_at);  // rethrown, not copied
    }
    // A derived type is caught as its base, and stays the derived one.
    auto g = ito::create_thread([] { throw std::out_of_range("range"); });
    EXPECT_THROW(ito::join(g), std::out_of_range);
    auto h = ito::create_thread([]() -> std::unique_ptr<int> { throw 7; });
    try {
      ito::join(h);
      ADD_FAILURE();
    } catch (int v) {
      EXPECT_EQ(v, 7);
    }
  });
}

TEST(exception, wait_does_not_throw_get_does) {
  ito::start_main_thread_with_worker_size(1, [] {
    auto f = ito::create_thread([]() -> int { throw std::logic_error("later"); });
    EXPECT_NO_THROW(f.wait());
    EXPECT_TRUE(f.ready());
    EXPECT_THROW(f.get(), std::logic_error);
  });
}

class exceptions_at_workers : public ::testing::TestWithParam<unsigned> {};

TEST_P(exceptions_at_workers, many_throwing_ults_each_rethrow_their_own) {
  ito::start_main_thread_with_worker_size(GetParam(), [] {
    const int n = static_cast<int>(ito::test::scaled(4000));
    std::vector<ito::future<int>> fs;
    for (int i = 0; i < n; ++i) {
      fs.push_back(ito::create_thread([i] {
        ito::yield();  // let thieves move some of them
        if (i % 3 == 0) throw custom_error{i, "ult"};
        if (i % 3 == 1) throw std::runtime_error(std::to_string(i));
        return i;
      }));
    }
    for (int i = 0; i < n; ++i) {
      try {
        int v = ito::join(fs[static_cast<std::size_t>(i)]);
        EXPECT_EQ(i % 3, 2);
        EXPECT_EQ(v, i);
      } catch (const custom_error& e) {
        EXPECT_EQ(i % 3, 0);
        EXPECT_EQ(e.code, i);
      } catch (const std::runtime_error& e) {
        EXPECT_EQ(i % 3, 1);
        EXPECT_EQ(e.what(), std::to_string(i));
      }
    }
  });
}

// Depth d: a ULT joining a ULT ... joining one that throws; each level adds
// itself to the message on the way out.
int nested_throw(int depth) {
  if (depth == 0) throw custom_error{0, "leaf"};
  auto child = ito::create_thread(nested_throw, depth - 1);
  try {
    return ito::join(child);
  } catch (custom_error& e) {
    ++e.code;
    e.where += "<" + std::to_string(depth);
    throw;
  }
}

TEST_P(exceptions_at_workers, nested_joins_pass_the_exception_up) {
  ito::start_main_thread_with_worker_size(GetParam(), [] {
    try {
      ito::join(ito::create_thread(nested_throw, 20));
      ADD_FAILURE();
    } catch (const custom_error& e) {
      EXPECT_EQ(e.code, 20);
      EXPECT_EQ(e.where.substr(0, 10), "leaf<1<2<3");
    }
  });
}

TEST_P(exceptions_at_workers, dropped_futures_of_throwing_ults_free_their_exception) {
  std::atomic<int> ran{0};
  const int n = static_cast<int>(ito::test::scaled(1000));
  ito::start_main_thread_with_worker_size(GetParam(), [&] {
    for (int i = 0; i < n; ++i) {
      (void)ito::create_thread([&] {
        ran.fetch_add(1);
        throw std::runtime_error(std::string(100, 'x'));  // leaks if never freed (ASan)
      });
    }
  });
  EXPECT_EQ(ran.load(), n);
}

INSTANTIATE_TEST_SUITE_P(workers, exceptions_at_workers, ::testing::Values(1u, 2u, 4u));

struct destructor_counter {
  std::atomic<int>* count;
  ~destructor_counter() { count->fetch_add(1); }
};

// Recurses `depth` frames, each holding an object with a destructor, then exits.
void exit_from_depth(int depth, std::atomic<int>& destroyed) {
  destructor_counter guard{&destroyed};
  if (depth < 0) return;  // never: only there so that the function can return
  if (depth == 0) ito::exit();
  exit_from_depth(depth - 1, destroyed);
  destroyed.fetch_add(1000);  // never reached
}

TEST(exception, exit_unwinds_a_void_ult_and_join_returns) {
  std::atomic<int> destroyed{0};
  std::atomic<bool> after_exit{false};
  ito::start_main_thread_with_worker_size(2, [&] {
    auto f = ito::create_thread([&] {
      destructor_counter outer{&destroyed};
      exit_from_depth(15, destroyed);
      after_exit = true;
    });
    EXPECT_NO_THROW(ito::join(f));
  });
  EXPECT_EQ(destroyed.load(), 17);  // 16 frames + the lambda's own
  EXPECT_FALSE(after_exit.load());
}

TEST(exception, exit_of_a_non_void_ult_makes_join_throw_usage_error) {
  std::atomic<int> destroyed{0};
  ito::start_main_thread_with_worker_size(2, [&] {
    auto f = ito::create_thread([&]() -> std::string {
      exit_from_depth(3, destroyed);
      return "unreachable";
    });
    try {
      ito::join(f);
      ADD_FAILURE() << "join returned a result the ULT never produced";
    } catch (const ito::usage_error& e) {
      EXPECT_EQ(e.code(), EINVAL);
    }
    EXPECT_FALSE(f.valid());
  });
  EXPECT_EQ(destroyed.load(), 4);
}

TEST(exception, exit_passes_through_catch_all_blocks_that_rethrow) {
  std::atomic<int> destroyed{0};
  bool caught = false;
  ito::start_main_thread_with_worker_size(1, [&] {
    auto f = ito::create_thread([&] {
      try {
        exit_from_depth(2, destroyed);
      } catch (...) {
        caught = true;
        throw;  // as with glibc's forced unwinding, catch (...) must rethrow
      }
    });
    ito::join(f);
  });
  EXPECT_TRUE(caught);
  EXPECT_EQ(destroyed.load(), 3);
}

TEST(exception, exit_in_the_main_ult_or_outside_is_a_usage_error) {
  try {
    ito::exit();
  } catch (const ito::usage_error& e) {
    EXPECT_EQ(e.code(), EPERM);
  }
  ito::start_main_thread_with_worker_size(1, [] {
    try {
      ito::exit();
    } catch (const ito::usage_error& e) {
      EXPECT_EQ(e.code(), EPERM);
    }
  });
}

TEST(exception, exception_from_the_main_ult_leaves_start_main_thread) {
  EXPECT_THROW(ito::start_main_thread_with_worker_size(2, [] { throw custom_error{1, "main"}; }),
               custom_error);
  // The runtime was stopped on the way out: another one starts.
  EXPECT_EQ(ito::start_main_thread_with_worker_size(2, [] { return 3; }), 3);
}

}  // namespace
