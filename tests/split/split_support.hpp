// SPDX-License-Identifier: Apache-2.0
// Helpers for the split-stack tests: a runtime with a given policy, the
// worker counters, the limit word.
#pragma once

#include <cstdint>

#include "arch/context.hpp"
#include "ito/runtime.hpp"
#include "sched/scheduler.hpp"
#include "sched/worker.hpp"
#include "split/split_provider.hpp"

namespace split_test {

inline ito::options policy(ito::stack_policy p, unsigned workers, std::size_t block = 0) {
  ito::options o;
  o.workers = workers;
  o.stacks = p;
  o.stack_block_size = block;
  return o;
}

// Sums one per-worker counter of the running runtime's split provider.
template <class Field>
std::uint64_t total(Field field) {
  std::uint64_t sum = 0;
  for (auto& w : ito::sched::g_runtime.load()->workers)
    sum += ((ito::sched::split::state(w.get()).stats).*field).load();
  return sum;
}

// The running runtime's blocks and fair_use pool.
inline ito::stack::segment_pool& segments() {
  return ito::sched::split::provider(ito::sched::g_runtime.load()).segments;
}

// Regions in fair_use's pool: the shared one and every worker's part.
inline std::size_t pooled_regions() {
  std::size_t sum = segments().pooled_regions();
  for (auto& w : ito::sched::g_runtime.load()->workers)
    sum += ito::sched::split::state(w.get()).pooled_count.load();
  return sum;
}

inline std::uint64_t segments_used() {
  using s = ito::sched::split::split_stats;
  return total(&s::segments_allocated) + total(&s::segments_hot_reused) +
         total(&s::segments_pool_reused);
}

inline char* limit_word() { return static_cast<char*>(ito::arch::split_limit()); }

}  // namespace split_test
