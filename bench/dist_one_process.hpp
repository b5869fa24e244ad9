// SPDX-License-Identifier: Apache-2.0
// The one-process rows of the distributed subcommands: the same kernel on
// plain memory under shared-memory ito (the reference the distributed rows
// are divided by), and for the stencil its plain sequential loops.
#pragma once

#include <cstdint>
#include <vector>

#include "benchmarks.hpp"

namespace bench {

class one_process {
 public:
  explicit one_process(const dist_params& p);
  // One run on shared-memory ito at w workers: ns of the timed region (fib:
  // a whole start_main_thread; sort: the sort; stencil: the sweeps).
  std::int64_t ito_run(unsigned w, unsigned run);
  // One run of the stencil's sequential loops: ns of the sweeps.
  std::int64_t sequential_run();

 private:
  const dist_params& p_;
  std::vector<int> a_, tmp_;           // sort; kept, so runs after the first fault no page in
  std::vector<double> grid_a_, grid_b_;  // stencil
  double expected_ = 0;                // stencil: the sequential checksum
};

}  // namespace bench
