// SPDX-License-Identifier: Apache-2.0
// Misuse is reported, never undefined: bad ITO_* variables stop a C++ program
// with status 2 and a message naming the variable and what it accepts (the C
// API returns EINVAL instead); bad options throw config_error; ULT-only calls
// outside a ULT, bad joins and a second runtime throw usage_error with the
// POSIX code the C API returns for the same mistake.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cerrno>
#include <mutex>
#include <cstdlib>
#include <string>
#include <thread>

#include "ito/ito.h"
#include "ito/sync.hpp"
#include "ito/thread.hpp"
#include "death_support.hpp"
#include "test_support.hpp"

namespace {

using ito::test::expect_env_exit;

class misuse : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, ito::test::threadsafe_death_style); }
};

const std::string workers_range = "expected an integer in \\[1, 1024\\]";
const std::string stack_range = "expected a size in \\[16K, 1G\\] bytes";

TEST_F(misuse, bad_ito_workers_exits_with_status_2_naming_it) {
  expect_env_exit("ITO_WORKERS", "0", "ito: ITO_WORKERS=0 is invalid: " + workers_range);
  expect_env_exit("ITO_WORKERS", "abc", "ito: ITO_WORKERS=abc is invalid: " + workers_range);
  expect_env_exit("ITO_WORKERS", "-3", "ito: ITO_WORKERS=-3 is invalid: " + workers_range);
  expect_env_exit("ITO_WORKERS", "1025", "ITO_WORKERS=1025 is invalid: " + workers_range);
  expect_env_exit("ITO_WORKERS", "4x", "ITO_WORKERS=4x is invalid: " + workers_range);
  expect_env_exit("ITO_WORKERS", "99999999999999999999999", "ITO_WORKERS=9+ is invalid");
}

TEST_F(misuse, bad_ito_stack_size_exits_with_status_2_naming_it) {
  expect_env_exit("ITO_STACK_SIZE", "12", "ito: ITO_STACK_SIZE=12 is invalid: " + stack_range);
  expect_env_exit("ITO_STACK_SIZE", "2G", "ITO_STACK_SIZE=2G is invalid: " + stack_range);
  expect_env_exit("ITO_STACK_SIZE", "64KB", "ITO_STACK_SIZE=64KB is invalid: " + stack_range);
  expect_env_exit("ITO_STACK_SIZE", "-65536", "ITO_STACK_SIZE=-65536 is invalid");
}

TEST_F(misuse, bad_ito_stack_bind_and_stats_exit_with_status_2_naming_them) {
  expect_env_exit("ITO_STACK", "bogus", "ito: ITO_STACK=bogus is invalid: expected fixed, lazy or fair_use");
  expect_env_exit("ITO_BIND", "maybe", "ito: ITO_BIND=maybe is invalid: expected 1, true or yes; 0, false or no");
  expect_env_exit("ITO_STATS", "2", "ito: ITO_STATS=2 is invalid: expected 1, true or yes; 0, false or no");
}

TEST_F(misuse, an_unknown_ito_variable_draws_a_warning_naming_the_closest_one) {
  EXPECT_EXIT(
      {
        setenv("ITO_WORKRES", "2", 1);
        ito::start_main_thread([] {});
        std::exit(0);
      },
      ::testing::ExitedWithCode(0),
      "ito: warning: unknown environment variable ITO_WORKRES \\(did you mean ITO_WORKERS\\?\\)");
}

TEST_F(misuse, good_environment_values_are_accepted) {
  EXPECT_EXIT(
      {
        setenv("ITO_WORKERS", "3", 1);
        setenv("ITO_STACK_SIZE", "128K", 1);
        setenv("ITO_BIND", "0", 1);
        setenv("ITO_STATS", "false", 1);
        setenv("ITO_STACK", "fixed", 1);
        ito::runtime rt;
        bool ok = rt.workers() == 3 && rt.settings().stack_size == 128 * 1024 &&
                  rt.settings().bind == false && rt.settings().stats == false;
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// The C API reports the same mistakes as EINVAL and the process goes on.
TEST_F(misuse, bad_environment_through_the_c_api_is_einval_not_an_exit) {
  struct bad {
    const char* name;
    const char* value;
  };
  for (const bad& b : {bad{"ITO_WORKERS", "0"}, bad{"ITO_WORKERS", "abc"}, bad{"ITO_WORKERS", "-3"},
                       bad{"ITO_STACK_SIZE", "12"}, bad{"ITO_STACK", "bogus"},
                       bad{"ITO_BIND", "maybe"}}) {
    EXPECT_EXIT(
        {
          setenv(b.name, b.value, 1);
          int rc = ito_init(nullptr);
          std::fprintf(stderr, "ito_init returned %d\n", rc);
          std::exit(rc == EINVAL && ito_workers() == 0 ? 0 : 1);
        },
        ::testing::ExitedWithCode(0),
        std::string(b.name) + "=" + b.value + " is invalid: expected .*\nito_init returned 22")
        << b.name << "=" << b.value;
  }
}

TEST_F(misuse, bad_options_throw_config_error) {
  ito::options o;
  o.workers = 5000;
  try {
    ito::runtime rt(o);
    FAIL() << "workers=5000 accepted";
  } catch (const ito::config_error& e) {
    EXPECT_FALSE(e.from_environment());
    EXPECT_NE(std::string(e.what()).find("options.workers=5000"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[1, 1024]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ito::start_main_thread_with_worker_size(5000, [] {}), ito::config_error);
  ito::options s;
  s.stack_size = 1000;
  EXPECT_THROW(ito::runtime{s}, ito::config_error);
  s.stack_size = std::size_t{2} << 30;
  EXPECT_THROW(ito::runtime{s}, ito::config_error);
  // Options set in code are not overridden by a bad environment, and a bad
  // option is the program's fault: it throws rather than exits.
  EXPECT_EXIT(
      {
        setenv("ITO_WORKERS", "abc", 1);
        ito::options ok;
        ok.workers = 2;
        { ito::runtime rt(ok); }
        ito::options bad_opt;
        bad_opt.workers = 5000;
        try {
          ito::runtime rt(bad_opt);
        } catch (const ito::config_error&) {
          std::exit(0);
        }
        std::exit(1);
      },
      ::testing::ExitedWithCode(0), "");
  // A runtime still starts afterwards.
  EXPECT_EQ(ito::start_main_thread_with_worker_size(1, [] { return 1; }), 1);
}

template <class F>
void expect_usage_error(F&& f, int code, const char* what) {
  try {
    f();
    ADD_FAILURE() << what << ": no usage_error";
  } catch (const ito::usage_error& e) {
    EXPECT_EQ(e.code(), code) << what << ": " << e.what();
  }
}

TEST_F(misuse, ult_only_calls_outside_a_ult_throw_eperm) {
  // No runtime at all.
  expect_usage_error([] { (void)ito::create_thread(ito::own_ult, [] {}); }, EPERM, "create_thread");
  expect_usage_error([] { ito::yield(); }, EPERM, "yield");
  expect_usage_error([] { ito::lowlevel::join(ito::ult_id{}); }, EPERM, "low-level join");
  expect_usage_error([] { (void)ito::lowlevel::allocate(64); }, EPERM, "allocate");
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  // The deprecated ULT-only sleep (ito::sleep_for sleeps any thread).
  expect_usage_error([] { ito::sleep_for_ns(1); }, EPERM, "sleep_for_ns");
#pragma GCC diagnostic pop
  expect_usage_error([] { ito::lowlevel::detach(ito::ult_id{}); }, EPERM, "detach");
  EXPECT_FALSE(ito::in_ult());
  EXPECT_EQ(ito::current_worker_index(), -1);
  EXPECT_EQ(ito::this_ult_id(), ~0ull);

  // A plain OS thread while a runtime runs.
  ito::start_main_thread_with_worker_size(2, [] {
    auto f = ito::create_thread(ito::own_ult, [] { return 9; });
    std::thread([&] {
      EXPECT_FALSE(ito::in_ult());
      expect_usage_error([] { (void)ito::create_thread(ito::own_ult, [] {}); }, EPERM, "create_thread");
      expect_usage_error([] { ito::yield(true); }, EPERM, "yield");
      expect_usage_error([&] { (void)ito::join(f); }, EPERM, "join");
      expect_usage_error([&] { f.wait(); }, EPERM, "wait");
    }).join();
    EXPECT_TRUE(f.valid());  // the failed join left it alone
    EXPECT_EQ(ito::join(f), 9);
  });
}

TEST_F(misuse, ult_only_calls_outside_a_ult_are_eperm_in_c) {
  ito_ult_t t{};
  EXPECT_EQ(ito_create(&t, [](void*) -> void* { return nullptr; }, nullptr), EPERM);
  EXPECT_EQ(ito_yield(), EPERM);
  EXPECT_EQ(ito_join(t, nullptr), EPERM);
  EXPECT_EQ(ito_sleep_ns(10), EPERM);
  ito::start_main_thread_with_worker_size(2, [] {
    int codes[3] = {};
    std::thread([&] {
      ito_ult_t u{};
      codes[0] = ito_create(&u, [](void*) -> void* { return nullptr; }, nullptr);
      codes[1] = ito_yield();
      codes[2] = ito_join(ito_self(), nullptr);
    }).join();
    EXPECT_EQ(codes[0], EPERM);
    EXPECT_EQ(codes[1], EPERM);
    EXPECT_EQ(codes[2], EPERM);
  });
}

TEST_F(misuse, joining_a_detached_ult) {
  // Static: the detached ULTs may still read them after this scope ends.
  static std::atomic<bool> release{false};
  static std::atomic<int> finished{0};
  release = false;
  finished = 0;
  ito::start_main_thread_with_worker_size(2, [] {
    // C++ (low-level API): usage_error(EINVAL). The ULT waits for `release`,
    // so it is still running (and its handle alive) while we misuse it.
    auto th = ito::lowlevel::allocate(1);
    ito::lowlevel::fork(th, [](void*) {
      while (!release.load()) ito::yield();
      finished.fetch_add(1);
    });
    ito::lowlevel::detach(th.id);
    expect_usage_error([&] { ito::lowlevel::join(th.id); }, EINVAL, "join after detach");
    expect_usage_error([&] { ito::lowlevel::detach(th.id); }, EINVAL, "detach twice");

    // C: EINVAL.
    ito_ult_t t{};
    ASSERT_EQ(ito_create(&t, [](void*) -> void* {
                while (!release.load()) ito_yield();
                finished.fetch_add(1);
                return nullptr;
              }, nullptr), 0);
    EXPECT_EQ(ito_detach(t), 0);
    EXPECT_EQ(ito_join(t, nullptr), EINVAL);
    EXPECT_EQ(ito_detach(t), EINVAL);
    release = true;
  });
  EXPECT_EQ(finished.load(), 2);  // the runtime waited for both
}

TEST_F(misuse, joining_twice) {
  ito::start_main_thread_with_worker_size(2, [] {
    // C++ futures: the second get() finds no ULT: usage_error(EINVAL).
    auto f = ito::create_thread(ito::own_ult, [] { return 1; });
    EXPECT_EQ(f.get(), 1);
    expect_usage_error([&] { (void)f.get(); }, EINVAL, "second get");
    expect_usage_error([&] { (void)ito::join(f); }, EINVAL, "join after get");
    // The low-level API: the ULT is gone: usage_error(ESRCH).
    auto th = ito::lowlevel::allocate(8);
    ito::lowlevel::fork(th, [](void*) {});
    ito::lowlevel::join(th.id);
    expect_usage_error([&] { ito::lowlevel::join(th.id); }, ESRCH, "low-level join twice");
    // C: ESRCH.
    ito_ult_t t{};
    ASSERT_EQ(ito_create(&t, [](void*) -> void* { return nullptr; }, nullptr), 0);
    EXPECT_EQ(ito_join(t, nullptr), 0);
    EXPECT_EQ(ito_join(t, nullptr), ESRCH);
  });
}

TEST_F(misuse, joining_oneself_in_c_is_edeadlk) {
  ito::start_main_thread_with_worker_size(1, [] {
    EXPECT_EQ(ito_join(ito_self(), nullptr), EDEADLK);
    ito_ult_t t{};
    ASSERT_EQ(ito_create(&t, [](void*) -> void* {
                return reinterpret_cast<void*>(static_cast<std::intptr_t>(ito_join(ito_self(), nullptr)));
              }, nullptr), 0);
    void* r = nullptr;
    EXPECT_EQ(ito_join(t, &r), 0);
    EXPECT_EQ(reinterpret_cast<std::intptr_t>(r), EDEADLK);
  });
}

TEST_F(misuse, a_second_runtime_while_one_runs_is_ebusy) {
  ito::start_main_thread_with_worker_size(2, [] {
    expect_usage_error([] { ito::runtime second; }, EBUSY, "second runtime");
    expect_usage_error([] { ito::start_main_thread([] {}); }, EBUSY, "nested start_main_thread");
    EXPECT_EQ(ito_init(nullptr), EBUSY);
    // Also from another OS thread.
    std::thread([] {
      expect_usage_error([] { ito::runtime second; }, EBUSY, "second runtime elsewhere");
      EXPECT_EQ(ito_init(nullptr), EBUSY);
    }).join();
    // The running one is unharmed.
    EXPECT_EQ(ito::join(ito::create_thread(ito::own_ult, [] { return 5; })), 5);
  });
  // And with the C API's runtime running.
  ASSERT_EQ(ito_init(nullptr), 0);
  expect_usage_error([] { ito::runtime second; }, EBUSY, "C++ runtime under the C one");
  EXPECT_EQ(ito_finalize(), 0);
}

}  // namespace

namespace {

// A ULT blocked forever makes the runtime's end wait forever; after a grace
// period it says so, naming the ULTs and what they wait on (then waits on).
TEST(hang_report, the_end_of_a_runtime_names_the_ults_it_still_waits_for) {
  EXPECT_EXIT(
      {
        alarm(9);  // the runtime waits on after its report: end the child
        static ito::mutex m;
        ito::start_main_thread_with_worker_size(2, [] {
          m.lock();  // never unlocked: the ULT below waits for it forever
          (void)ito::create_thread(ito::own_ult, [] { std::lock_guard<ito::mutex> g(m); });
          (void)ito::create_thread(ito::own_ult, [] { ito::sleep_for(std::chrono::nanoseconds(1'000'000'000'000'000LL)); });
        });
      },
      ::testing::KilledBySignal(SIGALRM),
      "ito: the runtime is ending but 2 ULT\\(s\\) have not finished after 5 s(.|\n)*"
      "ULT [0-9]+ \\(detached\\): blocked in mutex on 0x[0-9a-f]+");
}

}  // namespace

namespace {

// dump_ults lists every live ULT with what it waits on; ITO_DUMP_SIGNAL does
// it on a signal, for a program that hangs.
TEST(dump_ults, lists_live_ults_and_what_they_wait_on) {
  ito::start_main_thread_with_worker_size(2, [] {
    ito::mutex m;
    std::unique_lock<ito::mutex> hold(m);
    auto waiter = ito::create_thread(ito::own_ult, [&] { std::lock_guard<ito::mutex> g(m); });
    auto sleeper = ito::create_thread(ito::own_ult, [] { ito::sleep_for(std::chrono::nanoseconds(200'000'000)); });
    auto joiner = ito::create_thread(ito::own_ult, [&] { ito::join(sleeper); });
    ito::sleep_for(std::chrono::nanoseconds(20'000'000));
    char* text = nullptr;
    std::size_t size = 0;
    FILE* out = open_memstream(&text, &size);
    std::size_t n = ito::dump_ults(out);
    std::fclose(out);
    std::string dump(text, size);
    std::free(text);
    EXPECT_EQ(n, 3u) << dump;
    EXPECT_NE(dump.find("blocked in sleep"), std::string::npos) << dump;
    EXPECT_NE(dump.find("blocked in mutex on 0x"), std::string::npos) << dump;
    EXPECT_NE(dump.find("blocked in join of ULT"), std::string::npos) << dump;
    hold.unlock();
    ito::join(waiter);
    ito::join(joiner);
  });
  EXPECT_EQ(ito::dump_ults(stdout), 0u);  // no runtime
}

TEST(dump_ults, the_dump_signal_lists_them_on_stderr) {
  EXPECT_EXIT(
      {
        setenv("ITO_DUMP_SIGNAL", "SIGUSR2", 1);
        ito::start_main_thread_with_worker_size(2, [] {
          auto sleeper = ito::create_thread(ito::own_ult, [] { ito::sleep_for(std::chrono::nanoseconds(300'000'000)); });
          ito::sleep_for(std::chrono::nanoseconds(20'000'000));
          raise(SIGUSR2);
          ito::sleep_for(std::chrono::nanoseconds(100'000'000));  // the dump thread writes meanwhile
          ito::join(sleeper);
        });
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "ito: live ULTs(.|\n)*blocked in sleep(.|\n)*1 live ULT");
}

// A dump from another OS thread races runtimes that start and stop: it sees a
// runtime whole or none, never one being torn down (ASan/TSan would say).
TEST(dump_ults, a_dump_racing_a_stopping_runtime_sees_it_whole_or_not_at_all) {
  std::FILE* sink = std::fopen("/dev/null", "w");
  ASSERT_NE(sink, nullptr);
  std::atomic<bool> done{false};
  std::thread dumper([&] {
    while (!done.load()) ito::dump_ults(sink);
  });
  for (int round = 0; round < 20; ++round)
    ito::start_main_thread_with_worker_size(2, [] {
      auto child = ito::create_thread(ito::own_ult, [] { ito::yield(); });
      ito::join(child);
    });
  done = true;
  dumper.join();
  std::fclose(sink);
}

TEST(dump_ults, a_bad_dump_signal_stops_the_program_at_start) {
  ito::test::expect_env_exit("ITO_DUMP_SIGNAL", "SIGKILL", "ITO_DUMP_SIGNAL=SIGKILL is invalid");
  ito::test::expect_env_exit("ITO_DUMP_SIGNAL", "USR9", "ITO_DUMP_SIGNAL=USR9 is invalid");
}

}  // namespace
