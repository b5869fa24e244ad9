// SPDX-License-Identifier: Apache-2.0
// The POSIX layer's error codes (exactly POSIX's) and errno across switches.
// Each test runs inside one lazily started runtime (the first call starts it).
#define ITO_PTHREAD_NO_RENAME 1
#include "ito/pthread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <ctime>

#include "ito/runtime.hpp"

namespace {

timespec in_ms(clockid_t clock, long ms) {
  timespec t{};
  clock_gettime(clock, &t);
  t.tv_sec += ms / 1000;
  t.tv_nsec += (ms % 1000) * 1'000'000L;
  if (t.tv_nsec >= 1'000'000'000L) t.tv_sec++, t.tv_nsec -= 1'000'000'000L;
  return t;
}

void* return_arg(void* p) { return p; }

// The first test of the process: pthread_self and a free lock start no
// runtime (the main thread's handle and holder identity are its main ULT's
// from the start); the first call that needs one does, and the main thread
// is then the main ULT, with the same handle.
TEST(PosixErrors, RuntimeStartsAtFirstNeedAndMainIsAUlt) {
  pthread_t self = ito_pthread_self();
  EXPECT_FALSE(ito::in_ult());
  EXPECT_TRUE(ito_pthread_equal(self, ito_pthread_self()));
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  EXPECT_EQ(ito_pthread_mutex_lock(&m), 0);
  EXPECT_FALSE(ito::in_ult());
  EXPECT_EQ(ito_pthread_join(self, nullptr), EDEADLK);
  EXPECT_TRUE(ito::in_ult());
  EXPECT_TRUE(ito_pthread_equal(self, ito_pthread_self()));
  EXPECT_EQ(ito_pthread_mutex_unlock(&m), 0);  // taken before the start: the main ULT's
  EXPECT_EQ(ito_pthread_detach(self), EINVAL);  // the main thread cannot be detached here
}

TEST(PosixErrors, JoinCodes) {
  pthread_t t;
  ASSERT_EQ(ito_pthread_create(&t, nullptr, return_arg, reinterpret_cast<void*>(7)), 0);
  void* r = nullptr;
  EXPECT_EQ(ito_pthread_join(t, &r), 0);
  EXPECT_EQ(r, reinterpret_cast<void*>(7));
  EXPECT_EQ(ito_pthread_join(t, &r), ESRCH);  // already joined
  EXPECT_EQ(ito_pthread_detach(t), ESRCH);
  EXPECT_EQ(ito_pthread_join(pthread_t{0}, &r), ESRCH);
  EXPECT_EQ(ito_pthread_create(nullptr, nullptr, return_arg, nullptr), EINVAL);
  EXPECT_EQ(ito_pthread_create(&t, nullptr, nullptr, nullptr), EINVAL);
  EXPECT_EQ(ito_pthread_cancel(t), ESRCH);  // joined: its handle is stale
  EXPECT_EQ(ito_pthread_cancel(pthread_t{0}), ESRCH);
}

TEST(PosixErrors, DetachedThreadIsNotJoinable) {
  // Static, and waited for: the detached thread may run after this test
  // returned, when its stack frame holds the next test's locals (TSan saw it).
  static std::atomic<bool> go, done;
  go = false;
  done = false;
  pthread_t t;
  ASSERT_EQ(ito_pthread_create(&t, nullptr,
                               [](void*) -> void* {
                                 while (!go.load()) ito_sched_yield();
                                 done = true;
                                 return nullptr;
                               },
                               nullptr),
            0);
  EXPECT_EQ(ito_pthread_detach(t), 0);
  EXPECT_EQ(ito_pthread_join(t, nullptr), EINVAL);  // POSIX: not a joinable thread
  EXPECT_EQ(ito_pthread_detach(t), EINVAL);
  go = true;
  while (!done.load()) ito_sched_yield();
}

TEST(PosixErrors, Attributes) {
  pthread_attr_t a;
  ASSERT_EQ(ito_pthread_attr_init(&a), 0);
  EXPECT_EQ(ito_pthread_attr_setdetachstate(&a, 12345), EINVAL);
  EXPECT_EQ(ito_pthread_attr_setstacksize(&a, 100), EINVAL);
  EXPECT_EQ(ito_pthread_attr_setstacksize(&a, std::size_t{1} << 47), 0);
  pthread_t t;
  EXPECT_EQ(ito_pthread_create(&t, &a, return_arg, nullptr), EAGAIN);  // no such mapping
  // The smallest size accepted: 16 KiB on x86-64, 128 KiB on aarch64 (64 KiB pages).
  const auto min = static_cast<std::size_t>(PTHREAD_STACK_MIN);
  ASSERT_EQ(ito_pthread_attr_setstacksize(&a, min), 0);
  std::size_t size = 0;
  EXPECT_EQ(ito_pthread_attr_getstacksize(&a, &size), 0);
  EXPECT_EQ(size, min);
  alignas(64) static char stack[256 * 1024];  // at least PTHREAD_STACK_MIN everywhere
  ASSERT_EQ(pthread_attr_setstack(&a, stack, sizeof stack), 0);  // glibc's own setter
  ASSERT_EQ(ito_pthread_create(&t, &a, return_arg, reinterpret_cast<void*>(3)), 0);
  void* r = nullptr;
  EXPECT_EQ(ito_pthread_join(t, &r), 0);
  EXPECT_EQ(r, reinterpret_cast<void*>(3));
  EXPECT_EQ(ito_pthread_attr_destroy(&a), 0);
}

TEST(PosixErrors, MutexCodes) {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  EXPECT_EQ(ito_pthread_mutex_unlock(&m), EPERM);
  ASSERT_EQ(ito_pthread_mutex_lock(&m), 0);
  // A default (normal) mutex's relock by its holder waits (POSIX: it
  // deadlocks), here until the time-out; an errorcheck one refuses it.
  timespec soon = in_ms(CLOCK_REALTIME, 10);
  EXPECT_EQ(ito_pthread_mutex_timedlock(&m, &soon), ETIMEDOUT);
  pthread_mutex_t checked = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
  ASSERT_EQ(ito_pthread_mutex_lock(&checked), 0);
  EXPECT_EQ(ito_pthread_mutex_lock(&checked), EDEADLK);
  EXPECT_EQ(ito_pthread_mutex_unlock(&checked), 0);
  EXPECT_EQ(ito_pthread_mutex_trylock(&m), EBUSY);
  EXPECT_EQ(ito_pthread_mutex_destroy(&m), EBUSY);
  pthread_t t;
  ASSERT_EQ(ito_pthread_create(&t, nullptr,
                               [](void* p) -> void* {
                                 auto* mu = static_cast<pthread_mutex_t*>(p);
                                 long codes = ito_pthread_mutex_unlock(mu);
                                 timespec soon = in_ms(CLOCK_REALTIME, 10);
                                 codes = codes * 1000 + ito_pthread_mutex_timedlock(mu, &soon);
                                 timespec bad{0, 2'000'000'000};
                                 codes = codes * 1000 + ito_pthread_mutex_timedlock(mu, &bad);
                                 return reinterpret_cast<void*>(codes);
                               },
                               &m),
            0);
  void* r = nullptr;
  ASSERT_EQ(ito_pthread_join(t, &r), 0);
  EXPECT_EQ(reinterpret_cast<long>(r), (EPERM * 1000L + ETIMEDOUT) * 1000 + EINVAL);
  EXPECT_EQ(ito_pthread_mutex_unlock(&m), 0);
  EXPECT_EQ(ito_pthread_mutex_destroy(&m), 0);

  pthread_mutexattr_t a;
  ASSERT_EQ(ito_pthread_mutexattr_init(&a), 0);
  EXPECT_EQ(ito_pthread_mutexattr_settype(&a, 99), EINVAL);
  ASSERT_EQ(ito_pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE), 0);
  int type = -1;
  EXPECT_EQ(ito_pthread_mutexattr_gettype(&a, &type), 0);
  EXPECT_EQ(type, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_t r2;
  ASSERT_EQ(ito_pthread_mutex_init(&r2, &a), 0);
  EXPECT_EQ(ito_pthread_mutex_lock(&r2), 0);
  EXPECT_EQ(ito_pthread_mutex_lock(&r2), 0);
  EXPECT_EQ(ito_pthread_mutex_trylock(&r2), 0);
  EXPECT_EQ(ito_pthread_mutex_unlock(&r2), 0);
  EXPECT_EQ(ito_pthread_mutex_unlock(&r2), 0);
  EXPECT_EQ(ito_pthread_mutex_unlock(&r2), 0);
  EXPECT_EQ(ito_pthread_mutex_unlock(&r2), EPERM);
  EXPECT_EQ(ito_pthread_mutex_lock(nullptr), EINVAL);
}

TEST(PosixErrors, CondCodes) {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t c = PTHREAD_COND_INITIALIZER;
  EXPECT_EQ(ito_pthread_cond_wait(&c, &m), EPERM);  // mutex not held
  ASSERT_EQ(ito_pthread_mutex_lock(&m), 0);
  timespec t = in_ms(CLOCK_REALTIME, 5);
  EXPECT_EQ(ito_pthread_cond_timedwait(&c, &m, &t), ETIMEDOUT);
  EXPECT_EQ(ito_pthread_mutex_trylock(&m), EBUSY);  // held again after the time-out
  t.tv_nsec = -1;
  EXPECT_EQ(ito_pthread_cond_timedwait(&c, &m, &t), EINVAL);
  EXPECT_EQ(ito_pthread_cond_timedwait(&c, &m, nullptr), EINVAL);
  ASSERT_EQ(ito_pthread_mutex_unlock(&m), 0);
  pthread_condattr_t ca;
  ASSERT_EQ(ito_pthread_condattr_init(&ca), 0);
  EXPECT_EQ(ito_pthread_condattr_setclock(&ca, CLOCK_PROCESS_CPUTIME_ID), EINVAL);
  EXPECT_EQ(ito_pthread_cond_destroy(&c), 0);
}

TEST(PosixErrors, OtherObjects) {
  pthread_barrier_t b;
  EXPECT_EQ(ito_pthread_barrier_init(&b, nullptr, 0), EINVAL);
  ASSERT_EQ(ito_pthread_barrier_init(&b, nullptr, 1), 0);
  EXPECT_EQ(ito_pthread_barrier_wait(&b), PTHREAD_BARRIER_SERIAL_THREAD);
  EXPECT_EQ(ito_pthread_barrier_destroy(&b), 0);

  pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
  EXPECT_EQ(ito_pthread_rwlock_unlock(&rw), EPERM);
  ASSERT_EQ(ito_pthread_rwlock_wrlock(&rw), 0);
  EXPECT_EQ(ito_pthread_rwlock_wrlock(&rw), EDEADLK);
  EXPECT_EQ(ito_pthread_rwlock_tryrdlock(&rw), EDEADLK);
  EXPECT_EQ(ito_pthread_rwlock_destroy(&rw), 0);  // held, nobody waits: as NPTL
  ASSERT_EQ(ito_pthread_rwlock_unlock(&rw), 0);
  ASSERT_EQ(ito_pthread_rwlock_rdlock(&rw), 0);
  EXPECT_EQ(ito_pthread_rwlock_trywrlock(&rw), EBUSY);
  ASSERT_EQ(ito_pthread_rwlock_unlock(&rw), 0);

  pthread_spinlock_t s;
  ASSERT_EQ(ito_pthread_spin_init(&s, PTHREAD_PROCESS_PRIVATE), 0);
  ASSERT_EQ(ito_pthread_spin_lock(&s), 0);
  EXPECT_EQ(ito_pthread_spin_trylock(&s), EBUSY);
  ASSERT_EQ(ito_pthread_spin_unlock(&s), 0);

  pthread_key_t k;
  ASSERT_EQ(ito_pthread_key_create(&k, nullptr), 0);
  EXPECT_EQ(ito_pthread_key_delete(k), 0);
  EXPECT_EQ(ito_pthread_key_delete(k), EINVAL);
  EXPECT_EQ(ito_pthread_setspecific(k, nullptr), EINVAL);
}

// Destroying a held rwlock is NPTL's no-op (its holder may have exited); one
// a thread is parked on is refused, since the waiter would be stranded.
TEST(PosixErrors, RwlockDestroyRefusesOnlyWhileSomeoneWaits) {
  static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
  ASSERT_EQ(ito_pthread_rwlock_rdlock(&rw), 0);
  static std::atomic<bool> writer_started{false};
  pthread_t t;
  ASSERT_EQ(ito_pthread_create(&t, nullptr,
                               [](void*) -> void* {
                                 writer_started = true;
                                 ito_pthread_rwlock_wrlock(&rw);  // parks behind the reader
                                 ito_pthread_rwlock_unlock(&rw);
                                 return nullptr;
                               },
                               nullptr),
            0);
  while (!writer_started) ito_sched_yield();
  int busy = 0;
  const timespec give_up = in_ms(CLOCK_MONOTONIC, 10'000);
  for (timespec now{}; busy != EBUSY; ito_sched_yield()) {  // until the writer has parked
    busy = ito_pthread_rwlock_destroy(&rw);
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec > give_up.tv_sec) break;
  }
  EXPECT_EQ(busy, EBUSY);
  ASSERT_EQ(ito_pthread_rwlock_unlock(&rw), 0);
  ASSERT_EQ(ito_pthread_join(t, nullptr), 0);
  ASSERT_EQ(ito_pthread_rwlock_rdlock(&rw), 0);
  EXPECT_EQ(ito_pthread_rwlock_destroy(&rw), 0);
}

// A process-shared barrier or rwlock would be a private one whose waiter
// queue another process cannot follow: refused at init, never a crash.
// (Process-shared mutexes and conditions work: progs/pshared.c.)
TEST(PosixErrors, ProcessSharedBarrierAndRwlockAreRefused) {
  pthread_barrierattr_t ba;
  ASSERT_EQ(pthread_barrierattr_init(&ba), 0);  // glibc's own attribute calls
  ASSERT_EQ(pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED), 0);
  pthread_barrier_t b;
  EXPECT_EQ(ito_pthread_barrier_init(&b, &ba, 2), ENOTSUP);
  ASSERT_EQ(pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_PRIVATE), 0);
  ASSERT_EQ(ito_pthread_barrier_init(&b, &ba, 1), 0);
  EXPECT_EQ(ito_pthread_barrier_wait(&b), PTHREAD_BARRIER_SERIAL_THREAD);
  EXPECT_EQ(ito_pthread_barrier_destroy(&b), 0);
  pthread_barrierattr_destroy(&ba);

  pthread_rwlockattr_t ra;
  ASSERT_EQ(pthread_rwlockattr_init(&ra), 0);
  ASSERT_EQ(pthread_rwlockattr_setpshared(&ra, PTHREAD_PROCESS_SHARED), 0);
  pthread_rwlock_t rw;
  EXPECT_EQ(ito_pthread_rwlock_init(&rw, &ra), ENOTSUP);
  ASSERT_EQ(pthread_rwlockattr_setpshared(&ra, PTHREAD_PROCESS_PRIVATE), 0);
  ASSERT_EQ(ito_pthread_rwlock_init(&rw, &ra), 0);
  ASSERT_EQ(ito_pthread_rwlock_wrlock(&rw), 0);
  ASSERT_EQ(ito_pthread_rwlock_unlock(&rw), 0);
  EXPECT_EQ(ito_pthread_rwlock_destroy(&rw), 0);
  pthread_rwlockattr_destroy(&ra);
}

// Read errno in a function the compiler cannot see through, so that it calls
// __errno_location() again instead of reusing an address from before a switch.
__attribute__((noipa)) int read_errno() { return errno; }
__attribute__((noipa)) void write_errno(int v) { errno = v; }

// Each ULT sets its own errno, blocks and yields many times (migrating among
// workers and interleaving with the others), and must read back its own.
TEST(PosixErrors, ErrnoSurvivesSwitchesAndMigration) {
  constexpr int n = 16;
  pthread_t t[n];
  static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  static pthread_barrier_t b;
  ASSERT_EQ(ito_pthread_barrier_init(&b, nullptr, n), 0);
  for (long i = 0; i < n; ++i) {
    ASSERT_EQ(ito_pthread_create(&t[i], nullptr,
                                 [](void* p) -> void* {
                                   const int mine = 1000 + static_cast<int>(reinterpret_cast<long>(p));
                                   long bad = 0;
                                   for (int round = 0; round < 200; ++round) {
                                     write_errno(mine);
                                     ito_sched_yield();
                                     bad += read_errno() != mine;
                                     ito_pthread_mutex_lock(&m);
                                     bad += read_errno() != mine;
                                     ito_pthread_mutex_unlock(&m);
                                     if (round % 50 == 0) {
                                       ito_pthread_barrier_wait(&b);
                                       bad += read_errno() != mine;
                                     }
                                   }
                                   return reinterpret_cast<void*>(bad);
                                 },
                                 reinterpret_cast<void*>(i)),
              0);
  }
  for (auto& th : t) {
    void* bad = nullptr;
    ASSERT_EQ(ito_pthread_join(th, &bad), 0);
    EXPECT_EQ(bad, nullptr);
  }
  EXPECT_EQ(ito_pthread_barrier_destroy(&b), 0);
}

}  // namespace
