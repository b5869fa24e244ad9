// SPDX-License-Identifier: Apache-2.0
// The C++ exception state (the caught-exception stack and the uncaught count,
// __cxa_get_globals) belongs to a ULT, not to the worker running it: a ULT that
// yields, sleeps or migrates inside a catch block or a destructor run by
// unwinding must find its own state when it resumes, and leave others theirs.
#include <gtest/gtest.h>

#include <atomic>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

std::string current_what() {
  try {
    if (auto e = std::current_exception()) std::rethrow_exception(e);
    return "<none>";
  } catch (const std::exception& e) {
    return e.what();
  }
}

TEST(ult_exception_state, each_ult_keeps_its_caught_exception_across_yields) {
  ito::start_main_thread_with_worker_size(1, [] {
    std::atomic<bool> a_in{false}, b_in{false}, a_done{false};
    std::string a_saw, b_saw, a_after;
    auto a = ito::create_thread([&] {
      try {
        throw std::runtime_error("A");
      } catch (...) {
        a_in = true;
        while (!b_in) ito::yield();
        a_saw = current_what();
      }
      a_after = current_what();  // the catch block is over
      a_done = true;
    });
    auto b = ito::create_thread([&] {
      while (!a_in) ito::yield();
      try {
        throw std::runtime_error("B");
      } catch (...) {
        b_in = true;
        while (!a_done) ito::yield();
        b_saw = current_what();
      }
    });
    ito::join(a);
    ito::join(b);
    EXPECT_EQ(a_saw, "A");
    EXPECT_EQ(b_saw, "B");
    EXPECT_EQ(a_after, "<none>");
    EXPECT_EQ(current_what(), "<none>");
  });
}

// Rethrowing with `throw;` after a ULT slept (and maybe moved to another worker)
// inside its handler.
TEST(ult_exception_state, rethrow_after_sleeping_inside_a_handler_on_many_workers) {
  const int n = static_cast<int>(ito::test::scaled(400));
  std::atomic<int> right{0};
  ito::start_main_thread_with_worker_size(2, [&] {
    std::vector<ito::future<void>> fs;
    for (int i = 0; i < n; ++i) {
      fs.push_back(ito::create_thread([i, &right] {
        try {
          try {
            throw std::runtime_error(std::to_string(i));
          } catch (...) {
            for (int k = 0; k < 3; ++k) ito::sleep_for(std::chrono::nanoseconds(20'000));
            throw;  // "terminate called without an active exception" if the state is lost
          }
        } catch (const std::runtime_error& e) {
          if (e.what() == std::to_string(i)) right.fetch_add(1);
        }
      }));
    }
    for (auto& f : fs) ito::join(f);
  });
  EXPECT_EQ(right.load(), n);
}

struct yields_while_unwinding {
  int* seen;
  ~yields_while_unwinding() {
    *seen = std::uncaught_exceptions();
    ito::yield();
    ito::yield();
  }
};

TEST(ult_exception_state, uncaught_count_is_per_ult) {
  ito::start_main_thread_with_worker_size(1, [] {
    int unwinder_saw = -1;
    std::atomic<bool> unwinding{false};
    std::vector<int> other_saw;
    auto a = ito::create_thread([&] {
      try {
        struct flag {
          std::atomic<bool>* f;
          ~flag() { f->store(true); }
        };
        yields_while_unwinding y{&unwinder_saw};
        flag f{&unwinding};  // destroyed first: the other ULT starts looking
        throw 1;
      } catch (int) {
      }
    });
    auto b = ito::create_thread([&] {
      while (!unwinding) ito::yield();
      other_saw.push_back(std::uncaught_exceptions());
      ito::yield();
      other_saw.push_back(std::uncaught_exceptions());
    });
    ito::join(a);
    ito::join(b);
    EXPECT_EQ(unwinder_saw, 1);
    EXPECT_EQ(other_saw, (std::vector<int>{0, 0}));
  });
}

}  // namespace
