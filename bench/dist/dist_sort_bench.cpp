// SPDX-License-Identifier: Apache-2.0
// A DSM-heavy divide-and-conquer kernel on the distributed scheduler: a
// merge sort of n ints in the DSM with parallel halves and a parallel merge
// (cilksort's shape), ULTs migrating with the work:
//   ITO_WORKERS=W mpiexec -n R ito-bench-dist-sort [--n 1000000] [--runs 3]
// (`ito-bench dist-sort` launches it at every shape and compares with the
// same code on plain memory in one process). Rank 0 prints one line per run:
//   run <ms> <1 if sorted and the sum matches> <ULTs moved> <steal requests> <remote joins>
//       <stack bytes moved> <fences: releases + acquires>
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ito/dist.hpp"
#include "sort_kernel.hpp"

namespace {

int flag_value(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  ito::dist::runtime dist(&argc, &argv);
  const long n = flag_value(argc, argv, "--n", 1'000'000);
  const int runs = flag_value(argc, argv, "--runs", 3);
  auto* data = static_cast<int*>(ito::dist::alloc_collective(static_cast<std::size_t>(n) * sizeof(int)));
  auto* scratch = static_cast<int*>(ito::dist::alloc_collective(static_cast<std::size_t>(n) * sizeof(int)));
  for (int run = 0; run < runs; ++run) {
    ito::dist::barrier();
    double ms = 0;
    const int ok = ito::dist::start_main_thread([&] {
      sort_kernel::fill(data, n, static_cast<unsigned>(run + 1));
      const std::uint64_t sum = sort_kernel::checksum(data, n);
      const auto t0 = std::chrono::steady_clock::now();
      sort_kernel::sort(data, scratch, n);
      ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      return sort_kernel::is_sorted(data, n) && sort_kernel::checksum(data, n) == sum ? 1 : 0;
    });
    const auto c = ito::dist::last_scheduler_stats();
    std::uint64_t mine[5] = {c.ults_received, c.steal_requests, c.remote_joins, c.stack_bytes_moved,
                             c.releases + c.acquires};
    std::uint64_t all[5] = {};
    MPI_Reduce(mine, all, 5, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (ito::dist::rank() == 0)
      std::printf("run %.3f %d %llu %llu %llu %llu %llu\n", ms, ok,
                  static_cast<unsigned long long>(all[0]), static_cast<unsigned long long>(all[1]),
                  static_cast<unsigned long long>(all[2]), static_cast<unsigned long long>(all[3]),
                  static_cast<unsigned long long>(all[4]));
    std::fflush(stdout);
  }
  return 0;
}
