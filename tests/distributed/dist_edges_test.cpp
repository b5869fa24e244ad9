// SPDX-License-Identifier: Apache-2.0
// The shapes a fork/join program reaches in its first day with the
// distributed scheduler, each of which once broke it: futures dropped while
// their ULTs still write the DSM, frees after a migration, results and
// arguments with destructors, fences and collective calls inside ULTs, locks
// held across a yield. Every rank runs every test (mpi_test_main.cpp); rank 0
// runs each main function. Migration in one short run depends on how the
// ranks get the cores, so each test that needs one retries a few runs.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ito/dist.hpp"
#include "ito/error.hpp"
#include "ito/sync.hpp"
#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

// Up to this many runs to see a migration (they stop at the first): on a
// loaded machine a short run may see none (dist_sched_test.cpp).
constexpr int runs_to_see_a_migration = 20;

// Some work between yields, so that other ranks' steal requests find ULTs.
void spin_us(int us) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < until) {
  }
}

std::uint64_t sum_over_ranks(std::uint64_t mine) {
  std::uint64_t all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  return all;
}

// ---- Dropped futures: the run ends after every ULT, everywhere ------------

// Writes its cell after yields (it may move between them) and spawns a
// grandchild it also drops.
void detached_writer(long* cells, int i, int depth) {
  for (int round = 0; round < 6; ++round) {
    spin_us(50);
    ito::yield();
  }
  if (depth > 0) (void)ito::create_thread(detached_writer, cells, i + 1, depth - 1);
  cells[i] = i * 7 + 1;
}

TEST(DistEdges, DroppedFuturesFinishBeforeTheRunEnds) {
  constexpr int writers = 32;
  auto* cells = static_cast<long*>(ito::dist::alloc_collective(2 * writers * sizeof(long)));
  for (int run = 0; run < 3; ++run) {
    if (ito::dist::rank() == 0) std::memset(cells, 0, 2 * writers * sizeof(long));
    ito::dist::barrier();
    ito::dist::start_main_thread([cells] {
      for (int i = 0; i < 2 * writers; i += 2)
        (void)ito::create_thread(detached_writer, cells, i, 1);  // dropped at once
    });
    ito::dist::barrier();  // every rank's writes are released
    int wrong = 0;
    for (int i = 0; i < 2 * writers; ++i)
      if (cells[i] != i * 7 + 1) ++wrong;
    EXPECT_EQ(wrong, 0) << "run " << run << ": cells not written when the run ended";
    ito::dist::barrier();
  }
}

struct main_threw : std::runtime_error {
  main_threw() : std::runtime_error("the main function threw") {}
};

TEST(DistEdges, FuturesDestroyedByUnwindingFinishBeforeTheRunEnds) {
  constexpr int writers = 16;
  auto* cells = static_cast<long*>(ito::dist::alloc_collective(2 * writers * sizeof(long)));
  if (ito::dist::rank() == 0) std::memset(cells, 0, 2 * writers * sizeof(long));
  ito::dist::barrier();
  bool threw = false;
  try {
    ito::dist::start_main_thread([cells] {
      std::vector<ito::future<void>> kept;
      for (int i = 0; i < 2 * writers; i += 2)
        kept.push_back(ito::create_thread(detached_writer, cells, i, 1));
      throw main_threw();  // the futures are destroyed (detached) by unwinding
    });
  } catch (const main_threw&) {
    threw = true;
  }
  EXPECT_EQ(threw, ito::dist::rank() == 0);
  ito::dist::barrier();
  int wrong = 0;
  for (int i = 0; i < 2 * writers; ++i)
    if (cells[i] != i * 7 + 1) ++wrong;
  EXPECT_EQ(wrong, 0);
  ito::dist::barrier();
}

// ---- ito::dist::free from whichever rank the ULT is on ---------------------

struct free_record {
  std::uint64_t block;
  int owner;   // the rank whose heap it came from
  int freer;   // the rank that freed it
};

// Child-first: the continuation after create_thread is what a thief takes,
// so the free below often runs on another rank than the alloc.
void alloc_fork_free(free_record* records, int i) {
  const int owner = ito::dist::rank();
  void* p = ito::dist::alloc(48);
  auto child = ito::create_thread([] {
    spin_us(200);
    ito::yield();
    return 1;
  });
  spin_us(100);
  ito::yield();
  child.get();
  for (int round = 0; round < 4; ++round) {  // yielded ULTs are what thieves take first
    spin_us(100);
    ito::yield(true);
  }
  records[i] = {reinterpret_cast<std::uint64_t>(p), owner, ito::dist::rank()};
  ito::dist::free(p);
}

void alloc_fork_free_all(free_record* records, int lo, int hi) {
  if (hi - lo == 1) return alloc_fork_free(records, lo);
  const int mid = (lo + hi) / 2;
  auto left = ito::create_thread(alloc_fork_free_all, records, lo, mid);
  alloc_fork_free_all(records, mid, hi);
  left.get();
}

TEST(DistEdges, ABlockIsFreedFromAnyRankAndGoesBackToItsOwner) {
  constexpr int n = 64;
  auto* records = static_cast<free_record*>(ito::dist::alloc_collective(n * sizeof(free_record)));
  std::uint64_t moved = 0;
  std::vector<free_record> elsewhere;  // of this rank's blocks, freed on another
  for (int run = 0; run < runs_to_see_a_migration && (run == 0 || moved == 0); ++run) {
    ito::dist::barrier();
    EXPECT_NO_THROW(ito::dist::start_main_thread(alloc_fork_free_all, records, 0, n));
    ito::dist::barrier();
    for (int i = 0; i < n; ++i) {
      if (records[i].owner != records[i].freer) {
        ++moved;
        if (records[i].owner == ito::dist::rank()) elsewhere.push_back(records[i]);
      }
    }
    ito::dist::barrier();
  }
  if (ito::dist::size() < 2) return;
  EXPECT_GT(moved, 0u) << "no block was freed away from its owner in " << runs_to_see_a_migration
                       << " runs";
  // Each block freed elsewhere comes back to its owner's heap: taking blocks
  // of the same size finds it again (the free arrives on the progress thread).
  std::vector<void*> taken;
  std::size_t found = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (found < elsewhere.size() && std::chrono::steady_clock::now() < give_up) {
    void* q = ito::dist::alloc(48);
    taken.push_back(q);
    for (const free_record& r : elsewhere)
      if (r.block == reinterpret_cast<std::uint64_t>(q)) ++found;
    if (taken.size() % 64 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(found, elsewhere.size()) << "blocks freed on another rank never came back";
  for (void* q : taken) ito::dist::free(q);
  ito::dist::barrier();
}

// ---- Results and arguments with destructors -------------------------------

// Returns a trivially copyable value but takes arguments with destructors
// (a future, a string): it may migrate, and its join works anywhere.
long sum_with_owned_arguments(ito::future<long> inner, std::string label, int i) {
  spin_us(100);
  ito::yield();
  return inner.get() + static_cast<long>(label.size()) + i;
}

long owned_arguments_tree(int lo, int hi) {
  if (hi - lo == 1) {
    auto inner = ito::create_thread([lo] {
      spin_us(100);
      ito::yield();
      return static_cast<long>(lo);
    });
    auto f = ito::create_thread(sum_with_owned_arguments, std::move(inner), std::string("abcd"), lo);
    spin_us(50);
    ito::yield();
    return f.get();
  }
  const int mid = (lo + hi) / 2;
  auto left = ito::create_thread(owned_arguments_tree, lo, mid);
  const long right = owned_arguments_tree(mid, hi);
  return left.get() + right;
}

TEST(DistEdges, AUltWhoseArgumentsHaveDestructorsIsJoinedOnAnyRank) {
  constexpr int n = 64;
  long expected = 0;
  for (int i = 0; i < n; ++i) expected += 2L * i + 4;
  std::uint64_t joins_elsewhere = 0;
  for (int run = 0; run < runs_to_see_a_migration && (run == 0 || joins_elsewhere == 0); ++run) {
    const long got = ito::dist::start_main_thread(owned_arguments_tree, 0, n);
    EXPECT_EQ(got, expected);
    joins_elsewhere += sum_over_ranks(ito::dist::last_scheduler_stats().remote_joins);
  }
  if (ito::dist::size() > 1) {
    EXPECT_GT(joins_elsewhere, 0u);
  }
}

// wait() then get(), and wait() then a dropped future, on a ULT whose end
// another process knows: the first wait brings the end here, and what
// follows must use it, not ask the home again (the second request once
// found the ULT released there and ended the job).
long waited_tree(int lo, int hi) {
  if (hi - lo == 1) {
    spin_us(100);
    ito::yield();
    return lo;
  }
  const int mid = (lo + hi) / 2;
  auto left = ito::create_thread(waited_tree, lo, mid);
  auto extra = ito::create_thread(waited_tree, lo, lo + 1);
  const long right = waited_tree(mid, hi);
  left.wait();
  extra.wait();  // then dropped: detached after its end is known here
  left.wait();   // twice is allowed
  return left.get() + right;
}

TEST(DistEdges, AFutureWaitedThenTakenOrDroppedAfterItsUltMoved) {
  constexpr int n = 64;
  std::uint64_t joins_elsewhere = 0;
  for (int run = 0; run < runs_to_see_a_migration && (run == 0 || joins_elsewhere == 0); ++run) {
    EXPECT_EQ(ito::dist::start_main_thread(waited_tree, 0, n), n * (n - 1) / 2);
    joins_elsewhere += sum_over_ranks(ito::dist::last_scheduler_stats().remote_joins);
  }
  if (ito::dist::size() > 1) {
    EXPECT_GT(joins_elsewhere, 0u);
  }
}

// A result that is not trivially copyable stays with its process: the ULT
// is never taken by another rank, so its joiner there, or nobody (its future
// dropped), gets it whole.
std::string labelled_leaf(int i) {
  const int rank_before = ito::dist::rank();
  for (int round = 0; round < 4; ++round) {
    spin_us(50);
    ito::yield();
  }
  if (ito::dist::rank() != rank_before) return "moved";
  return "leaf " + std::to_string(i) + std::string(40, 'x');  // on the heap
}

int labelled_tree(int lo, int hi) {
  if (hi - lo == 1) {
    (void)ito::create_thread(labelled_leaf, lo + 1000);  // dropped: detached with its string
    auto f = ito::create_thread(labelled_leaf, lo);
    const std::string s = f.get();
    return s == "leaf " + std::to_string(lo) + std::string(40, 'x') ? 0 : 1;
  }
  const int mid = (lo + hi) / 2;
  auto left = ito::create_thread(labelled_tree, lo, mid);
  const int right = labelled_tree(mid, hi);
  return left.get() + right;
}

TEST(DistEdges, AUltWithANonTrivialResultStaysWithItsProcess) {
  for (int run = 0; run < 2; ++run) {
    const int wrong = ito::dist::start_main_thread(labelled_tree, 0, 64);
    EXPECT_EQ(wrong, 0) << "run " << run;
  }
}

// ---- Fences and other MPI calls from a ULT's own stack ---------------------

void fence_in_leaves(long* cells, int lo, int hi) {
  if (hi - lo == 1) {
    cells[lo] = lo + 5;
    ito::dist::sd_fence();  // MPI on a ULT's 64 KiB stack overflowed it
    ito::dist::si_fence();
    return;
  }
  const int mid = (lo + hi) / 2;
  auto left = ito::create_thread(fence_in_leaves, cells, lo, mid);
  fence_in_leaves(cells, mid, hi);
  left.get();
}

TEST(DistEdges, FencesFromAUltRunOnAStackLargeEnough) {
  constexpr int n = 64;
  auto* cells = static_cast<long*>(ito::dist::alloc_collective(n * sizeof(long)));
  const long wrong = ito::dist::start_main_thread([cells] {
    fence_in_leaves(cells, 0, n);
    long bad = 0;
    for (int i = 0; i < n; ++i) bad += cells[i] != i + 5;
    return bad;
  });
  EXPECT_EQ(wrong, 0);
  ito::dist::barrier();
}

// ---- Collective calls where only rank 0 runs --------------------------------

TEST(DistEdges, ACollectiveCallInsideTheMainFunctionIsAUsageError) {
  int barrier_error = 0, alloc_error = 0, nested_error = 0;
  ito::dist::start_main_thread([&] {
    barrier_error = ito::test::usage_error_code([] { ito::dist::barrier(); });
    alloc_error = ito::test::usage_error_code([] { (void)ito::dist::alloc_collective(64); });
    nested_error = ito::test::usage_error_code([] { ito::dist::start_main_thread([] {}); });
  });
  if (ito::dist::rank() == 0) {
    EXPECT_EQ(barrier_error, EPERM);
    EXPECT_EQ(alloc_error, EPERM);
    EXPECT_EQ(nested_error, EPERM);
  }
  ito::dist::barrier();  // outside the main function it still works
}

// ---- A ULT holding a lock stays where the lock is --------------------------

ito::mutex g_lock;  // one per process, as every process-local object
long g_guarded = 0;

int hold_across_yields(int i) {
  int moved_while_holding = 0;
  for (int round = 0; round < 3; ++round) {
    std::unique_lock hold(g_lock);
    const int rank_locked = ito::dist::rank();
    ++g_guarded;
    spin_us(50);
    ito::yield();  // a thief may not take it here
    if (ito::dist::rank() != rank_locked) ++moved_while_holding;
    hold.unlock();  // on another process: terminate, and this one's lock stays taken
    spin_us(50 + i % 3);
    ito::yield();  // here it may move
  }
  return moved_while_holding;
}

// leaf(lo) + ... + leaf(hi - 1), each leaf a ULT of a binary tree whose
// continuations thieves take (child-first): the leaves run on every rank.
template <int (*Leaf)(int)>
int sum_over_ranks(int lo, int hi) {
  if (hi - lo == 1) return Leaf(lo);
  const int mid = (lo + hi) / 2;
  auto left = ito::create_thread(sum_over_ranks<Leaf>, lo, mid);
  const int right = sum_over_ranks<Leaf>(mid, hi);
  return left.get() + right;
}

TEST(DistEdges, AUltHoldingALockDoesNotMigrate) {
  for (int run = 0; run < 2; ++run) {
    const int moved = ito::dist::start_main_thread(sum_over_ranks<hold_across_yields>, 0, 64);
    EXPECT_EQ(moved, 0) << "run " << run;
    EXPECT_TRUE(g_lock.try_lock()) << "a lock stayed taken on rank " << ito::dist::rank();
    g_lock.unlock();
  }
}

// ---- A ULT holding a checkout stays where its pins are --------------------

long* g_slices = nullptr;  // 64 slices of 1,024 longs, in the DSM
constexpr int slice_longs = 1024;

int write_slice_across_yields(int i) {
  int moved_while_held = 0;
  for (int round = 0; round < 3; ++round) {
    ito::dist::checkout slice(g_slices + i * slice_longs, slice_longs, ito::dist::access::read_write);
    const int rank_out = ito::dist::rank();
    for (int k = 0; k < slice_longs; ++k) slice[k] += i;
    spin_us(30);
    ito::yield();  // a thief may not take it here: its pins are this rank's
    if (ito::dist::rank() != rank_out) ++moved_while_held;
  }  // checked in on the rank it was checked out on
  return moved_while_held;
}

TEST(DistEdges, AUltHoldingACheckoutDoesNotMigrateAndItsWritesArrive) {
  g_slices = static_cast<long*>(ito::dist::alloc_collective(64 * slice_longs * sizeof(long)));
  if (ito::dist::rank() == 0) std::fill(g_slices, g_slices + 64 * slice_longs, 0L);
  ito::dist::barrier();
  const int moved = ito::dist::start_main_thread(sum_over_ranks<write_slice_across_yields>, 0, 64);
  ito::dist::barrier();
  if (ito::dist::rank() == 0) {
    EXPECT_EQ(moved, 0);
    long wrong = 0;
    for (int i = 0; i < 64; ++i)
      for (int k = 0; k < slice_longs; ++k) wrong += g_slices[i * slice_longs + k] != 3L * i;
    EXPECT_EQ(wrong, 0);
  }
  ito::dist::barrier();
}

}  // namespace
