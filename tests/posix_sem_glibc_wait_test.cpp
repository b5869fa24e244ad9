// SPDX-License-Identifier: Apache-2.0
// A process-shared (pshared=1) or named semaphore is glibc's (its waiters
// sleep in the kernel). A thread that waits on one must not take its worker
// with it: at ITO_WORKERS=1 the thread that posts runs on that same worker.
// (LTP sem_unlink/9-1: the main thread never ran again.)
#define ITO_PTHREAD_NO_RENAME 1
#include "ito/pthread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <unistd.h>

#include "test_support.hpp"

namespace {

sem_t g_sem;
std::atomic<int> g_waiting{0};

void* wait_once(void*) {
  g_waiting.fetch_add(1);
  return reinterpret_cast<void*>(static_cast<std::intptr_t>(ito_posix_sem_wait(&g_sem)));
}

void* wait_timed(void*) {
  g_waiting.fetch_add(1);
  timespec deadline{};
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 60;
  return reinterpret_cast<void*>(
      static_cast<std::intptr_t>(ito_posix_sem_timedwait(&g_sem, &deadline)));
}

// Two waiters, then the main thread (bound to the one worker) posts twice.
void waiters_leave_the_worker_to_the_poster() {
  setenv("ITO_WORKERS", "1", 1);
  alarm(30);  // a worker taken by a waiter hangs: end it as a failure
  if (ito_posix_sem_init(&g_sem, 1, 0) != 0) std::exit(3);
  pthread_t a, b;
  if (ito_pthread_create(&a, nullptr, wait_once, nullptr) != 0) std::exit(4);
  if (ito_pthread_create(&b, nullptr, wait_timed, nullptr) != 0) std::exit(4);
  while (g_waiting.load() < 2) ito_sched_yield();  // each has run up to its wait
  timespec moment{0, 20 * 1000 * 1000};
  ito_nanosleep(&moment, nullptr);
  if (ito_posix_sem_post(&g_sem) != 0 || ito_posix_sem_post(&g_sem) != 0) std::exit(5);
  void* ra = nullptr;
  void* rb = nullptr;
  if (ito_pthread_join(a, &ra) != 0 || ito_pthread_join(b, &rb) != 0) std::exit(6);
  if (ra != nullptr || rb != nullptr) std::exit(7);  // each wait returned 0
  int value = -1;
  ito_posix_sem_getvalue(&g_sem, &value);
  std::exit(value == 0 ? 0 : 8);
}

TEST(PosixSemGlibcWait, ProcessSharedWaitersLeaveTheWorkerToThePoster) {
  // A process of its own, so ITO_WORKERS=1 applies: re-executed, or forked
  // under qemu-user, which cannot re-execute the target binary.
  GTEST_FLAG_SET(death_test_style, ito::test::threadsafe_death_style);
  EXPECT_EXIT(waiters_leave_the_worker_to_the_poster(), ::testing::ExitedWithCode(0), "");
}

}  // namespace
