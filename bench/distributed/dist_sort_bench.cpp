// SPDX-License-Identifier: Apache-2.0
// A DSM-heavy divide-and-conquer kernel on the distributed scheduler: a
// merge sort of n ints in the DSM with parallel halves and a parallel merge
// (cilksort's shape), ULTs migrating with the work:
//   ITO_WORKERS=W mpiexec -n R ito-bench-dist-sort [--n 1000000] [--runs 3] [--checkout 1]
// --checkout 1: each leaf checks its ranges out (ito::dist::checkout) instead
// of faulting their pages in one by one.
// (`ito-bench dist-sort` launches it at every shape and compares with the
// same code on plain memory in one process). Rank 0 prints
// one line per run (run_report.hpp), its check being 1 if sorted and the sum
// matches.
#include <chrono>
#include <cstdint>

#include "checkout_access.hpp"
#include "ito/dist.hpp"
#include "run_report.hpp"
#include "sort_kernel.hpp"

namespace {

template <class Access>
int sort_run(int* data, int* scratch, long n, unsigned seed, double* ms) {
  sort_kernel::fill<Access>(data, n, seed);
  const sort_kernel::summary before = sort_kernel::check<Access>(data, n);
  const auto t0 = std::chrono::steady_clock::now();
  sort_kernel::sort<Access>(data, scratch, n);
  *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const sort_kernel::summary after = sort_kernel::check<Access>(data, n);
  return after.descents == 0 && after.sum == before.sum ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  ito::dist::runtime dist(&argc, &argv);
  const long n = run_report::flag_value(argc, argv, "--n", 1'000'000);
  const int runs = run_report::flag_value(argc, argv, "--runs", 3);
  const bool by_checkout = run_report::flag_value(argc, argv, "--checkout", 0) != 0;
  auto* data = static_cast<int*>(ito::dist::alloc_collective(static_cast<std::size_t>(n) * sizeof(int)));
  auto* scratch = static_cast<int*>(ito::dist::alloc_collective(static_cast<std::size_t>(n) * sizeof(int)));
  for (int run = 0; run < runs; ++run) {
    ito::dist::barrier();
    double ms = 0;
    const auto seed = static_cast<unsigned>(run + 1);
    const int ok = ito::dist::start_main_thread([&] {
      return by_checkout ? sort_run<checkout_access>(data, scratch, n, seed, &ms)
                         : sort_run<sort_kernel::plain_access>(data, scratch, n, seed, &ms);
    });
    run_report::print_run(ms, ok);
  }
  return 0;
}
