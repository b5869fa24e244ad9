// SPDX-License-Identifier: Apache-2.0
// fib(n) on the distributed scheduler, one ULT per call (the same code as
// `ito-bench fib`), at the rank count mpiexec gives it:
//   ITO_WORKERS=W mpiexec -n R ito-bench-dist-fib [--n 30] [--runs 5]
// (`ito-bench dist-fib` launches it at every shape and compares). Rank 0
// prints one line per run (run_report.hpp), its check being fib(n).
#include <chrono>

#include "fib_kernel.hpp"
#include "ito/dist.hpp"
#include "run_report.hpp"

int main(int argc, char** argv) {
  ito::dist::runtime dist(&argc, &argv);
  const int n = run_report::flag_value(argc, argv, "--n", 30);
  const int runs = run_report::flag_value(argc, argv, "--runs", 5);
  for (int run = 0; run < runs; ++run) {
    ito::dist::barrier();
    const auto t0 = std::chrono::steady_clock::now();
    const long result = ito::dist::start_main_thread(fib_kernel::fib, n);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    run_report::print_run(ms, result);
  }
  return 0;
}
