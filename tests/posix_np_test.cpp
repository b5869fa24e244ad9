// SPDX-License-Identifier: Apache-2.0
// The calls that take a pthread_t beyond create/join/detach, on ULT handles
// (source mode): what glibc would crash on. The side-by-side run against
// NPTL is tests/posix/progs/threads_np.c; these are the ito-only codes.
#define ITO_PTHREAD_NO_RENAME 1
#include "ito/pthread.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

namespace {

void* return_arg(void* p) { return p; }

// Rust's std::thread pattern: its own attributes, then their stack.
void* own_stack_holds_a_local(void*) {
  volatile char here = 0;
  pthread_attr_t a;
  if (ito_pthread_getattr_np(ito_pthread_self(), &a) != 0) return nullptr;
  void* addr = nullptr;
  std::size_t size = 0;
  std::size_t guard = 0;
  pthread_attr_getstack(&a, &addr, &size);
  pthread_attr_getguardsize(&a, &guard);
  ito_pthread_attr_destroy(&a);
  auto p = reinterpret_cast<std::uintptr_t>(&here);
  auto lo = reinterpret_cast<std::uintptr_t>(addr);
  return reinterpret_cast<void*>(p >= lo && p < lo + size && guard % 4096 == 0);
}

TEST(PosixNp, GetattrGivesTheStackTheThreadRunsOn) {
  pthread_t t;
  ASSERT_EQ(ito_pthread_create(&t, nullptr, own_stack_holds_a_local, nullptr), 0);
  void* ok = nullptr;
  ASSERT_EQ(ito_pthread_join(t, &ok), 0);
  EXPECT_TRUE(ok);
  EXPECT_TRUE(own_stack_holds_a_local(nullptr)) << "the main thread";
  EXPECT_EQ(ito_pthread_getattr_np(ito_pthread_self(), nullptr), EINVAL);
}

TEST(PosixNp, DeadHandlesAreEsrchNeverACrash) {
  pthread_t t;
  ASSERT_EQ(ito_pthread_create(&t, nullptr, return_arg, nullptr), 0);
  ASSERT_EQ(ito_pthread_join(t, nullptr), 0);
  pthread_attr_t a;
  char name[16];
  int policy;
  sched_param sp{};
  clockid_t clock;
  cpu_set_t set;
  EXPECT_EQ(ito_pthread_kill(t, 0), ESRCH);
  EXPECT_EQ(ito_pthread_getattr_np(t, &a), ESRCH);
  EXPECT_EQ(ito_pthread_getname_np(t, name, sizeof name), ESRCH);
  EXPECT_EQ(ito_pthread_setname_np(t, "x"), ESRCH);
  EXPECT_EQ(ito_pthread_getschedparam(t, &policy, &sp), ESRCH);
  EXPECT_EQ(ito_pthread_getcpuclockid(t, &clock), ESRCH);
  EXPECT_EQ(ito_pthread_getaffinity_np(t, sizeof set, &set), ESRCH);
  EXPECT_EQ(ito_pthread_tryjoin_np(t, nullptr), ESRCH);
  EXPECT_EQ(ito_pthread_cancel(t), ESRCH);
  EXPECT_EQ(ito_pthread_kill(pthread_t{0}, 0), ESRCH);
}

TEST(PosixNp, WhatAUltCannotHonour) {
  const pthread_t self = ito_pthread_self();
  clockid_t clock;
  EXPECT_EQ(ito_pthread_getcpuclockid(self, &clock), ENOENT);
  sched_param sp{};
  sp.sched_priority = 10;
  EXPECT_EQ(ito_pthread_setschedparam(self, 12345, &sp), EINVAL);
  EXPECT_EQ(ito_pthread_setschedprio(self, 5), EINVAL);  // SCHED_OTHER has only 0
  // A real-time policy is kept and reported (not ENOTSUP), or EPERM where
  // the process may not take it, as the kernel says to NPTL.
  const int e = ito_pthread_setschedparam(self, SCHED_FIFO, &sp);
  EXPECT_TRUE(e == 0 || e == EPERM) << e;
  if (e == 0) {
    int policy = -1;
    sched_param got{};
    EXPECT_EQ(ito_pthread_getschedparam(self, &policy, &got), 0);
    EXPECT_EQ(policy, SCHED_FIFO);
    EXPECT_EQ(got.sched_priority, 10);
    sp.sched_priority = 0;
    EXPECT_EQ(ito_pthread_setschedparam(self, SCHED_OTHER, &sp), 0);
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  cpu_set_t all;
  ASSERT_EQ(ito_pthread_getaffinity_np(self, sizeof all, &all), 0);
  if (CPU_COUNT(&all) > 1) {
    EXPECT_EQ(ito_pthread_setaffinity_np(self, sizeof one, &one), ENOTSUP);
  }
  EXPECT_EQ(ito_pthread_setaffinity_np(self, sizeof all, &all), 0);
  EXPECT_EQ(ito_pthread_kill(self, 12345), EINVAL);
  EXPECT_EQ(ito_pthread_kill(self, 32), EINVAL);  // glibc's own signal
}

TEST(PosixNp, NamesArePerThreadAndDieWithIt) {
  pthread_t t;
  ASSERT_EQ(ito_pthread_create(&t, nullptr, return_arg, nullptr), 0);
  char name[16];
  ASSERT_EQ(ito_pthread_getname_np(ito_pthread_self(), name, sizeof name), 0);
  const std::string process_name = name;
  EXPECT_EQ(ito_pthread_setname_np(t, "first"), 0);
  ASSERT_EQ(ito_pthread_join(t, nullptr), 0);
  // The next thread may reuse that stack and descriptor: it has no name yet.
  ASSERT_EQ(ito_pthread_create(&t, nullptr, return_arg, nullptr), 0);
  ASSERT_EQ(ito_pthread_getname_np(t, name, sizeof name), 0);
  EXPECT_EQ(name, process_name);
  ASSERT_EQ(ito_pthread_join(t, nullptr), 0);
}

}  // namespace
