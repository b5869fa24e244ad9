// SPDX-License-Identifier: Apache-2.0
// The distributed scheduler: ULTs created with the ordinary API migrate
// between ranks and still compute the right thing. Every rank runs every test
// (mpi_test_main.cpp); rank 0 runs each main function.
#include <gtest/gtest.h>
#include <mpi.h>
#include <sched.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/setting_values.hpp"  // src/
#include "distributed/progress.hpp"
#include "distributed/checkout_access.hpp"  // bench/: the kernels ito-bench dist-fib and dist-sort time
#include "distributed/fib_kernel.hpp"
#include "distributed/sort_kernel.hpp"
#include "ito/dist.hpp"
#include "ito/parallel.hpp"
#include "ito/thread.hpp"
#include "ito/ult.hpp"

namespace {

long fib_sequential(int n) { return n < 2 ? n : fib_sequential(n - 1) + fib_sequential(n - 2); }

// Over every rank: how many ULTs arrived by remote steals in the last run.
std::uint64_t ults_moved_everywhere() {
  std::uint64_t mine = ito::dist::last_scheduler_stats().ults_received, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  return all;
}

// Whether ULTs migrate in one short run depends on how the ranks get the
// cores (4 ranks on 2 cores, beside other tests): up to this many runs (the
// runs stop at the first that sees one; 5 missed once at load ~13).
constexpr int runs_to_see_a_migration = 20;

TEST(DistScheduler, FibIsRightOnEveryRank) {
  std::uint64_t moved = 0;
  for (int run = 0; run < runs_to_see_a_migration && (run == 0 || moved == 0); ++run) {
    const long got = ito::dist::start_main_thread(fib_kernel::fib, 24);
    EXPECT_EQ(got, fib_sequential(24));  // trivially copyable: every rank has it
    moved += ults_moved_everywhere();
  }
  if (ito::dist::size() > 1) {
    EXPECT_GT(moved, 0u) << "no ULT migrated in " << runs_to_see_a_migration << " runs";
  }
}

// Locality first: where a rank's node holds other ranks and there are other
// nodes (ITO_DIST_NODE=pair), a steal request goes to a rank of its own node,
// and to any rank only after one of those had nothing, so no rank sends more
// requests beyond its node than within it. Elsewhere none counts as within.
TEST(DistScheduler, StealsAskTheRanksOfTheirOwnNodeFirst) {
  std::vector<int> node_of(static_cast<std::size_t>(ito::dist::size()));
  const int mine = ito::dist::node();
  MPI_Allgather(&mine, 1, MPI_INT, node_of.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int in_node = 0;
  bool other_nodes = false;
  for (int n : node_of) {
    in_node += n == mine;
    other_nodes |= n != mine;
  }
  const bool has_mates = in_node > 1 && other_nodes;
  EXPECT_EQ(ito::dist::start_main_thread(fib_kernel::fib, 22), fib_sequential(22));
  const ito::dist::scheduler_stats s = ito::dist::last_scheduler_stats();
  const std::uint64_t near = s.steal_requests_in_node, far = s.steal_requests - near;
  if (has_mates) {
    EXPECT_LE(far, near) << "rank " << ito::dist::rank() << " asked beyond its node first";
  } else {
    EXPECT_EQ(near, 0u);
  }
  std::uint64_t near_everywhere = 0, mine_with_mates = has_mates ? s.steal_requests : 0, all = 0;
  MPI_Allreduce(&near, &near_everywhere, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&mine_with_mates, &all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (all > 0) {
    EXPECT_GT(near_everywhere, 0u) << "ranks with node mates asked none of them";
  }
}

// ITO_DIST_IDLE_PROGRESS_US unset: an idle rank polls MPI every 20 us only
// where the workers of all the ranks of its host fit the CPUs their affinity
// masks allow together (ITO_WORKERS, else a worker per CPU of the mask);
// where ranks share CPUs, such polls take them from the ranks that compute.
// Set, it is the value asked for. (This suite runs at 1, 2 and 4 ranks with 1
// and 2 workers each: on a 2-CPU machine, both answers.)
TEST(DistScheduler, AnIdleRankPollsSoonerOnlyWhereEveryWorkerHasACpu) {
  long expected = 0;
  if (const char* set = std::getenv("ITO_DIST_IDLE_PROGRESS_US")) {
    expected = std::strtol(set, nullptr, 10);
  } else {
    MPI_Comm host;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
    cpu_set_t mine, all;
    CPU_ZERO(&mine);
    ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
    int ranks = 0;
    MPI_Comm_size(host, &ranks);
    std::vector<cpu_set_t> masks(static_cast<std::size_t>(ranks));
    MPI_Allgather(&mine, sizeof mine, MPI_BYTE, masks.data(), sizeof mine, MPI_BYTE, host);
    CPU_ZERO(&all);
    for (cpu_set_t& m : masks) CPU_OR(&all, &all, &m);
    // Unset ITO_WORKERS: the rank's share of the host's CPUs (dist_test checks it).
    const char* w = std::getenv("ITO_WORKERS");
    const long my_workers = w ? std::strtol(w, nullptr, 10) : static_cast<long>(ito::config::default_workers());
    long workers = 0;
    MPI_Allreduce(&my_workers, &workers, 1, MPI_LONG, MPI_SUM, host);
    MPI_Comm_free(&host);
    expected = workers <= CPU_COUNT(&all) ? 20 : 0;
  }
  EXPECT_EQ(ito::dist::detail::idle_progress_interval_us(), expected);
}

// A ULT that yields between writing and reading its stack: after each yield
// it may run on another rank, at the same addresses.
struct stack_check {
  int bad = 0;    // locals that did not read back
  int moved = 0;  // yields after which it ran on another rank
};

stack_check keep_locals(int seed) {
  volatile std::uint64_t locals[64];
  for (int i = 0; i < 64; ++i) locals[i] = static_cast<std::uint64_t>(seed) * 1000 + i;
  stack_check r;
  const volatile void* where = &locals[0];
  for (int round = 0; round < 40; ++round) {
    const int before = ito::dist::rank();
    // Some work between yields, so that the run lasts long enough (tens of
    // milliseconds) for other ranks' steal requests to find these ULTs.
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
    while (std::chrono::steady_clock::now() < until) {
    }
    ito::yield();
    if (ito::dist::rank() != before) ++r.moved;
    if (&locals[0] != where) ++r.bad;
    for (int i = 0; i < 64; ++i)
      if (locals[i] != static_cast<std::uint64_t>(seed) * 1000 + i + static_cast<std::uint64_t>(round)) ++r.bad;
    for (int i = 0; i < 64; ++i) locals[i] = locals[i] + 1;
  }
  return r;
}

stack_check spread(int lo, int hi) {
  if (hi - lo == 1) return keep_locals(lo);
  const int mid = (lo + hi) / 2;
  auto left = ito::create_thread(spread, lo, mid);
  const stack_check right = spread(mid, hi);
  const stack_check l = left.get();
  return {l.bad + right.bad, l.moved + right.moved};
}

TEST(DistScheduler, MigratedUltsKeepTheirStackLocals) {
  std::uint64_t moved = 0;
  int moved_mid_run = 0;  // seen by the ULTs themselves: a yield returned on another rank
  for (int run = 0; run < runs_to_see_a_migration && (run == 0 || moved == 0); ++run) {
    const stack_check r = ito::dist::start_main_thread(spread, 0, 64);
    EXPECT_EQ(r.bad, 0);
    moved += ults_moved_everywhere();
    moved_mid_run += r.moved;
  }
  if (ito::dist::size() > 1) {
    EXPECT_GT(moved, 0u) << "no ULT migrated in " << runs_to_see_a_migration << " runs";
  }
  if (ito::dist::size() == 1) {
    EXPECT_EQ(moved_mid_run, 0);
  }
}

// Children on any rank write a DSM array; the parent reads it after the joins.
void fill(int* a, int lo, int hi) {
  if (hi - lo <= 512) {
    for (int i = lo; i < hi; ++i) a[i] = i * 3 + 1;
    return;
  }
  const int mid = (lo + hi) / 2;
  auto left = ito::create_thread(fill, a, lo, mid);
  fill(a, mid, hi);
  left.get();
}

TEST(DistScheduler, ChildrenWritesToTheDsmAreSeenAfterJoin) {
  constexpr int n = 1 << 16;
  auto* a = static_cast<int*>(ito::dist::alloc_collective(n * sizeof(int)));
  const long wrong = ito::dist::start_main_thread([a] {
    fill(a, 0, n);
    long bad = 0;
    for (int i = 0; i < n; ++i) bad += a[i] != i * 3 + 1;
    return bad;
  });
  EXPECT_EQ(wrong, 0);
  ito::dist::barrier();
}

// Cilksort on DSM arrays (bench/distributed/sort_kernel.hpp): children on every
// rank write interleaved ranges of the same pages, merges read what other
// ranks' children wrote, after joins only.
template <class Access>
void sort_on_the_dsm_twice() {
  constexpr long n = 1 << 17;
  auto* a = static_cast<int*>(ito::dist::alloc_collective(n * sizeof(int)));
  auto* tmp = static_cast<int*>(ito::dist::alloc_collective(n * sizeof(int)));
  for (unsigned run = 1; run <= 2; ++run) {
    const long wrong = ito::dist::start_main_thread([=] {
      sort_kernel::fill<Access>(a, n, run);
      const sort_kernel::summary before = sort_kernel::check<Access>(a, n);
      sort_kernel::sort<Access>(a, tmp, n);
      const sort_kernel::summary after = sort_kernel::check<Access>(a, n);
      return after.descents + (after.sum != before.sum);
    });
    EXPECT_EQ(wrong, 0) << "run " << run << ": out of order or values lost";
  }
  ito::dist::barrier();
}

TEST(DistScheduler, CilksortOnTheDsmSortsAcrossRanks) { sort_on_the_dsm_twice<sort_kernel::plain_access>(); }

// The same with every leaf's ranges checked out (read, write, read_write),
// leaves straddling pages that leaves on other ranks write too: write
// checkouts that overwrote a stale copy's complement lost bytes here.
TEST(DistScheduler, CilksortWithCheckoutsSortsAcrossRanks) { sort_on_the_dsm_twice<checkout_access>(); }

// Leaves throw; each parent joins its leaf and catches. A leaf that ended on
// the parent's process rethrows its own exception; one that ended elsewhere
// arrives as ito::dist::remote_error with the type's name and what().
struct caught {
  int local = 0, remote = 0, wrong = 0;
};

caught throwing_leaf(int i) {
  for (int round = 0; round < 3; ++round) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
    while (std::chrono::steady_clock::now() < until) {
    }
    ito::yield();  // a thief may take it here: it then ends on another rank
  }
  throw std::out_of_range("leaf " + std::to_string(i));
}

caught join_throwers(int lo, int hi) {
  if (hi - lo == 1) {
    auto f = ito::create_thread(throwing_leaf, lo);
    caught c;
    try {
      f.get();
      ++c.wrong;  // it must throw
    } catch (const std::out_of_range& e) {
      c.local += std::string(e.what()) == "leaf " + std::to_string(lo) ? 1 : 0;
      c.wrong += std::string(e.what()) == "leaf " + std::to_string(lo) ? 0 : 1;
    } catch (const ito::dist::remote_error& e) {
      const bool right = std::string(e.type_name()) == "std::out_of_range" &&
                         std::string(e.what()) == "leaf " + std::to_string(lo);
      c.remote += right ? 1 : 0;
      c.wrong += right ? 0 : 1;
      if (!right)  // the test's output says which
        std::fprintf(stderr, "leaf %d: remote_error %s: %s\n", lo, e.type_name(), e.what());
    } catch (...) {
      ++c.wrong;
    }
    return c;
  }
  const int mid = (lo + hi) / 2;
  auto left = ito::create_thread(join_throwers, lo, mid);
  const caught r = join_throwers(mid, hi);
  const caught l = left.get();
  return {l.local + r.local, l.remote + r.remote, l.wrong + r.wrong};
}

TEST(DistScheduler, ExceptionsCrossProcessesToTheJoin) {
  int remote = 0;
  for (int run = 0; run < runs_to_see_a_migration && (run == 0 || remote == 0); ++run) {
    const caught c = ito::dist::start_main_thread(join_throwers, 0, 256);
    EXPECT_EQ(c.wrong, 0);
    EXPECT_EQ(c.local + c.remote, 256);
    remote += c.remote;
  }
  if (ito::dist::size() > 1) {
    EXPECT_GT(remote, 0) << "no exception crossed processes in " << runs_to_see_a_migration
                         << " runs";
  } else {
    EXPECT_EQ(remote, 0);
  }
}

// Seed 003's low-level API: allocate, fork, join, across processes. A joined
// ULT's frame is gone: the leaves leave their sums in the DSM.
struct sum_frame {
  int lo, hi;
  long* partial;  // in the DSM: one cell per leaf of 4
};

void sum_body(void* p) {
  const sum_frame f = *static_cast<sum_frame*>(p);
  if (f.hi - f.lo <= 4) {
    long s = 0;
    for (int i = f.lo; i < f.hi; ++i) s += i;
    f.partial[f.lo / 4] = s;
    return;
  }
  const int mid = (f.lo + f.hi) / 2;
  ito::lowlevel::allocated_ult th = ito::lowlevel::allocate(sizeof(sum_frame));
  ::new (th.ptr) sum_frame{f.lo, mid, f.partial};
  ito::lowlevel::fork(th, &sum_body);
  sum_frame right{mid, f.hi, f.partial};
  sum_body(&right);
  ito::lowlevel::join(th.id);
}

TEST(DistScheduler, LowLevelForkJoinAcrossProcesses) {
  constexpr int n = 1 << 14;
  auto* partial = static_cast<long*>(ito::dist::alloc_collective(n / 4 * sizeof(long)));
  const long got = ito::dist::start_main_thread([partial] {
    sum_frame root{0, n, partial};
    sum_body(&root);
    long s = 0;
    for (int i = 0; i < n / 4; ++i) s += partial[i];
    return s;
  });
  EXPECT_EQ(got, static_cast<long>(n) * (n - 1) / 2);
  ito::dist::barrier();
}

// parallel_invoke in the distributed mode: its branches stay in their
// process (records on the caller's stack), and so do a caller with a branch
// queued and a stolen branch's ULT; ULTs forked inside branches still
// migrate. The main ULT's branches fork leaves help-first (it is bound), so
// many wait in its worker's deque where other ranks' thieves take them; the
// other branch nests parallel_invoke over child-first forks. Every node
// counted, on every rank.
long spinning_leaf() {
  for (int round = 0; round < 2; ++round) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
    while (std::chrono::steady_clock::now() < until) {
    }
    ito::yield();
  }
  return 1;
}

long fork_leaves(int n) {
  std::vector<ito::future<long>> leaves;
  for (int i = 0; i < n; ++i) leaves.push_back(ito::create_thread(spinning_leaf));
  long sum = 0;
  for (auto& f : leaves) sum += f.get();
  return sum;
}

long invoke_and_fork(int depth) {
  if (depth == 0) return ito::create_thread(spinning_leaf).get();
  long a = 0, b = 0;
  ito::parallel_invoke([&] { a = invoke_and_fork(depth - 1); },
                       [&] { b = invoke_and_fork(depth - 1); });
  return a + b + 1;
}

TEST(DistScheduler, ParallelInvokeBranchesStayWhileForkedUltsMove) {
  constexpr int depth = 5, leaves = 64;
  std::uint64_t moved = 0;
  for (int run = 0; run < runs_to_see_a_migration && (run == 0 || moved == 0); ++run) {
    const long got = ito::dist::start_main_thread([] {
      long a = 0, b = 0;
      ito::parallel_invoke([&] { a = fork_leaves(leaves); }, [&] { b = invoke_and_fork(depth); });
      return a + b;
    });
    EXPECT_EQ(got, leaves + (2L << depth) - 1);
    moved += ults_moved_everywhere();
  }
  if (ito::dist::size() > 1) {
    EXPECT_GT(moved, 0u) << "no ULT migrated";
  }
}

// create_thread(near(p)): a ULT created near DSM data that a rank of another
// node holds starts on that rank; where the ranks share one copy, nothing is
// placed (no rank is nearer). Placed ULTs run from the injector, which other
// ranks' steals do not take from, and these never suspend, so each reports
// where it started. Ten runs: a placed ULT can reach a rank before its
// runtime of the run has started (it waits there until it has), and the main
// ULT reads each page right after its join (a join that found the child's
// end already published once read a stale copy: the home published the end
// before its acquire).
constexpr long placement_page_longs = 4096 / sizeof(long);

TEST(DistScheduler, UltsCreatedNearDataStartOnTheRankThatHoldsIt) {
  const int ranks = ito::dist::size();
  const bool one_copy = ito::dist::nodes() == 1;
  auto* cells = static_cast<long*>(ito::dist::alloc_collective(
      static_cast<std::size_t>(ranks) * placement_page_longs * sizeof(long)));  // a page each
  for (int run = 0; run < 10; ++run) {
    const long wrong = ito::dist::start_main_thread([cells, ranks, run, one_copy] {
      std::vector<ito::future<int>> started_on;
      for (int r = 0; r < ranks; ++r) {
        long* mine = cells + r * placement_page_longs;
        started_on.push_back(ito::create_thread(ito::near(mine), [mine, run, r] {
          *mine = run * 100 + r;  // on the page it was placed near
          return ito::dist::rank();
        }));
      }
      long bad = 0;
      for (int r = 0; r < ranks; ++r) {
        // Rank 0's own child is not placed: the main ULT forks it help-first
        // (it is bound), so another rank may steal it.
        const int ran_on = started_on[static_cast<std::size_t>(r)].get();
        bad += !one_copy && r != 0 && ran_on != r;
        bad += cells[r * placement_page_longs] != run * 100 + r;  // seen after the join
      }
      return bad;
    });
    EXPECT_EQ(wrong, 0) << "run " << run;
    EXPECT_EQ(ito::dist::last_scheduler_stats().ults_placed,
              ito::dist::rank() == 0 && !one_copy ? static_cast<std::uint64_t>(ranks - 1) : 0u);
  }
  ito::dist::barrier();
}

// near() is a hint: memory outside the DSM, a page nobody has touched yet
// (first touch: no home known), and a result that cannot be copied to
// another process leave the child where it was created. Created from a
// ULT that is not the main one, a child runs at once where its creator
// runs (child first), so it reports the rank its creator was on when it
// forked. The creator itself may move between forks: its continuation
// can be stolen while a child runs, so each fork records its own rank.
struct where_they_ran {
  int creator = -1;  // where the creator started
  int not_dsm = -1, untouched = -1, string_result = -1;
  int forked_not_dsm = -2, forked_untouched = -2, forked_string_result = -2;
};

where_they_ran create_near_what_does_not_move(const long* elsewhere, const long* untouched) {
  const long on_the_stack = 0;
  where_they_ran w;
  w.creator = ito::dist::rank();
  w.forked_not_dsm = ito::dist::rank();
  w.not_dsm = ito::create_thread(ito::near(&on_the_stack), [] { return ito::dist::rank(); }).get();
  w.forked_untouched = ito::dist::rank();
  w.untouched = ito::create_thread(ito::near(untouched), [] { return ito::dist::rank(); }).get();
  w.forked_string_result = ito::dist::rank();
  const std::string s =
      ito::create_thread(ito::near(elsewhere), [] { return std::to_string(ito::dist::rank()); })
          .get();
  w.string_result = std::stoi(s);
  return w;
}

TEST(DistScheduler, NearIsOnlyAHintWhereTheChildCannotOrNeedNotMove) {
  const int ranks = ito::dist::size();
  auto* cells = static_cast<long*>(ito::dist::alloc_collective(
      static_cast<std::size_t>(ranks) * placement_page_longs * sizeof(long)));
  auto* untouched = static_cast<long*>(
      ito::dist::alloc_collective(4096, ito::dist::distribution::first_touch()));
  const where_they_ran w = ito::dist::start_main_thread([cells, untouched, ranks] {
    // The creator itself is placed on the last rank (one node per rank);
    // its children are not.
    return ito::create_thread(ito::near(cells + (ranks - 1) * placement_page_longs),
                              create_near_what_does_not_move, cells, untouched)
        .get();
  });
  const bool one_placed = ranks > 1 && ito::dist::nodes() > 1;
  if (one_placed) {
    EXPECT_EQ(w.creator, ranks - 1);
  }
  EXPECT_EQ(w.not_dsm, w.forked_not_dsm);
  EXPECT_EQ(w.untouched, w.forked_untouched);
  EXPECT_EQ(w.string_result, w.forked_string_result);
  std::uint64_t placed = ito::dist::last_scheduler_stats().ults_placed, all = 0;
  MPI_Allreduce(&placed, &all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(all, one_placed ? 1u : 0u);  // the creator only
  ito::dist::barrier();
}

// A placed ULT whose future is dropped still finishes, and its writes are
// released, before the run ends.
TEST(DistScheduler, PlacedUltsWithDroppedFuturesFinishBeforeTheRunEnds) {
  const int ranks = ito::dist::size();
  auto* cells = static_cast<long*>(ito::dist::alloc_collective(
      static_cast<std::size_t>(ranks) * placement_page_longs * sizeof(long)));
  for (int run = 1; run <= 3; ++run) {
    ito::dist::start_main_thread([cells, ranks, run] {
      for (int r = 0; r < ranks; ++r) {
        long* mine = cells + r * placement_page_longs;
        (void)ito::create_thread(ito::near(mine), [mine, run] {
          ito::yield();  // may move on: it still ends before the run does
          mine[1] = run;
        });
      }
    });
    ito::dist::barrier();  // every rank's writes are released
    int wrong = 0;
    for (int r = 0; r < ranks; ++r) wrong += cells[r * placement_page_longs + 1] != run;
    EXPECT_EQ(wrong, 0) << "run " << run;
    ito::dist::barrier();
  }
}

}  // namespace
