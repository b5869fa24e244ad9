// SPDX-License-Identifier: Apache-2.0
// The distributed runtime's set-up, run through mpiexec at 2 and 4 ranks
// (tests/distributed/CMakeLists.txt): ranks, the iso-address region, ASLR. Every rank
// runs every test; a test fails when it fails on any rank.
#include <gtest/gtest.h>
#include <mpi.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "distributed/dist_state.hpp"
#include "distributed/progress.hpp"
#include "ito/dist.h"
#include "ito/dist.hpp"
#include "ito/runtime.hpp"

namespace {

int a_static_variable = 42;

// Every rank's value of x, gathered on every rank.
std::vector<std::uint64_t> everyone(std::uint64_t x) {
  std::vector<std::uint64_t> all(static_cast<std::size_t>(ito::dist::size()));
  MPI_Allgather(&x, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
  return all;
}

TEST(dist, ranks_are_numbered_from_zero_and_counted) {
  int mpi_size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
  EXPECT_EQ(ito::dist::size(), mpi_size);
  const auto ranks = everyone(static_cast<std::uint64_t>(ito::dist::rank()));
  for (std::size_t i = 0; i < ranks.size(); ++i) EXPECT_EQ(ranks[i], i);
  ito::dist::barrier();
}

// The runtime's own threads carry names top and gdb show (Linux allows 15
// characters: a longer name is refused and the thread stays "dist_test").
TEST(dist, the_progress_thread_has_a_name_of_its_own) {
  ASSERT_TRUE(ito::dist::detail::progress_running());
  bool found = false;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    found = found || name == "ito-progress";
  }
  EXPECT_TRUE(found);
  ito::dist::barrier();
}

// The scheduling attributes of thread `tid` (sched_getattr): its slice
// request is `runtime`, in ns (0 where the kernel keeps none).
struct sched_attributes {
  std::uint32_t size, policy;
  std::uint64_t flags;
  std::int32_t nice;
  std::uint32_t priority;
  std::uint64_t runtime, deadline, period;
};
bool scheduling_of(long tid, sched_attributes& a) {
  a = {};
  return syscall(SYS_sched_getattr, tid, &a, sizeof a, 0) == 0;
}

// Its wake-ups preempt a computing worker: it asks for 100 us slices
// (sched_attr.sched_runtime, EEVDF), where the kernel keeps such a request
// (tried on a thread of the test's own; older kernels keep none).
TEST(dist, the_progress_thread_asks_for_short_slices_where_the_kernel_has_them) {
  bool kernel_keeps_slices = false;
  std::thread probe([&] {
    sched_attributes a{};
    a.size = sizeof a;
    a.runtime = 300'000;
    sched_attributes back{};
    kernel_keeps_slices = syscall(SYS_sched_setattr, 0, &a, 0) == 0 &&
                          scheduling_of(0, back) && back.runtime == 300'000;
  });
  probe.join();
  long progress_tid = -1;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name == "ito-progress") progress_tid = std::stol(task.path().filename().string());
  }
  ASSERT_GT(progress_tid, 0);
  sched_attributes a{};
  ASSERT_TRUE(scheduling_of(progress_tid, a));
  EXPECT_EQ(a.policy, static_cast<std::uint32_t>(SCHED_OTHER));
  if (kernel_keeps_slices) {
    EXPECT_EQ(a.runtime, 100'000u) << "the kernel keeps slice requests";
  }
  ito::dist::barrier();
}

// Without ITO_WORKERS, the ranks of one host split the CPUs their masks
// share instead of each running a worker per CPU (mpiexec -n 2 on 2 cores
// ran 4 workers): at least one each, parts differing by at most one, the
// earlier ranks taking the extra ones, all of the CPUs used; and the idle
// progress poll is then the fast one (every worker has a CPU).
TEST(dist, ranks_of_one_host_split_its_cpus_by_default) {
  ASSERT_EQ(std::getenv("ITO_WORKERS"), nullptr) << "this suite runs with the default";
  MPI_Comm host;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
  int host_ranks = 0;
  MPI_Comm_size(host, &host_ranks);
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  std::vector<cpu_set_t> masks(static_cast<std::size_t>(host_ranks));
  MPI_Allgather(&mine, sizeof mine, MPI_BYTE, masks.data(), sizeof mine, MPI_BYTE, host);
  unsigned workers = 0;
  {
    ito::runtime rt;
    workers = rt.workers();
  }
  std::vector<unsigned> all(static_cast<std::size_t>(host_ranks));
  MPI_Allgather(&workers, 1, MPI_UNSIGNED, all.data(), 1, MPI_UNSIGNED, host);
  MPI_Comm_free(&host);
  bool same_masks = true;
  for (const cpu_set_t& m : masks) same_masks = same_masks && CPU_EQUAL(&m, &mine);
  if (same_masks) {  // mpiexec's default here: no binding
    const auto cpus = static_cast<unsigned>(CPU_COUNT(&mine));
    unsigned sum = 0;
    for (std::size_t r = 0; r < all.size(); ++r) {
      EXPECT_GE(all[r], 1u);
      if (r > 0) {
        EXPECT_LE(all[r], all[r - 1]) << "earlier ranks take the extra CPUs";
      }
      EXPECT_LE(all.front() - all[r], 1u);
      sum += all[r];
    }
    EXPECT_EQ(sum, std::max(cpus, static_cast<unsigned>(host_ranks)));
    if (sum <= cpus) {
      EXPECT_EQ(ito::dist::detail::idle_progress_interval_us(), 20);
    }
  }
  ito::dist::barrier();
}

TEST(dist, the_region_has_one_address_and_size_on_every_rank) {
  const ito::dist::region_info r = ito::dist::region();
  ASSERT_NE(r.base, nullptr);
  EXPECT_EQ(r.bytes, std::size_t{1} << 30);  // ITO_DSM_SIZE=1G (the test's environment)
  for (auto b : everyone(reinterpret_cast<std::uintptr_t>(r.base)))
    EXPECT_EQ(b, reinterpret_cast<std::uintptr_t>(r.base));
}

TEST(dist, code_and_static_data_have_one_address_on_every_rank) {
  const int p = personality(0xffffffff);
  EXPECT_NE(p & ADDR_NO_RANDOMIZE, 0) << "the rank was not re-executed without ASLR";
  const auto code = reinterpret_cast<std::uintptr_t>(&everyone);
  const auto data = reinterpret_cast<std::uintptr_t>(&a_static_variable);
  for (auto c : everyone(code)) EXPECT_EQ(c, code);
  for (auto d : everyone(data)) EXPECT_EQ(d, data);
}

TEST(dist, the_view_and_its_alias_are_one_memory_and_the_view_starts_inaccessible) {
  const auto& region = ito::dist::detail::current()->region;
  char* view = region.view;
  char* alias = region.alias;
  ASSERT_NE(view, alias);
  // The view starts with no access: the DSM grants it page by page.
  EXPECT_EQ(mprotect(view, 4096, PROT_READ | PROT_WRITE), 0);
  std::memcpy(view, "through the view", 17);
  EXPECT_STREQ(alias, "through the view");
  std::memcpy(alias + 4096 * 1000, "through the alias", 18);
  EXPECT_EQ(mprotect(view + 4096 * 1000, 4096, PROT_READ), 0);
  EXPECT_STREQ(view + 4096 * 1000, "through the alias");
  mprotect(view, 4096, PROT_NONE);
  mprotect(view + 4096 * 1000, 4096, PROT_NONE);
}

TEST(dist, the_c_api_answers_as_the_cxx_one) {
  int rank = -1, size = -1;
  EXPECT_EQ(ito_dist_rank(&rank), 0);
  EXPECT_EQ(ito_dist_size(&size), 0);
  EXPECT_EQ(rank, ito::dist::rank());
  EXPECT_EQ(size, ito::dist::size());
  void* base = nullptr;
  std::size_t bytes = 0;
  EXPECT_EQ(ito_dist_region(&base, &bytes), 0);
  EXPECT_EQ(base, ito::dist::region().base);
  EXPECT_EQ(ito_dist_barrier(), 0);
  EXPECT_EQ(ito_dist_rank(nullptr), EINVAL);
}

}  // namespace
