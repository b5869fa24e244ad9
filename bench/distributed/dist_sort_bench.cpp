// SPDX-License-Identifier: Apache-2.0
// A DSM-heavy divide-and-conquer kernel on the distributed scheduler: a
// merge sort of n ints in the DSM with parallel halves and a parallel merge
// (cilksort's shape), ULTs migrating with the work:
//   ITO_WORKERS=W mpiexec -n R ito-bench-dist-sort [--n 1000000] [--runs 3]
// (`ito-bench dist-sort` launches it at every shape and compares with the
// same code on plain memory in one process). Rank 0 prints
// one line per run (run_report.hpp), its check being 1 if sorted and the sum
// matches.
#include <chrono>
#include <cstdint>

#include "ito/dist.hpp"
#include "run_report.hpp"
#include "sort_kernel.hpp"

int main(int argc, char** argv) {
  ito::dist::runtime dist(&argc, &argv);
  const long n = run_report::flag_value(argc, argv, "--n", 1'000'000);
  const int runs = run_report::flag_value(argc, argv, "--runs", 3);
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
    run_report::print_run(ms, ok);
  }
  return 0;
}
