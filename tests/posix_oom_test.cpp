// SPDX-License-Identifier: Apache-2.0
// pthread_create when memory runs out: EAGAIN, as POSIX says, never an
// abort. Runs in a death-test child under RLIMIT_AS, so this process keeps
// its own address space; the runtime starts only in that child.
#define ITO_PTHREAD_NO_RENAME 1
#include "ito/pthread.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "test_support.hpp"

namespace {

pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;

void* wait_at_gate(void*) {
  ito_pthread_mutex_lock(&gate);
  ito_pthread_mutex_unlock(&gate);
  return nullptr;
}

// Creates threads that stay alive until one create fails; 0 if that failure
// was EAGAIN and every thread could then be joined.
int create_until_out_of_memory() {
  ito_pthread_mutex_lock(&gate);  // starts the runtime: its workers exist before the limit
  std::vector<pthread_t> threads;
  threads.reserve(1 << 20);
  rlimit current{};
  getrlimit(RLIMIT_AS, &current);
  rlimit low = current;
  low.rlim_cur = 64ul << 20;  // far below what 2^20 stacks of 64 KiB take
  // The address space in use already counts against the limit: leave room.
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    unsigned long pages = 0;
    if (std::fscanf(f, "%lu", &pages) == 1) low.rlim_cur += pages * static_cast<unsigned long>(sysconf(_SC_PAGESIZE));
    std::fclose(f);
  }
  if (setrlimit(RLIMIT_AS, &low) != 0) return 10;
  int rc = 0;
  while (threads.size() < threads.capacity()) {
    pthread_t t;
    rc = ito_pthread_create(&t, nullptr, wait_at_gate, nullptr);
    if (rc != 0) break;
    threads.push_back(t);
  }
  setrlimit(RLIMIT_AS, &current);
  ito_pthread_mutex_unlock(&gate);
  for (pthread_t t : threads)
    if (ito_pthread_join(t, nullptr) != 0) return 11;
  std::fprintf(stderr, "created %zu threads, then %d\n", threads.size(), rc);
  return rc == EAGAIN ? 0 : 12;
}

TEST(PosixOutOfMemory, CreateReturnsEagainUnderAnAddressSpaceLimit) {
  if (ito::test::emulated) GTEST_SKIP() << "qemu-user accepts setrlimit(RLIMIT_AS) but does not apply it";
  // TSan reserves terabytes of shadow up front: an address-space limit kills it first.
  if (ito::test::tsan) GTEST_SKIP() << "RLIMIT_AS cannot be lowered under TSan";
  EXPECT_EXIT(std::exit(create_until_out_of_memory()), ::testing::ExitedWithCode(0), "then 11");
}

// A dedicated stack (larger than the pool's) that cannot be mapped: EAGAIN.
int create_with_a_stack_too_large_for_the_limit() {
  ito_pthread_mutex_lock(&gate);
  rlimit low{};
  getrlimit(RLIMIT_AS, &low);
  low.rlim_cur = 256ul << 20;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    unsigned long pages = 0;
    if (std::fscanf(f, "%lu", &pages) == 1) low.rlim_cur += pages * static_cast<unsigned long>(sysconf(_SC_PAGESIZE));
    std::fclose(f);
  }
  if (setrlimit(RLIMIT_AS, &low) != 0) return 10;
  pthread_attr_t a;
  ito_pthread_attr_init(&a);
  ito_pthread_attr_setstacksize(&a, 512ul << 20);
  pthread_t t;
  const int rc = ito_pthread_create(&t, &a, wait_at_gate, nullptr);
  std::fprintf(stderr, "rc %d\n", rc);
  return rc == EAGAIN ? 0 : 1;
}

TEST(PosixOutOfMemory, LargeStackThatCannotBeMappedIsEagain) {
  if (ito::test::emulated) GTEST_SKIP() << "qemu-user accepts setrlimit(RLIMIT_AS) but does not apply it";
  EXPECT_EXIT(std::exit(create_with_a_stack_too_large_for_the_limit()),
              ::testing::ExitedWithCode(0), "rc 11");
}

}  // namespace
