// SPDX-License-Identifier: Apache-2.0
// The Jacobi stencil (stencil_kernel.hpp) over two n x n grids of doubles in
// the DSM on the distributed scheduler:
//   ITO_WORKERS=W mpiexec -n R ito-bench-dist-stencil [--n 2048] [--sweeps 30] [--runs 3]
// (`ito-bench dist-stencil` launches it at every shape and compares with the
// same code on plain memory in one process). Each run initialises the grids
// in parallel ULTs (untimed), then times the sweeps; rank 0 prints one line
// per run (run_report.hpp), its check being 1 if the checksum is the one the
// sequential loops give on plain memory.
#include <chrono>
#include <cstdio>
#include <vector>

#include "ito/dist.hpp"
#include "run_report.hpp"
#include "stencil_kernel.hpp"

int main(int argc, char** argv) {
  ito::dist::runtime dist(&argc, &argv);
  const long n = run_report::flag_value(argc, argv, "--n", 2048);
  const long sweeps = run_report::flag_value(argc, argv, "--sweeps", 30);
  const int runs = run_report::flag_value(argc, argv, "--runs", 3);
  if (n < 3 || sweeps < 1 || runs < 1) {
    if (ito::dist::rank() == 0)
      std::fprintf(stderr, "usage: ito-bench-dist-stencil [--n N>=3] [--sweeps S>0] [--runs R>0]\n");
    return 2;
  }
  const std::size_t bytes = static_cast<std::size_t>(n * n) * sizeof(double);
  auto* a = static_cast<double*>(ito::dist::alloc_collective(bytes));
  auto* b = static_cast<double*>(ito::dist::alloc_collective(bytes));
  double expected = 0;  // rank 0's check: the sequential loops on plain memory
  if (ito::dist::rank() == 0) {
    std::vector<double> pa(static_cast<std::size_t>(n * n)), pb(pa.size());
    stencil_kernel::init_rows(pa.data(), pb.data(), n, 0, n);
    expected = stencil_kernel::checksum<false>(
        stencil_kernel::run_sequential(pa.data(), pb.data(), n, sweeps), n);
  }
  for (int run = 0; run < runs; ++run) {
    ito::dist::barrier();
    double ms = 0;
    const int ok = ito::dist::start_main_thread([&] {
      stencil_kernel::init(a, b, n);
      const auto t0 = std::chrono::steady_clock::now();
      const double* result = stencil_kernel::run(a, b, n, sweeps);
      ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      return stencil_kernel::checksum<true>(result, n) == expected ? 1 : 0;
    });
    run_report::print_run(ms, ok);
  }
  return 0;
}
