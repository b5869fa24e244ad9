// SPDX-License-Identifier: Apache-2.0
// The one-process rows of the distributed subcommands (dist_one_process.hpp).
#include "dist_one_process.hpp"

#include <stdexcept>

#include "distributed/fib_kernel.hpp"
#include "distributed/sort_kernel.hpp"
#include "distributed/stencil_kernel.hpp"
#include "ito/thread.hpp"

namespace bench {

one_process::one_process(const dist_params& p) : p_(p) {
  const auto cells = static_cast<std::size_t>(p.n);
  if (p.kernel == dist_kernel::sort) {
    a_.resize(cells);
    tmp_.resize(cells);
  } else if (p.kernel == dist_kernel::stencil) {
    grid_a_.resize(cells * cells);
    grid_b_.resize(grid_a_.size());
    sequential_run();
    expected_ = stencil_kernel::checksum<false>(
        p.sweeps % 2 ? grid_b_.data() : grid_a_.data(), p.n);
  }
}

std::int64_t one_process::ito_run(unsigned w, unsigned run) {
  const long n = p_.n;
  if (p_.kernel == dist_kernel::fib) {
    const std::int64_t t0 = now_ns();
    const long v = ito::start_main_thread_with_worker_size(
        w, [&] { return ito::join(ito::create_thread(fib_kernel::fib, static_cast<int>(n))); });
    const std::int64_t t = now_ns() - t0;
    if (v != fib_value(static_cast<int>(n))) throw std::runtime_error("fib: wrong result");
    return t;
  }
  if (p_.kernel == dist_kernel::sort) {
    return ito::start_main_thread_with_worker_size(w, [&] {
      sort_kernel::fill(a_.data(), n, run + 1);
      const sort_kernel::summary before = sort_kernel::check(a_.data(), n);
      const std::int64_t t0 = now_ns();
      sort_kernel::sort(a_.data(), tmp_.data(), n);
      const std::int64_t t = now_ns() - t0;
      const sort_kernel::summary after = sort_kernel::check(a_.data(), n);
      if (after.descents != 0 || after.sum != before.sum) throw std::runtime_error("sort: wrong result");
      return t;
    });
  }
  return ito::start_main_thread_with_worker_size(w, [&] {
    stencil_kernel::init(grid_a_.data(), grid_b_.data(), n);
    const std::int64_t t0 = now_ns();
    const double* result = stencil_kernel::run(grid_a_.data(), grid_b_.data(), n, p_.sweeps);
    const std::int64_t t = now_ns() - t0;
    if (stencil_kernel::checksum<true>(result, n) != expected_)
      throw std::runtime_error("stencil: the checksum differs from the sequential loops'");
    return t;
  });
}

std::int64_t one_process::sequential_run() {
  stencil_kernel::init_rows(grid_a_.data(), grid_b_.data(), p_.n, 0, p_.n);
  const std::int64_t t0 = now_ns();
  const double* result =
      stencil_kernel::run_sequential(grid_a_.data(), grid_b_.data(), p_.n, p_.sweeps);
  const std::int64_t t = now_ns() - t0;
  do_not_optimize(result[p_.n + 1]);
  return t;
}

}  // namespace bench
