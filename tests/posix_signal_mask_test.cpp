// SPDX-License-Identifier: Apache-2.0
// A thread other than main blocks a signal and sends it to itself (raise,
// pthread_kill of pthread_self): the signal stays pending for that thread,
// not for the process, whose main thread here leaves it unblocked, and is
// delivered when the thread unblocks it, before pthread_sigmask returns.
// SIGKILL and SIGSTOP cannot be blocked. (LTP pthread_sigmask/4-1, 5-1,
// 6-1, 10-1: the handler ran on the main thread's worker instead.)
#define ITO_PTHREAD_NO_RENAME 1
#include "ito/pthread.h"

#include <gtest/gtest.h>

#include <csignal>
#include <ctime>

namespace {

volatile sig_atomic_t g_handled = 0;
void count(int) { g_handled = g_handled + 1; }

sigset_t just(int sig) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, sig);
  return s;
}

bool pending(int sig) {
  sigset_t s;
  return ito_sigpending(&s) == 0 && sigismember(&s, sig) == 1;
}

// Gives a misdirected delivery time to show: the main thread's worker takes
// a process-directed signal at once, or as it wakes.
void pause_a_little() {
  timespec ts{0, 50 * 1000 * 1000};
  ito_nanosleep(&ts, nullptr);
}

struct outcome {
  int ran_while_blocked = -1;
  bool pending_while_blocked = false;
  int ran_after_unblock = -1;
  bool pending_after_unblock = true;
};

// raise or pthread_kill(pthread_self()) of a signal the thread blocks.
template <class Send>
void* blocked_then_unblocked(void* arg) {
  auto* out = static_cast<outcome*>(arg);
  const sigset_t usr1 = just(SIGUSR1);
  g_handled = 0;
  if (ito_pthread_sigmask(SIG_BLOCK, &usr1, nullptr) != 0) return nullptr;
  Send{}();
  pause_a_little();
  out->ran_while_blocked = g_handled;
  out->pending_while_blocked = pending(SIGUSR1);
  if (ito_pthread_sigmask(SIG_UNBLOCK, &usr1, nullptr) != 0) return nullptr;
  out->ran_after_unblock = g_handled;  // read at once: delivered before the call returned
  out->pending_after_unblock = pending(SIGUSR1);
  return nullptr;
}

struct by_raise {
  void operator()() const { ito_raise(SIGUSR1); }
};
struct by_pthread_kill {
  void operator()() const { ito_pthread_kill(ito_pthread_self(), SIGUSR1); }
};

template <class Send>
void check_self_signal() {
  struct sigaction sa {};
  sa.sa_handler = count;
  sigemptyset(&sa.sa_mask);
  struct sigaction old {};
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  // The main thread leaves SIGUSR1 unblocked: a process-directed copy would
  // be taken there.
  sigset_t main_mask;
  ASSERT_EQ(ito_pthread_sigmask(SIG_BLOCK, nullptr, &main_mask), 0);
  ASSERT_EQ(sigismember(&main_mask, SIGUSR1), 0);
  for (int round = 0; round < 20; ++round) {
    outcome out;
    pthread_t t;
    ASSERT_EQ(ito_pthread_create(&t, nullptr, blocked_then_unblocked<Send>, &out), 0);
    ASSERT_EQ(ito_pthread_join(t, nullptr), 0);
    EXPECT_EQ(out.ran_while_blocked, 0) << "round " << round;
    EXPECT_TRUE(out.pending_while_blocked) << "round " << round;
    EXPECT_EQ(out.ran_after_unblock, 1) << "round " << round;
    EXPECT_FALSE(out.pending_after_unblock) << "round " << round;
    if (::testing::Test::HasFailure()) break;
  }
  sigaction(SIGUSR1, &old, nullptr);
}

TEST(PosixSignalMask, RaisedWhileBlockedStaysPendingForTheThread) { check_self_signal<by_raise>(); }

TEST(PosixSignalMask, PthreadKillOfSelfWhileBlockedStaysPendingForTheThread) {
  check_self_signal<by_pthread_kill>();
}

// sigwait takes the pending signal at once; its handler never runs.
void* raise_then_sigwait(void* arg) {
  const sigset_t usr1 = just(SIGUSR1);
  g_handled = 0;
  int* result = static_cast<int*>(arg);
  if (ito_pthread_sigmask(SIG_BLOCK, &usr1, nullptr) != 0) return nullptr;
  ito_raise(SIGUSR1);
  int sig = 0;
  result[0] = ito_sigwait(&usr1, &sig);
  result[1] = sig;
  result[2] = pending(SIGUSR1);
  ito_pthread_sigmask(SIG_UNBLOCK, &usr1, nullptr);
  result[3] = g_handled;
  return nullptr;
}

TEST(PosixSignalMask, SigwaitTakesASelfSentPendingSignal) {
  struct sigaction sa {};
  sa.sa_handler = count;
  sigemptyset(&sa.sa_mask);
  struct sigaction old {};
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  int result[4] = {-1, -1, -1, -1};
  pthread_t t;
  ASSERT_EQ(ito_pthread_create(&t, nullptr, raise_then_sigwait, result), 0);
  ASSERT_EQ(ito_pthread_join(t, nullptr), 0);
  sigaction(SIGUSR1, &old, nullptr);
  EXPECT_EQ(result[0], 0);
  EXPECT_EQ(result[1], SIGUSR1);
  EXPECT_EQ(result[2], 0) << "taken, no longer pending";
  EXPECT_EQ(result[3], 0) << "the handler never ran";
}

void* try_to_block_kill_and_stop(void* arg) {
  sigset_t s = just(SIGKILL);
  sigaddset(&s, SIGSTOP);
  sigaddset(&s, SIGUSR2);
  int* result = static_cast<int*>(arg);
  result[0] = ito_pthread_sigmask(SIG_SETMASK, &s, nullptr);
  sigset_t now;
  ito_pthread_sigmask(SIG_BLOCK, nullptr, &now);
  result[1] = sigismember(&now, SIGKILL);
  result[2] = sigismember(&now, SIGSTOP);
  result[3] = sigismember(&now, SIGUSR2);
  const sigset_t usr2 = just(SIGUSR2);
  ito_pthread_sigmask(SIG_UNBLOCK, &usr2, nullptr);
  return nullptr;
}

void* pending_of_new_thread(void* arg) {
  *static_cast<bool*>(arg) = pending(SIGUSR2);
  return nullptr;
}

// The main thread's own pending signal is not a new thread's, whichever
// worker (the main thread's included) runs it (LTP pthread_create/8-1).
TEST(PosixSignalMask, ANewThreadHasNoneOfMainsPendingSignals) {
  struct sigaction sa {};
  sa.sa_handler = count;
  sigemptyset(&sa.sa_mask);
  struct sigaction old {};
  ASSERT_EQ(sigaction(SIGUSR2, &sa, &old), 0);
  const sigset_t usr2 = just(SIGUSR2);
  sigset_t saved;
  ASSERT_EQ(ito_pthread_sigmask(SIG_BLOCK, &usr2, &saved), 0);
  g_handled = 0;
  ASSERT_EQ(ito_raise(SIGUSR2), 0);
  ASSERT_TRUE(pending(SIGUSR2)) << "pending for the main thread";
  for (int round = 0; round < 20; ++round) {
    bool seen = true;
    pthread_t t;
    ASSERT_EQ(ito_pthread_create(&t, nullptr, pending_of_new_thread, &seen), 0);
    ASSERT_EQ(ito_pthread_join(t, nullptr), 0);
    EXPECT_FALSE(seen) << "round " << round;
    if (::testing::Test::HasFailure()) break;
  }
  ito_pthread_sigmask(SIG_SETMASK, &saved, nullptr);  // delivers it here
  EXPECT_EQ(g_handled, 1);
  sigaction(SIGUSR2, &old, nullptr);
}

TEST(PosixSignalMask, KillAndStopCannotBeBlocked) {
  int result[4] = {-1, -1, -1, -1};
  pthread_t t;
  ASSERT_EQ(ito_pthread_create(&t, nullptr, try_to_block_kill_and_stop, result), 0);
  ASSERT_EQ(ito_pthread_join(t, nullptr), 0);
  EXPECT_EQ(result[0], 0) << "silently ignored, not an error";
  EXPECT_EQ(result[1], 0) << "SIGKILL";
  EXPECT_EQ(result[2], 0) << "SIGSTOP";
  EXPECT_EQ(result[3], 1) << "SIGUSR2 is blocked as asked";
}

}  // namespace
