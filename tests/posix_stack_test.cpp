// SPDX-License-Identifier: Apache-2.0
// pthread_create's stack attributes on ULTs: a caller's own memory
// (pthread_attr_setstack) and a stack larger than the runtime's pool stacks
// (pthread_attr_setstacksize), each really used, reusable, and bounded.
#define ITO_PTHREAD_NO_RENAME 1
#include "ito/pthread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "sched/scheduler.hpp"
#include "test_support.hpp"

namespace {

struct span {
  const char* lo;
  const char* hi;
  bool holds(std::uintptr_t p) const {
    return p >= reinterpret_cast<std::uintptr_t>(lo) && p < reinterpret_cast<std::uintptr_t>(hi);
  }
};

// Where a thread's stack frames are: the address of one of its locals, as a
// number (never dereferenced), stored where the caller passed.
void* local_address(void* out) {
  volatile char here = 0;
  if (out) *static_cast<std::uintptr_t*>(out) = reinterpret_cast<std::uintptr_t>(&here);
  return nullptr;
}

// Uses about depth * 4 KiB of stack; returns a checksum of every frame.
[[gnu::noinline]] long deep(int depth) {
  volatile char frame[4096];
  std::memset(const_cast<char*>(frame), depth & 0x7F, sizeof frame);
  long below = depth > 0 ? deep(depth - 1) : 0;
  return below + frame[depth % sizeof frame];
}

long expected_deep(int depth) {
  long sum = 0;
  for (int d = 0; d <= depth; ++d) sum += d & 0x7F;
  return sum;
}

pthread_attr_t caller_stack_attr(void* base, std::size_t bytes) {
  pthread_attr_t a;
  EXPECT_EQ(ito_pthread_attr_init(&a), 0);
  EXPECT_EQ(pthread_attr_setstack(&a, base, bytes), 0);  // glibc's own setter
  return a;
}

TEST(PosixStack, ThreadRunsOnTheCallersMemory) {
  constexpr std::size_t bytes = 256 * 1024;
  auto* memory = static_cast<char*>(std::aligned_alloc(4096, bytes));
  pthread_attr_t a = caller_stack_attr(memory, bytes);
  for (int round = 0; round < 100; ++round) {  // the same memory, thread after thread
    pthread_t t;
    std::uintptr_t where = 0;
    ASSERT_EQ(ito_pthread_create(&t, &a, local_address, &where), 0);
    ASSERT_EQ(ito_pthread_join(t, nullptr), 0);
    EXPECT_TRUE((span{memory, memory + bytes}.holds(where)))
        << "round " << round;
  }
  ito_pthread_attr_destroy(&a);
  std::free(memory);
}

TEST(PosixStack, CallersStackCarriesDeepRecursion) {
  constexpr std::size_t bytes = 1 << 20;
  auto memory = std::make_unique<char[]>(bytes);
  pthread_attr_t a = caller_stack_attr(memory.get(), bytes);
  pthread_t t;
  ASSERT_EQ(ito_pthread_create(&t, &a,
                               [](void*) -> void* {
                                 return reinterpret_cast<void*>(deep(200));  // ~800 KiB
                               },
                               nullptr),
            0);
  void* r = nullptr;
  ASSERT_EQ(ito_pthread_join(t, &r), 0);
  EXPECT_EQ(reinterpret_cast<long>(r), expected_deep(200));
  ito_pthread_attr_destroy(&a);
}

TEST(PosixStack, DetachedThreadOnCallersStack) {
  // At least PTHREAD_STACK_MIN (128 KiB on aarch64) for glibc's setstack.
  constexpr std::size_t bytes = 256 * 1024;
  static char memory[bytes] alignas(64);
  static std::atomic<int> ran{0};
  pthread_attr_t a = caller_stack_attr(memory, bytes);
  ASSERT_EQ(ito_pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED), 0);
  pthread_t t{};
  ASSERT_EQ(ito_pthread_create(&t, &a,
                               [](void*) -> void* {
                                 ran = 1;
                                 return nullptr;
                               },
                               nullptr),
            0);
  while (ran.load() == 0) ito_sched_yield();
  EXPECT_NE(t, pthread_t{0});  // detached threads get an id too
  const int joined = ito_pthread_join(t, nullptr);
  EXPECT_TRUE(joined == EINVAL || joined == ESRCH) << joined;  // not joinable; ESRCH once reaped
  ito_pthread_attr_destroy(&a);
}

TEST(PosixStack, StackAddressWithoutSizeIsRejected) {
  pthread_attr_t a;
  ASSERT_EQ(ito_pthread_attr_init(&a), 0);
  static char memory[65536];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  ASSERT_EQ(pthread_attr_setstackaddr(&a, memory + sizeof memory), 0);  // no size given
#pragma GCC diagnostic pop
  pthread_t t;
  EXPECT_EQ(ito_pthread_create(&t, &a, local_address, nullptr), EINVAL);
  ito_pthread_attr_destroy(&a);
}

TEST(PosixStack, SizeAboveThePoolsGetsADedicatedStack) {
  pthread_attr_t a;
  ASSERT_EQ(ito_pthread_attr_init(&a), 0);
  std::size_t pool_size = 0;
  ASSERT_EQ(ito_pthread_attr_getstacksize(&a, &pool_size), 0);  // unset: the pool's
  ASSERT_EQ(ito_pthread_attr_setstacksize(&a, pool_size + (4 << 20)), 0);
  const int depth = static_cast<int>((pool_size + (2 << 20)) / 4096);  // overflows a pool stack
  for (int round = 0; round < 20; ++round) {  // later rounds reuse the cached mapping
    pthread_t t;
    ASSERT_EQ(ito_pthread_create(&t, &a,
                                 [](void* d) -> void* {
                                   return reinterpret_cast<void*>(
                                       deep(static_cast<int>(reinterpret_cast<long>(d))));
                                 },
                                 reinterpret_cast<void*>(static_cast<long>(depth))),
              0);
    void* r = nullptr;
    ASSERT_EQ(ito_pthread_join(t, &r), 0);
    EXPECT_EQ(reinterpret_cast<long>(r), expected_deep(depth));
    EXPECT_EQ(ito_pthread_join(t, &r), ESRCH);  // joined: the handle is dead
  }
  ito_pthread_attr_destroy(&a);
}

// What a thread gets of its stack: the bytes between the stack's lowest
// address and the lowest byte ito keeps at its top (the start frame, below
// the descriptor), and what pthread_getattr_np says.
struct room {
  std::size_t usable = 0;
  std::size_t attr_size = 0;
  bool deep_ok = false;
};

void* measure_room(void* out) {
  auto* r = static_cast<room*>(out);
  const ito::sched::ult* u = ito::sched::current_ult();
  r->usable = static_cast<std::size_t>(static_cast<const char*>(u->frame) - u->stack.lo);
  pthread_attr_t a;
  void* addr = nullptr;
  if (ito_pthread_getattr_np(ito_pthread_self(), &a) == 0) {
    pthread_attr_getstack(&a, &addr, &r->attr_size);
    ito_pthread_attr_destroy(&a);
  }
  return nullptr;
}

// POSIX: the stack size attribute is a minimum. A thread that asks for N
// bytes must be able to use N bytes, whatever ito keeps at the stack's top
// (colour offset, descriptor, start frame): a pool stack of ITO_STACK_SIZE
// bytes is not enough for a request of ITO_STACK_SIZE (LTP's
// pthread_attr_setstacksize/2-1 asks for 4 * PTHREAD_STACK_MIN = 64 KiB).
TEST(PosixStack, RequestedSizeIsAllUsable) {
  pthread_attr_t a;
  ASSERT_EQ(ito_pthread_attr_init(&a), 0);
  std::size_t pool_size = 0;
  ASSERT_EQ(ito_pthread_attr_getstacksize(&a, &pool_size), 0);  // unset: the pool's
  const std::size_t min = PTHREAD_STACK_MIN;
  const std::size_t sizes[] = {min,           min + 1,       32 * 1024,     60 * 1024,
                               64 * 1024,     pool_size - 4096, pool_size - 1, pool_size,
                               pool_size + 1, 4 * min,       256 * 1024 + 100};
  for (std::size_t want : sizes) {
    if (want < min) continue;  // aarch64: PTHREAD_STACK_MIN is 128 KiB
    for (int round = 0; round < 70; ++round) {  // pool stacks of every colour
      ASSERT_EQ(ito_pthread_attr_setstacksize(&a, want), 0);
      room r;
      pthread_t t;
      ASSERT_EQ(ito_pthread_create(&t, &a, measure_room, &r), 0);
      ASSERT_EQ(ito_pthread_join(t, nullptr), 0);
      EXPECT_GE(r.usable, want) << "asked for " << want << " bytes, round " << round;
      EXPECT_GE(r.attr_size, want) << "pthread_getattr_np, asked for " << want;
      if (r.usable < want || r.attr_size < want) break;
    }
  }
  ito_pthread_attr_destroy(&a);
}

// A small request is honoured, not met with a larger pool stack: the thread
// has the size asked for and under a page more (a fresh process, so no
// larger cached stack stands in), and overflows it onto its guard page, as
// under NPTL (LTP's pthread_create/1-5 and 3-2 expect that fault).
TEST(PosixStack, SmallRequestIsHonoured) {
  GTEST_FLAG_SET(death_test_style, ito::test::threadsafe_death_style);
  const std::size_t min = PTHREAD_STACK_MIN;
  for (std::size_t want : {min, min + 1, 2 * min + 100}) {
    EXPECT_EXIT(
        {
          pthread_attr_t a;
          ito_pthread_attr_init(&a);
          ito_pthread_attr_setstacksize(&a, want);
          bool fits = true;
          for (int round = 0; round < 3; ++round) {  // a new mapping, then the cached one
            room r;
            pthread_t t;
            if (ito_pthread_create(&t, &a, measure_room, &r) != 0) std::_Exit(2);
            ito_pthread_join(t, nullptr);
            fits = fits && r.usable >= want && r.usable < want + 4096 && r.attr_size < want + 4096;
          }
          std::_Exit(fits ? 0 : 1);
        },
        ::testing::ExitedWithCode(0), "")
        << "asked for " << want;
  }
}

TEST(PosixStack, OverflowOfASmallStackHitsItsGuardPage) {
  GTEST_FLAG_SET(death_test_style, ito::test::threadsafe_death_style);
  EXPECT_DEATH(
      {
        pthread_attr_t a;
        ito_pthread_attr_init(&a);
        ito_pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN);
        pthread_t t;
        ito_pthread_create(
            &t, &a,
            [](void*) -> void* {
              // 4 KiB frames past PTHREAD_STACK_MIN (a pool stack had room for them)
              const int frames = static_cast<int>(PTHREAD_STACK_MIN / 4096) + 2;
              return reinterpret_cast<void*>(deep(frames));
            },
            nullptr);
        ito_pthread_join(t, nullptr);
      },
      "ito: stack overflow in ULT [0-9]+ \\(stack [0-9]+ bytes\\)");
}

TEST(PosixStack, ImpossibleStackSizeIsEagain) {
  pthread_attr_t a;
  ASSERT_EQ(ito_pthread_attr_init(&a), 0);
  ASSERT_EQ(ito_pthread_attr_setstacksize(&a, std::size_t{1} << 47), 0);  // the whole address space
  pthread_t t;
  EXPECT_EQ(ito_pthread_create(&t, &a, local_address, nullptr), EAGAIN);
  ito_pthread_attr_destroy(&a);
}

TEST(PosixStack, OverflowOfADedicatedStackHitsItsGuardPage) {
  GTEST_FLAG_SET(death_test_style, ito::test::threadsafe_death_style);
  EXPECT_DEATH(
      {
        pthread_attr_t a;
        ito_pthread_attr_init(&a);
        ito_pthread_attr_setstacksize(&a, 1 << 20);
        pthread_t t;
        ito_pthread_create(
            &t, &a, [](void*) -> void* { return reinterpret_cast<void*>(deep(1 << 20)); },
            nullptr);
        ito_pthread_join(t, nullptr);
      },
      "ito: stack overflow in ULT [0-9]+ \\(stack 10[0-9]{5} bytes\\)");
}

}  // namespace
