// SPDX-License-Identifier: Apache-2.0
// What the programs `ito-bench dist-fib`, `dist-sort` and `dist-stencil`
// launch share: their flags, and the line rank 0 prints per run, which the
// launcher parses:
//   run <ms> <check> <ULTs moved> <steal requests> <remote joins> <stack bytes moved> <fences>
// (the counts summed over the ranks; fences: releases + acquires). And the
// line ito-bench-dsm prints per row with --rows, for `ito-bench dsm`
// (tab-separated, as the names have spaces):
//   row <case> <impl> <ops per run> <median ns per op> <min> <max>
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ito/dist.hpp"

namespace run_report {

inline int flag_value(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  return fallback;
}

// Collective: every rank calls it after each run.
inline void print_run(double ms, long check) {
  const ito::dist::scheduler_stats c = ito::dist::last_scheduler_stats();
  std::uint64_t mine[5] = {c.ults_received, c.steal_requests, c.remote_joins, c.stack_bytes_moved,
                           c.releases + c.acquires};
  std::uint64_t all[5] = {};
  MPI_Reduce(mine, all, 5, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  if (ito::dist::rank() == 0)
    std::printf("run %.3f %ld %llu %llu %llu %llu %llu\n", ms, check,
                static_cast<unsigned long long>(all[0]), static_cast<unsigned long long>(all[1]),
                static_cast<unsigned long long>(all[2]), static_cast<unsigned long long>(all[3]),
                static_cast<unsigned long long>(all[4]));
  std::fflush(stdout);
}

// One row of per-run values, ns per op.
inline void print_row(const char* group, const char* impl, double ops, std::vector<double> ns) {
  std::sort(ns.begin(), ns.end());
  if (ns.empty()) return;
  std::printf("row\t%s\t%s\t%.0f\t%.1f\t%.1f\t%.1f\n", group, impl, ops, ns[ns.size() / 2],
              ns.front(), ns.back());
}

}  // namespace run_report
