// SPDX-License-Identifier: Apache-2.0
// ITO_DEADLOCK: a program whose ULTs all wait on each other is told so, with
// its ULTs and what they wait on, and ends with status 4; nothing is said of
// a program that only waits for a while (sleeps, I/O from another process, a
// pool job, a plain OS thread, a timed wait). Each case runs in a death-test
// child bounded by alarm(): a deadlock report must come within 20 s, and a
// case that must not be reported ends by itself within ~3 s.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "death_support.hpp"
#include "ito/delegate.hpp"
#include "ito/io.hpp"
#include "ito/os_pool.hpp"
#include "ito/parallel.hpp"
#include "ito/sync.hpp"
#include "ito/thread.hpp"
#include "ito/ult.hpp"
#include "test_support.hpp"

namespace {

using namespace std::chrono_literals;
using ::testing::AllOf;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int deadlock_status = 4;
constexpr int alarm_status = 7;  // the child's SIGALRM handler: still waiting

// In the child: end with alarm_status after `seconds` (a hang is bounded).
void end_after(unsigned seconds) {
  struct sigaction sa {};
  sa.sa_handler = [](int) { _exit(alarm_status); };
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, nullptr);
  alarm(seconds);
}

void prepare_child(const char* mode, const char* workers) {
  if (mode) setenv("ITO_DEADLOCK", mode, 1);
  else unsetenv("ITO_DEADLOCK");
  if (workers) setenv("ITO_WORKERS", workers, 1);
}

// Two ULTs take two mutexes in opposite orders (each holds its first when it
// asks for its second); the main ULT joins one of them.
void two_mutexes_opposite_order() {
  ito::start_main_thread([] {
    static ito::mutex first, second;
    static ito::barrier both_hold(2);
    auto a = ito::create_thread(ito::own_ult, [] {
      std::lock_guard one(first);
      both_hold.arrive_and_wait();
      std::lock_guard two(second);
    });
    auto b = ito::create_thread(ito::own_ult, [] {
      std::lock_guard one(second);
      both_hold.arrive_and_wait();
      std::lock_guard two(first);
    });
    a.get();
    b.get();
  });
}

// The main ULT joins a ULT that waits on a condition variable nobody signals.
void join_of_unsignalled_wait() {
  ito::start_main_thread([] {
    static ito::mutex m;
    static ito::condition_variable cv;
    auto waiter = ito::create_thread(ito::own_ult, [] {
      std::unique_lock lock(m);
      cv.wait(lock);
    });
    waiter.get();
  });
}

bool foreign_thread() {
  // TSan runs a background thread of its own, and so does qemu-user (its RCU
  // thread shows in /proc/self/task): a thread outside ito, so the watch
  // (rightly) never reports.
  return ito::test::tsan || ito::test::emulated;
}

TEST(Deadlock, TwoMutexesInOppositeOrderAreReported) {
  if (foreign_thread()) GTEST_SKIP() << "TSan's or qemu's own thread rules the report out";
  for (const char* workers : {"1", "3"}) {
    EXPECT_EXIT(
        {
          prepare_child(nullptr, workers);
          end_after(20);
          two_mutexes_opposite_order();
        },
        ::testing::ExitedWithCode(deadlock_status),
        "ito: deadlock: every ULT is blocked.*\n"
        "(.*\n)?ito:   ULT [0-9]+: blocked in mutex on 0x[0-9a-f]+\n"
        "(.*\n)?ito:   ULT [0-9]+: blocked in mutex on 0x[0-9a-f]+\n"
        "(.*\n)*ito:   main ULT: blocked in join of ULT [0-9]+\n"
        "ito: 2 ULT\\(s\\) and the main ULT can never continue; the process ends with exit "
        "status 4")
        << "ITO_WORKERS=" << workers;
  }
}

TEST(Deadlock, JoinOfUnsignalledConditionVariableIsReported) {
  if (foreign_thread()) GTEST_SKIP() << "TSan's or qemu's own thread rules the report out";
  EXPECT_EXIT(
      {
        prepare_child("abort", "2");
        end_after(20);
        join_of_unsignalled_wait();
      },
      ::testing::ExitedWithCode(deadlock_status),
      "ito:   ULT [0-9]+: blocked in condition_variable on 0x[0-9a-f]+\n"
      "ito:   main ULT: blocked in join of ULT [0-9]+\n");
}

// The main ULT holds a mutex across parallel_invoke; its second branch, taken
// by the other worker (a ULT of its own there), asks for that mutex: the main
// ULT waits for the branch, the branch for the main ULT.
void branch_waits_for_its_callers_mutex() {
  ito::start_main_thread([] {
    static ito::mutex m;
    std::atomic<bool> second_started{false};
    std::lock_guard held(m);
    ito::parallel_invoke(
        [&] {
          while (!second_started.load()) ito::yield();
        },
        [&] {
          second_started.store(true);
          std::lock_guard waits(m);
        });
  });
}

TEST(Deadlock, ParallelInvokeWaitingForItsStolenBranchIsReported) {
  if (foreign_thread()) GTEST_SKIP() << "TSan's or qemu's own thread rules the report out";
  EXPECT_EXIT(
      {
        prepare_child("abort", "2");
        end_after(20);
        branch_waits_for_its_callers_mutex();
      },
      ::testing::ExitedWithCode(deadlock_status),
      "ito:   ULT [0-9]+ \\(parallel_invoke branch 0x[0-9a-f]+\\): blocked in mutex on 0x[0-9a-f]+\n"
      "ito:   main ULT: blocked in parallel_invoke on 0x[0-9a-f]+\n");
}

TEST(Deadlock, MainBlockedOnMutexNamesIt) {
  if (foreign_thread()) GTEST_SKIP() << "TSan's or qemu's own thread rules the report out";
  EXPECT_EXIT(
      {
        prepare_child(nullptr, "2");
        end_after(20);
        ito::start_main_thread([] {
          static ito::mutex m;
          ito::create_thread(ito::own_ult, [] { m.lock(); }).get();  // it ends holding m
          m.lock();
        });
      },
      ::testing::ExitedWithCode(deadlock_status),
      "ito:   main ULT: blocked in mutex on 0x[0-9a-f]+\n"
      "ito: 0 ULT\\(s\\) and the main ULT can never continue");
}

// Every kind of wait the watch counts, at once: a barrier nobody else reaches,
// a semaphore nobody releases, a shared lock behind a writer that waits for
// a join, a call_once whose function waits on a condition variable and a
// second caller of it.
TEST(Deadlock, EveryKindOfWaitIsNamed) {
  if (foreign_thread()) GTEST_SKIP() << "TSan's or qemu's own thread rules the report out";
  EXPECT_EXIT(
      {
        prepare_child(nullptr, "2");
        end_after(20);
        ito::start_main_thread([] {
          static ito::barrier two(2);
          static ito::counting_semaphore none(0);
          static ito::shared_mutex rw;
          static ito::once_flag once;
          static ito::mutex m;
          static ito::condition_variable never;
          static ito::counting_semaphore inside(0);
          auto at_barrier = ito::create_thread(ito::own_ult, [] { two.arrive_and_wait(); });
          auto at_semaphore = ito::create_thread(ito::own_ult, [] { none.acquire(); });
          auto in_once = ito::create_thread(ito::own_ult, [] {
            ito::call_once(once, [] {
              std::unique_lock lock(m);
              inside.release();
              never.wait(lock);
            });
          });
          inside.acquire();  // the second caller must come while the first runs
          auto behind_once = ito::create_thread(ito::own_ult, [] { ito::call_once(once, [] {}); });
          rw.lock();
          auto reader = ito::create_thread(ito::own_ult, [] { rw.lock_shared(); });
          at_barrier.get();
        });
      },
      ::testing::ExitedWithCode(deadlock_status),
      AllOf(HasSubstr("ito: deadlock: every ULT is blocked"),
            ContainsRegex(": blocked in barrier on 0x[0-9a-f]+\n"),
            ContainsRegex(": blocked in counting_semaphore on 0x[0-9a-f]+\n"),
            ContainsRegex(": blocked in condition_variable on 0x[0-9a-f]+\n"),
            ContainsRegex(": blocked in once_flag on 0x[0-9a-f]+\n"),
            ContainsRegex(": blocked in shared_mutex on 0x[0-9a-f]+\n"),
            ContainsRegex("main ULT: blocked in join of ULT [0-9]+\n"
                          "ito: 5 ULT\\(s\\) and the main ULT can never continue")));
}

TEST(Deadlock, ReportModeReportsAndKeepsWaiting) {
  if (foreign_thread()) GTEST_SKIP() << "TSan's or qemu's own thread rules the report out";
  EXPECT_EXIT(
      {
        prepare_child("report", "2");
        end_after(6);
        join_of_unsignalled_wait();
      },
      ::testing::ExitedWithCode(alarm_status),
      "main ULT: blocked in join.*\n"
      "ito: 1 ULT\\(s\\) and the main ULT can never continue; the process is left waiting "
      "\\(ITO_DEADLOCK=report\\)");
}

TEST(Deadlock, IgnoreModeKeepsHanging) {
  EXPECT_EXIT(
      {
        prepare_child("ignore", "2");
        end_after(3);
        join_of_unsignalled_wait();
      },
      ::testing::ExitedWithCode(alarm_status), Not(HasSubstr("deadlock")));
}

TEST(Deadlock, BadValueStopsAtStart) {
  ito::test::expect_env_exit("ITO_DEADLOCK", "sometimes",
                             "ito: ITO_DEADLOCK=sometimes is invalid: expected report, abort or "
                             "ignore");
}

// --- Waits that end by themselves: never reported. Each takes 2-2.5 s, in
// which every worker is idle and the main ULT waits on a condition variable
// or a join (what a deadlock would show).

TEST(NoDeadlock, LongSleeper) {
  EXPECT_EXIT(
      {
        prepare_child("abort", "2");
        end_after(30);
        ito::start_main_thread([] {
          static ito::mutex m;
          static ito::condition_variable cv;
          static bool done = false;
          auto sleeper = ito::create_thread(ito::own_ult, [] {
            ito::sleep_for(std::chrono::nanoseconds(2'500'000'000));
            std::lock_guard lock(m);
            done = true;
            cv.notify_all();
          });
          {
            std::unique_lock lock(m);
            cv.wait(lock, [] { return done; });
          }
          sleeper.get();
        });
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), Not(HasSubstr("deadlock")));
}

TEST(NoDeadlock, SocketReadThatAnotherProcessAnswers) {
  EXPECT_EXIT(
      {
        prepare_child("abort", "2");
        end_after(30);
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) _exit(10);
        pid_t peer = fork();
        if (peer == 0) {  // the peer: a process, not a thread of this one
          close(sv[0]);
          sleep(2);
          if (write(sv[1], "x", 1) != 1) _exit(1);
          _exit(0);
        }
        close(sv[1]);
        ito::start_main_thread([fd = sv[0]] {
          auto reader = ito::create_thread(ito::own_ult, [fd] {
            char c = 0;
            if (ito::io::read(fd, &c, 1) != 1 || c != 'x') std::abort();
          });
          reader.get();  // the main ULT waits in a join meanwhile
        });
        int status = 0;
        waitpid(peer, &status, 0);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), Not(HasSubstr("deadlock")));
}

TEST(NoDeadlock, PoolJobTakingTwoSeconds) {
  EXPECT_EXIT(
      {
        prepare_child("abort", "2");
        end_after(30);
        ito::start_main_thread([] {
          static ito::mutex m;
          static ito::condition_variable cv;
          static bool done = false;
          ito::os_pool pool;
          // Nobody waits for the job's future: only the count of jobs in
          // flight tells the watch that a pool thread may still wake someone.
          auto job = pool.submit([] {
            std::this_thread::sleep_for(2s);
            std::lock_guard lock(m);
            done = true;
            cv.notify_all();
          });
          std::unique_lock lock(m);
          cv.wait(lock, [] { return done; });
        });
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), Not(HasSubstr("deadlock")));
}

TEST(NoDeadlock, DelegatedCallTakingTwoSeconds) {
  EXPECT_EXIT(
      {
        prepare_child("abort", "2");
        end_after(30);
        ito::start_main_thread([] {
          // A ULT in a delegated call while the main ULT joins it.
          auto caller = ito::create_thread(ito::own_ult, [] { ito::delegate([] { ::usleep(2'000'000); }); });
          caller.get();
        });
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), Not(HasSubstr("deadlock")));
}

TEST(NoDeadlock, PlainOsThreadNotifiesAfterTwoSeconds) {
  EXPECT_EXIT(
      {
        prepare_child("abort", "2");
        end_after(30);
        static ito::mutex m;
        static ito::condition_variable cv;
        static bool done = false;
        std::thread outside([] {
          std::this_thread::sleep_for(2s);
          std::lock_guard lock(m);
          done = true;
          cv.notify_all();
        });
        ito::start_main_thread([] {
          std::unique_lock lock(m);
          cv.wait(lock, [] { return done; });
        });
        outside.join();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), Not(HasSubstr("deadlock")));
}

TEST(NoDeadlock, TimedWaitThatTimesOut) {
  EXPECT_EXIT(
      {
        prepare_child("abort", "2");
        end_after(30);
        ito::start_main_thread([] {
          static ito::mutex m;
          static ito::condition_variable cv;
          auto waiter = ito::create_thread(ito::own_ult, [] {
            std::unique_lock lock(m);
            if (cv.wait_for(lock, 2s) != std::cv_status::timeout) std::abort();
          });
          waiter.get();
        });
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), Not(HasSubstr("deadlock")));
}

}  // namespace
