// SPDX-License-Identifier: Apache-2.0
// Stack memory goes back to the kernel after a burst: once many ULTs alive at
// once have ended, resident memory falls back near where it was, while a
// steady create/join loop keeps reusing warm stacks without system calls.
#include <gtest/gtest.h>

#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>
#include <vector>

#include "ito/sync.hpp"
#include "ito/thread.hpp"
#include "sched/worker.hpp"
#include "stack/guard.hpp"
#include "stack/stack_pool.hpp"
#include "test_support.hpp"

namespace {

constexpr long kib = 1024;

// Resident set of this process now, in KiB (getrusage gives only the peak).
long resident_kib() {
  long pages_total = 0, pages_resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return -1;
  int got = std::fscanf(f, "%ld %ld", &pages_total, &pages_resident);
  std::fclose(f);
  return got == 2 ? pages_resident * (sysconf(_SC_PAGESIZE) / kib) : -1;
}

// n ULTs alive at once, each touching 16 KiB of its stack; returns the
// resident set while they all wait, then joins them.
long burst(std::size_t n) {
  ito::barrier all(static_cast<std::uint32_t>(n + 1));
  std::vector<ito::future<int>> alive;
  alive.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    alive.push_back(ito::create_thread([&all, i] {
      volatile char touched[16 * kib];
      std::memset(const_cast<char*>(touched), static_cast<int>(i), sizeof touched);
      all.arrive_and_wait();
      return static_cast<int>(touched[i % sizeof touched]);
    }));
  }
  all.arrive_and_wait();
  const long peak = resident_kib();
  for (auto& f : alive) ito::join(f);
  return peak;
}

TEST(stack_release, resident_memory_falls_back_after_a_burst_of_ults) {
  if (ito::test::emulated) GTEST_SKIP() << "qemu-user's own memory (translated code) is in the resident set";
  ito::options o;
  o.workers = 2;
  o.stack_size = 64 * kib;
  ito::runtime rt(o);
  for (int i = 0; i < 1000; ++i) ito::join(ito::create_thread([] {}));
  const long baseline = resident_kib();
  const std::size_t n = ito::test::scaled(100000);
  const long peak = burst(n);
  const long after = resident_kib();
  std::printf("resident: %ld KiB before, %ld KiB with %zu ULTs alive, %ld KiB after\n", baseline,
              peak, n, after);
  ASSERT_GT(peak - baseline, static_cast<long>(n) * 16 * 9 / 10) << "the burst touched too little";
  // All but the pool's warm stacks and what the workers keep (64 descriptors
  // with their stacks and 64 stacks each) went back.
  const ito::stack::stack_pool& pool = ito::sched::g_runtime.load()->stacks;
  const std::size_t dropped = pool.stacks_dropped();
  EXPECT_GE(dropped, n - pool.warm_limit() - o.workers * 128);
  if (!ito::test::asan && !ito::test::tsan) {
    // (A sanitizer's shadow of the stacks stays resident: no bound on it.)
    EXPECT_LT(after, 2 * baseline + 64 * kib);
    EXPECT_LT(after - baseline, (peak - baseline) / 20);
  }

  // A steady loop afterwards reuses what is left (no stack is dropped or
  // revived: the workers' caches serve it), and stays as small.
  const std::size_t loops = ito::test::scaled(100000);
  for (std::size_t i = 0; i < loops; ++i) ito::join(ito::create_thread([] {}));
  EXPECT_EQ(pool.stacks_dropped(), dropped);
  EXPECT_LT(resident_kib(), after + 4 * kib);
}

using ito::stack::stack_block;
using ito::stack::stack_pool;

// Takes n stacks, each with its top 16 KiB touched, and gives them back 32 at
// a time, as a worker's cache does.
std::vector<stack_block> take_touch_and_release(stack_pool& pool, std::size_t n) {
  std::vector<stack_block> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = pool.allocate();
    std::memset(v[i].hi - 16 * kib, 1, 16 * kib);
  }
  for (std::size_t i = 0; i < n; i += 32) pool.release_batch(&v[i], std::min<std::size_t>(32, n - i));
  return v;
}

TEST(stack_release, the_pool_drops_the_stacks_beyond_its_warm_limit_and_reuses_them_last) {
  stack_pool pool(64 * kib);
  EXPECT_EQ(pool.warm_limit(), stack_pool::warm_bytes / (64 * kib));
  const std::size_t extra = 200;
  const std::size_t n = pool.warm_limit() + extra;
  std::vector<stack_block> first = take_touch_and_release(pool, n);
  (void)first;
  EXPECT_EQ(pool.stacks_dropped(), extra);

  // All come back, the warm ones first; the dropped ones read zeros.
  std::set<const char*> given_back;
  for (std::size_t i = 0; i < n; ++i) given_back.insert(first[i].lo);
  std::size_t zeroed = 0;
  for (std::size_t i = 0; i < n; ++i) {
    stack_block s = pool.allocate();
    ASSERT_EQ(given_back.count(s.lo), 1u) << "a new stack while free ones were left";
    const bool dropped = *(s.hi - 16 * kib) == 0;
    zeroed += dropped;
    EXPECT_EQ(dropped, i >= pool.warm_limit()) << i;  // warm first
  }
  EXPECT_EQ(zeroed, extra);
  EXPECT_EQ(pool.stacks_mapped(), n);
}

TEST(stack_release, dropping_frees_resident_memory) {
  if (ito::test::emulated) GTEST_SKIP() << "qemu-user's own memory (translated code) is in the resident set";
  // TSan's shadow of the touched stacks (4x their size) stays resident.
  if (ito::test::tsan) GTEST_SKIP() << "TSan's shadow memory is not given back";
  stack_pool pool(64 * kib);
  const std::size_t extra = 2000;
  const long before = resident_kib();
  take_touch_and_release(pool, pool.warm_limit() + extra);
  const long after = resident_kib();
  // What is left: the warm stacks' 16 KiB each, 5 pages with the top's colour
  // offset, and the lists; the dropped ones' 2000 * 20 KiB went back. ASan's
  // shadow of every touched stack stays: 2 KiB each, on a page or two of its
  // own (stacks lie 128 KiB apart, so their shadows 16 KiB apart).
  const long asan_shadow = ito::test::asan ? static_cast<long>((pool.warm_limit() + extra) * 8) : 0;
  EXPECT_LT(after - before, static_cast<long>(pool.warm_limit() * 20 + 1024) + asan_shadow);
}

// Writes just below a stack that was dropped and taken again: its guard is
// still there.
void write_below_a_revived_stack(ito::stack::guard_method m) {
  ito::stack::force_guard_method(m);
  stack_pool pool(64 * kib);
  take_touch_and_release(pool, pool.warm_limit() + 1);
  stack_block s{};
  for (std::size_t i = 0; i <= pool.warm_limit(); ++i) s = pool.allocate();  // the last: dropped
  if (*(s.hi - 16 * kib) != 0 || !s.guarded) _exit(3);  // not dropped, or unguarded
  *reinterpret_cast<volatile char*>(s.lo - 1) = 1;
  _exit(0);
}

void expect_segv(void (*fn)(ito::stack::guard_method), ito::stack::guard_method m) {
  GTEST_FLAG_SET(death_test_style, ito::test::threadsafe_death_style);
  if (ito::test::asan) {
    EXPECT_EXIT(fn(m), ::testing::ExitedWithCode(1), "AddressSanitizer: SEGV");
  } else if (ito::test::tsan) {
    EXPECT_EXIT(fn(m), ::testing::ExitedWithCode(66), "ThreadSanitizer: SEGV");
  } else {
    EXPECT_EXIT(fn(m), ::testing::KilledBySignal(SIGSEGV), "");
  }
}

TEST(stack_release, a_revived_stack_keeps_its_guard) {
  if (ito::test::emulated) GTEST_SKIP() << "qemu-user ignores MADV_GUARD_INSTALL, which this test forces";
  expect_segv(&write_below_a_revived_stack, ito::stack::guard_method::madvise);
  expect_segv(&write_below_a_revived_stack, ito::stack::guard_method::mprotect);
}

}  // namespace
