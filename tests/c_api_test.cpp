// SPDX-License-Identifier: Apache-2.0
// The C API (ito/ito.h) from C++: lifecycle, results, ito_exit, handles that
// went stale, and every documented error code, none of which may exit.
#include "ito/ito.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

// Finalizes a runtime a failed assertion left running, so later tests can start one.
class c_api : public ::testing::Test {
 protected:
  void TearDown() override {
    if (ito_workers() != 0) {
      EXPECT_EQ(ito_finalize(), 0);
    }
  }
};

void* add_one(void* p) { return reinterpret_cast<void*>(reinterpret_cast<std::intptr_t>(p) + 1); }

TEST_F(c_api, init_create_join_finalize) {
  ito_options_t o = ITO_OPTIONS_INIT;
  o.workers = 2;
  ASSERT_EQ(ito_init(&o), 0);
  EXPECT_EQ(ito_workers(), 2u);
  EXPECT_NE(ito_self(), ITO_ULT_NULL);  // the calling thread is the main ULT now
  ito_ult_t t{};
  ASSERT_EQ(ito_create(&t, add_one, reinterpret_cast<void*>(41)), 0);
  EXPECT_NE(t, ITO_ULT_NULL);
  void* r = nullptr;
  ASSERT_EQ(ito_join(t, &r), 0);
  EXPECT_EQ(reinterpret_cast<std::intptr_t>(r), 42);
  EXPECT_EQ(ito_finalize(), 0);
  EXPECT_EQ(ito_workers(), 0u);
  EXPECT_EQ(ito_self(), ITO_ULT_NULL);
}

TEST_F(c_api, null_options_and_reinit) {
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(ito_init(nullptr), 0) << round;
    EXPECT_GE(ito_workers(), 1u);
    ito_ult_t t{};
    ASSERT_EQ(ito_create(&t, add_one, nullptr), 0);
    EXPECT_EQ(ito_join(t, nullptr), 0);  // retval may be NULL
    ASSERT_EQ(ito_finalize(), 0);
  }
}

// fib through the C API, on several workers.
void* c_fib(void* p) {
  auto n = reinterpret_cast<std::intptr_t>(p);
  if (n < 2) return p;
  ito_ult_t a{};
  if (ito_create(&a, c_fib, reinterpret_cast<void*>(n - 1)) != 0) std::abort();
  auto b = reinterpret_cast<std::intptr_t>(c_fib(reinterpret_cast<void*>(n - 2)));
  void* ra = nullptr;
  if (ito_join(a, &ra) != 0) std::abort();
  return reinterpret_cast<void*>(reinterpret_cast<std::intptr_t>(ra) + b);
}

TEST_F(c_api, fib_on_four_workers) {
  ito_options_t o = ITO_OPTIONS_INIT;
  o.workers = 4;
  ASSERT_EQ(ito_init(&o), 0);
  const int n = ito::test::tsan ? 15 : 22;
  long expect[2] = {0, 1};
  for (int i = 2; i <= n; ++i) expect[i % 2] = expect[0] + expect[1];
  ito_ult_t t{};
  ASSERT_EQ(ito_create(&t, c_fib, reinterpret_cast<void*>(n)), 0);
  void* r = nullptr;
  ASSERT_EQ(ito_join(t, &r), 0);
  EXPECT_EQ(reinterpret_cast<std::intptr_t>(r), expect[n % 2]);
  EXPECT_EQ(ito_finalize(), 0);
}

struct guard_counter {
  std::atomic<int>* n;
  ~guard_counter() { n->fetch_add(1); }
};

void* exit_deep(void* p) {
  auto* destroyed = static_cast<std::atomic<int>*>(p);
  struct recurse {
    static void go(std::atomic<int>* d, int depth) {
      guard_counter g{d};
      if (depth < 0) return;  // never: only there so that go() can return
      if (depth == 0) ito_exit(reinterpret_cast<void*>(std::intptr_t{777}));
      go(d, depth - 1);
    }
  };
  recurse::go(destroyed, 9);
  return nullptr;  // not reached
}

TEST_F(c_api, exit_unwinds_and_join_returns_its_value) {
  ASSERT_EQ(ito_init(nullptr), 0);
  std::atomic<int> destroyed{0};
  ito_ult_t t{};
  ASSERT_EQ(ito_create(&t, exit_deep, &destroyed), 0);
  void* r = nullptr;
  ASSERT_EQ(ito_join(t, &r), 0);
  EXPECT_EQ(reinterpret_cast<std::intptr_t>(r), 777);
  EXPECT_EQ(destroyed.load(), 10);
  EXPECT_EQ(ito_finalize(), 0);
}

TEST_F(c_api, detached_ults_run_to_completion_and_finalize_waits_for_them) {
  static std::atomic<int> done{0};
  done = 0;
  ito_options_t o = ITO_OPTIONS_INIT;
  o.workers = 3;
  ASSERT_EQ(ito_init(&o), 0);
  const int n = static_cast<int>(ito::test::scaled(20000));
  auto body = [](void*) -> void* {
    for (int i = 0; i < 3; ++i) ito_yield();
    done.fetch_add(1);
    return nullptr;
  };
  for (int i = 0; i < n; ++i) {
    if (i % 2) {
      ASSERT_EQ(ito_create_detached(body, nullptr), 0);
    } else {
      ito_ult_t t{};
      ASSERT_EQ(ito_create(&t, body, nullptr), 0);
      ASSERT_EQ(ito_detach(t), 0);
    }
  }
  EXPECT_EQ(ito_finalize(), 0);
  EXPECT_EQ(done.load(), n);
}

TEST_F(c_api, self_yield_sleep_and_workers) {
  ASSERT_EQ(ito_init(nullptr), 0);
  ito_ult_t main_self = ito_self();
  EXPECT_EQ(ito_self(), main_self);  // stable
  ito_ult_t t{};
  ASSERT_EQ(ito_create(&t, [](void*) -> void* {
              ito_ult_t me = ito_self();
              EXPECT_EQ(ito_yield(), 0);
              EXPECT_EQ(ito_yield_to_head(), 0);
              EXPECT_EQ(ito_self(), me);
              return reinterpret_cast<void*>(static_cast<std::uintptr_t>(me));
            }, nullptr), 0);
  void* r = nullptr;
  ASSERT_EQ(ito_join(t, &r), 0);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(r), t);  // ito_self() in the ULT == its handle
  EXPECT_NE(t, main_self);

  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(ito_sleep_ns(2'000'000), 0);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2));
  EXPECT_EQ(ito_sleep_ns(0), 0);
  EXPECT_EQ(ito_sleep_ns(-1), EINVAL);
  EXPECT_EQ(ito_finalize(), 0);
}

TEST_F(c_api, calls_outside_a_ult_return_eperm) {
  // No runtime at all.
  ito_ult_t t{};
  EXPECT_EQ(ito_create(&t, add_one, nullptr), EPERM);
  EXPECT_EQ(ito_create_detached(add_one, nullptr), EPERM);
  EXPECT_EQ(ito_join(t, nullptr), EPERM);
  EXPECT_EQ(ito_detach(t), EPERM);
  EXPECT_EQ(ito_yield(), EPERM);
  EXPECT_EQ(ito_yield_to_head(), EPERM);
  EXPECT_EQ(ito_sleep_ns(1), EPERM);
  EXPECT_EQ(ito_finalize(), EPERM);
  EXPECT_EQ(ito_workers(), 0u);
  EXPECT_EQ(ito_self(), ITO_ULT_NULL);

  // A plain OS thread while a runtime runs.
  ASSERT_EQ(ito_init(nullptr), 0);
  ASSERT_EQ(ito_create(&t, [](void*) -> void* { return nullptr; }, nullptr), 0);
  int codes[6] = {};
  std::thread([&] {
    ito_ult_t u{};
    codes[0] = ito_create(&u, add_one, nullptr);
    codes[1] = ito_join(t, nullptr);
    codes[2] = ito_yield();
    codes[3] = ito_sleep_ns(1);
    codes[4] = ito_finalize();
    codes[5] = ito_self() == ITO_ULT_NULL ? 0 : -1;
  }).join();
  EXPECT_EQ(codes[0], EPERM);
  EXPECT_EQ(codes[1], EPERM);
  EXPECT_EQ(codes[2], EPERM);
  EXPECT_EQ(codes[3], EPERM);
  EXPECT_EQ(codes[4], EPERM);
  EXPECT_EQ(codes[5], 0);
  EXPECT_EQ(ito_join(t, nullptr), 0);  // still joinable: the failed join did nothing
  EXPECT_EQ(ito_finalize(), 0);
}

TEST_F(c_api, finalize_from_a_ult_other_than_main_is_eperm) {
  ASSERT_EQ(ito_init(nullptr), 0);
  ito_ult_t t{};
  ASSERT_EQ(ito_create(&t, [](void*) -> void* {
              return reinterpret_cast<void*>(static_cast<std::intptr_t>(ito_finalize()));
            }, nullptr), 0);
  void* r = nullptr;
  ASSERT_EQ(ito_join(t, &r), 0);
  EXPECT_EQ(reinterpret_cast<std::intptr_t>(r), EPERM);
  EXPECT_EQ(ito_finalize(), 0);
}

std::atomic<bool> g_release{false};
void* wait_for_release(void*) {
  while (!g_release.load()) ito_yield();
  return reinterpret_cast<void*>(std::intptr_t{5});
}

TEST_F(c_api, join_errors_einval_esrch_edeadlk) {
  ito_options_t o = ITO_OPTIONS_INIT;
  o.workers = 2;
  ASSERT_EQ(ito_init(&o), 0);

  // Joining a detached ULT (still running, so its handle stays alive): EINVAL.
  g_release = false;
  ito_ult_t d{};
  ASSERT_EQ(ito_create(&d, wait_for_release, nullptr), 0);
  ASSERT_EQ(ito_detach(d), 0);
  EXPECT_EQ(ito_join(d, nullptr), EINVAL);
  EXPECT_EQ(ito_detach(d), EINVAL);  // detaching twice
  g_release = true;

  // Joining twice: ESRCH, also after the stack was reused by newer ULTs.
  ito_ult_t t{};
  ASSERT_EQ(ito_create(&t, add_one, nullptr), 0);
  ASSERT_EQ(ito_join(t, nullptr), 0);
  EXPECT_EQ(ito_join(t, nullptr), ESRCH);
  EXPECT_EQ(ito_detach(t), ESRCH);
  for (int i = 0; i < 200; ++i) {
    ito_ult_t u{};
    ASSERT_EQ(ito_create(&u, add_one, nullptr), 0);
    ASSERT_NE(u, t);  // the same stack may be reused, never the same handle so soon
    ASSERT_EQ(ito_join(u, nullptr), 0);
    ASSERT_EQ(ito_join(t, nullptr), ESRCH) << i;
  }

  // A stale handle must not reach the ULT now living on the same stack.
  ito_ult_t older{};
  ASSERT_EQ(ito_create(&older, add_one, nullptr), 0);
  ASSERT_EQ(ito_join(older, nullptr), 0);
  g_release = false;
  ito_ult_t newer{};
  ASSERT_EQ(ito_create(&newer, wait_for_release, nullptr), 0);
  EXPECT_EQ(ito_join(older, nullptr), ESRCH);
  EXPECT_EQ(ito_detach(older), ESRCH);
  g_release = true;
  void* r = nullptr;
  EXPECT_EQ(ito_join(newer, &r), 0);  // the failed calls did not touch it
  EXPECT_EQ(reinterpret_cast<std::intptr_t>(r), 5);

  // Joining oneself: EDEADLK (from a ULT and from the main ULT).
  ito_ult_t s{};
  ASSERT_EQ(ito_create(&s, [](void*) -> void* {
              return reinterpret_cast<void*>(static_cast<std::intptr_t>(ito_join(ito_self(), nullptr)));
            }, nullptr), 0);
  ASSERT_EQ(ito_join(s, &r), 0);
  EXPECT_EQ(reinterpret_cast<std::intptr_t>(r), EDEADLK);
  EXPECT_EQ(ito_join(ito_self(), nullptr), EDEADLK);

  // The main ULT cannot be joined or detached from another ULT.
  static ito_ult_t main_handle;
  main_handle = ito_self();
  ASSERT_EQ(ito_create(&s, [](void*) -> void* {
              int j = ito_join(main_handle, nullptr), d2 = ito_detach(main_handle);
              return reinterpret_cast<void*>(static_cast<std::intptr_t>(j * 1000 + d2));
            }, nullptr), 0);
  ASSERT_EQ(ito_join(s, &r), 0);
  EXPECT_EQ(reinterpret_cast<std::intptr_t>(r), EINVAL * 1000 + EINVAL);

  // Bad arguments.
  EXPECT_EQ(ito_join(ITO_ULT_NULL, nullptr), ESRCH);
  EXPECT_EQ(ito_join(ito_ult_t{12345}, nullptr), ESRCH);  // not a descriptor address
  EXPECT_EQ(ito_create(nullptr, add_one, nullptr), EINVAL);
  EXPECT_EQ(ito_create(&t, nullptr, nullptr), EINVAL);
  EXPECT_EQ(ito_create_detached(nullptr, nullptr), EINVAL);
  EXPECT_EQ(ito_finalize(), 0);
}

TEST_F(c_api, second_init_is_ebusy_also_under_a_cpp_runtime) {
  ASSERT_EQ(ito_init(nullptr), 0);
  EXPECT_EQ(ito_init(nullptr), EBUSY);
  std::thread([] { EXPECT_EQ(ito_init(nullptr), EBUSY); }).join();
  EXPECT_EQ(ito_finalize(), 0);
  EXPECT_EQ(ito_finalize(), EPERM);  // already stopped

  ito::start_main_thread_with_worker_size(2, [] {
    EXPECT_EQ(ito_init(nullptr), EBUSY);
    EXPECT_EQ(ito_finalize(), EPERM);  // not the C API's runtime
    // The other calls work in any runtime's ULTs.
    EXPECT_EQ(ito_workers(), 2u);
    ito_ult_t t{};
    ASSERT_EQ(ito_create(&t, add_one, reinterpret_cast<void*>(1)), 0);
    void* r = nullptr;
    EXPECT_EQ(ito_join(t, &r), 0);
    EXPECT_EQ(reinterpret_cast<std::intptr_t>(r), 2);
  });
}

// Environment variables for one scope.
struct scoped_env {
  std::string name;
  scoped_env(const char* n, const char* v) : name(n) { setenv(n, v, 1); }
  ~scoped_env() { unsetenv(name.c_str()); }
};

TEST_F(c_api, bad_options_return_einval_with_a_message_and_do_not_exit) {
  struct bad_option {
    ito_options_t opts;
    const char* message;
  };
  const bad_option cases[] = {
      {{5000, 0, 0, 0, ITO_STACKS_FIXED, 0, 0}, "workers=5000"},
      {{0, 100, 0, 0, ITO_STACKS_FIXED, 0, 0}, "stack_size=100"},
      {{0, std::size_t{4} << 30, 0, 0, ITO_STACKS_FIXED, 0, 0}, "stack_size=4294967296"},
      {{0, 0, 0, 0, 7, 0, 0}, "options.stacks=7"},
      {{0, 0, 0, 0, ITO_STACKS_FIXED, 100, 0}, "stack_block_size=100"},
      {{0, 0, 0, 0, ITO_STACKS_FIXED, 0, 9}, "options.stack_alloc=9"},
      // This test program is not linked with ito::split_stack.
      {{0, 0, 0, 0, ITO_STACKS_LAZY, 0, 0}, "split-stack"},
  };
  for (const auto& c : cases) {
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(ito_init(&c.opts), EINVAL) << c.message;
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find(c.message), std::string::npos) << err;
    EXPECT_EQ(ito_workers(), 0u);
  }
}

TEST_F(c_api, bad_environment_returns_einval_naming_the_variable) {
  struct bad_env {
    const char* name;
    const char* value;
    const char* range;
  };
  const bad_env cases[] = {
      {"ITO_WORKERS", "0", "[1, 1024]"},       {"ITO_WORKERS", "abc", "[1, 1024]"},
      {"ITO_WORKERS", "-3", "[1, 1024]"},      {"ITO_WORKERS", "2000", "[1, 1024]"},
      {"ITO_STACK_SIZE", "12", "[16K, 1G]"},   {"ITO_STACK_SIZE", "64Q", "[16K, 1G]"},
      {"ITO_STACK", "bogus", "fixed"},         {"ITO_BIND", "maybe", "1, true or yes; 0, false or no"},
      {"ITO_STATS", "2", "1, true or yes; 0, false or no"},
  };
  for (const auto& c : cases) {
    scoped_env env(c.name, c.value);
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(ito_init(nullptr), EINVAL) << c.name << "=" << c.value;
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find(std::string(c.name) + "=" + c.value), std::string::npos) << err;
    EXPECT_NE(err.find(c.range), std::string::npos) << err;
    EXPECT_EQ(ito_workers(), 0u);
  }
  // Options set in code win over the environment.
  scoped_env env("ITO_WORKERS", "abc");
  ito_options_t o = ITO_OPTIONS_INIT;
  o.workers = 1;
  ASSERT_EQ(ito_init(&o), 0);
  EXPECT_EQ(ito_workers(), 1u);
  EXPECT_EQ(ito_finalize(), 0);
}

TEST_F(c_api, cpp_ults_and_c_ults_mix) {
  ito::start_main_thread_with_worker_size(2, [] {
    // A C ULT that creates C++ ULTs, joined from C++ code through the C API.
    ito_ult_t t{};
    ASSERT_EQ(ito_create(&t, [](void*) -> void* {
                auto f = ito::create_thread([] { return 20; });
                return reinterpret_cast<void*>(static_cast<std::intptr_t>(ito::join(f) + 1));
              }, nullptr), 0);
    void* r = nullptr;
    ASSERT_EQ(ito_join(t, &r), 0);
    EXPECT_EQ(reinterpret_cast<std::intptr_t>(r), 21);
    // ito::exit() in a C ULT: join gives NULL.
    ASSERT_EQ(ito_create(&t, [](void*) -> void* { ito::exit(); }, nullptr), 0);
    r = &r;
    ASSERT_EQ(ito_join(t, &r), 0);
    EXPECT_EQ(r, nullptr);
  });
}

}  // namespace
