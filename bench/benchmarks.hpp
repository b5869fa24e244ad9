// SPDX-License-Identifier: Apache-2.0
// The subcommands. Each runs ito and its comparison systems in one process and
// hands every row to the reporter; `demo` calls them with small sizes.
#pragma once

#include <vector>

#include "harness.hpp"
#include "mpi_launch.hpp"

namespace bench {

struct fib_params {
  int n = 30;
  std::vector<unsigned> workers{1, 2};
  int runs = 5;
};
void run_fib(const fib_params& p, reporter& out);

// bench/dist_launch.cpp: a kernel on the distributed scheduler, launched
// through mpiexec at each rank count and memory mode (mpi_launch.hpp),
// against the same kernel in one process (dist_one_process.cpp).
enum class dist_kernel { fib, sort, stencil };
struct dist_params {
  dist_kernel kernel = dist_kernel::fib;
  long n = 30;       // fib(n); ints to sort; the stencil's grid is n x n
  long sweeps = 30;  // the stencil's
  std::vector<unsigned> workers{1, 2};
  std::vector<unsigned> ranks{1, 2, 4};
  std::vector<node_mode> modes;  // --node; default both
  // dist-sort's --access: the leaves fault their pages in, or check them out
  std::vector<bool> checkouts{false};
  int runs = 5;
};
void run_dist(const dist_params& p, reporter& out);
// `ito-bench dsm` (bench/dsm_launch.cpp): ito-bench-dsm once per mode.
struct dsm_params {
  unsigned ranks = 2;
  long pages = 256;
  std::vector<node_mode> modes;
  int runs = 7;
};
void run_dsm(const dsm_params& p, reporter& out);

struct create_join_params {
  long long ito_iters = 1'000'000;
  long long stolen_iters = 1'000'000;  // the cross-worker hand-off (W >= 2)
  long long os_iters = 20'000;  // pthread_create/join and std::thread
  int runs = 5;
  std::vector<unsigned> workers{1, 2};
};
void run_create_join(const create_join_params& p, reporter& out);

struct yield_params {
  long long ito_yields = 10'000'000;    // in total, over both ULTs
  long long os_yields = 2'000'000;      // sched_yield, in total
  long long fiber_yields = 10'000'000;  // Boost.Fiber, in total
  int runs = 5;
  std::vector<unsigned> workers{1};
};
void run_yield(const yield_params& p, reporter& out);

struct mutex_params {
  long long uncontended = 10'000'000;  // lock/unlock pairs
  long long contended = 1'000'000;     // lock/unlock pairs per thread
  long long work_between = 0;  // contended: empty-loop iterations after each unlock
  int runs = 5;
  std::vector<unsigned> workers{1, 2, 4};  // for the contended part
};
void run_mutex(const mutex_params& p, reporter& out);

struct blocked_params {
  long long ults = 1'000'000;
  long long os_threads = 10'000;
  int runs = 5;
  std::vector<unsigned> workers{1};
};
void run_blocked(const blocked_params& p, reporter& out);

}  // namespace bench
