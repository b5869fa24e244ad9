// SPDX-License-Identifier: Apache-2.0
// The seed-000 benchmarks, run under each stack policy (ito-bench-split).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "harness.hpp"
#include "ito/options.hpp"

namespace bench::split {

const char* name(ito::stack_policy p);
// --block's value (a list such as 8K,64K,2M); main takes it off the command line.
extern std::string g_block_list;
// Parses "8K,64K,2M" (suffixes K, M).
std::vector<std::size_t> parse_sizes(const std::string& flag, const std::string& text);
std::string size_text(std::size_t bytes);

// What one run under a policy reports besides its time.
struct run_info {
  std::int64_t ns = 0;
  std::size_t peak_stack_bytes = 0;  // lazy/fair_use: blocks; fixed: stacks mapped x size
};

// Starts a runtime with the policy, runs `body` on a ULT (not the main ULT, so
// that its spawns are child-first) and times it.
run_info run_under(ito::stack_policy p, unsigned workers, std::size_t block,
                   std::size_t fixed_stack, const std::function<void()>& body);

// Repeats run_under `runs` times; fills the timing fields, the peak RSS and
// the median peak stack bytes (extra "peak_stack_MB").
void measure_policy(result& r, int runs, ito::stack_policy p, unsigned workers, std::size_t block,
                    std::size_t fixed_stack, const std::function<void()>& body);

int fib_command(args& a, const common_flags& c, reporter& out);
int matfib_command(args& a, const common_flags& c, reporter& out);
int chain_command(args& a, const common_flags& c, reporter& out);
int crossing_command(args& a, const common_flags& c, reporter& out);

}  // namespace bench::split
