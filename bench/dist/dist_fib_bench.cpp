// SPDX-License-Identifier: Apache-2.0
// fib(n) on the distributed scheduler, one ULT per call (the same code as
// `ito-bench fib`), at the rank count mpiexec gives it:
//   ITO_WORKERS=W mpiexec -n R ito-bench-dist-fib [--n 30] [--runs 5]
// (`ito-bench dist-fib` launches it at every shape and compares). Rank 0
// prints one line per run:
//   run <ms> <fib> <ULTs moved> <steal requests> <remote joins> <stack bytes moved> <fences>
// the counts summed over the ranks.
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ito/dist.hpp"
#include "ito/thread.hpp"

namespace {

long fib(int n) {
  if (n < 2) return n;
  auto a = ito::create_thread(fib, n - 1);
  const long b = fib(n - 2);
  return a.get() + b;
}

int flag_value(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  ito::dist::runtime dist(&argc, &argv);
  const int n = flag_value(argc, argv, "--n", 30);
  const int runs = flag_value(argc, argv, "--runs", 5);
  for (int run = 0; run < runs; ++run) {
    ito::dist::barrier();
    const auto t0 = std::chrono::steady_clock::now();
    const long result = ito::dist::start_main_thread(fib, n);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const auto c = ito::dist::last_scheduler_stats();
    std::uint64_t mine[5] = {c.ults_received, c.steal_requests, c.remote_joins, c.stack_bytes_moved,
                             c.releases + c.acquires};
    std::uint64_t all[5] = {};
    MPI_Reduce(mine, all, 5, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (ito::dist::rank() == 0)
      std::printf("run %.3f %ld %llu %llu %llu %llu %llu\n", ms, result,
                  static_cast<unsigned long long>(all[0]), static_cast<unsigned long long>(all[1]),
                  static_cast<unsigned long long>(all[2]), static_cast<unsigned long long>(all[3]),
                  static_cast<unsigned long long>(all[4]));
    std::fflush(stdout);
  }
  return 0;
}
