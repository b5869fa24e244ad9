// SPDX-License-Identifier: Apache-2.0
// ITO_STATS=1: the per-worker counters, printed when the runtime stops.
#include <cstdio>

#include "sched/runtime_control.hpp"

namespace ito::sched {
namespace {

void print_split_stats(runtime_state* rt, std::FILE* out) {
  std::fprintf(out,
               "ito: %s stacks: %zu-byte blocks (%s), peak %zu bytes in stacks, %zu now\n"
               "ito: %6s %12s %12s %12s %12s %12s\n",
               rt->opts.stacks == stack_policy::lazy ? "lazy" : "fair_use",
               rt->segments.block_size(),
               rt->opts.stack_allocator == stack_alloc::malloc ? "malloc" : "mmap",
               rt->segments.peak_bytes(), rt->segments.live_bytes(), "worker", "on_tail",
               "seg_alloc", "seg_merged", "pool_reused", "hot_reused");
  for (auto& w : rt->workers) {
    auto& s = w->stats;
    std::fprintf(out, "ito: %6u %12llu %12llu %12llu %12llu %12llu\n", w->index,
                 static_cast<unsigned long long>(s.lazy_spawns.load()),
                 static_cast<unsigned long long>(s.segments_allocated.load()),
                 static_cast<unsigned long long>(s.segments_merged.load()),
                 static_cast<unsigned long long>(s.segments_pool_reused.load()),
                 static_cast<unsigned long long>(s.segments_hot_reused.load()));
  }
}

}  // namespace

void print_stats(runtime_state* rt, std::FILE* out) {
  std::fprintf(out,
               "ito: stats: %zu workers, %zu stacks mapped (%zu bytes each)\n"
               "ito: %6s %12s %12s %12s %12s %8s %8s %12s %12s %12s\n",
               rt->workers.size(), rt->stacks.stacks_mapped(), rt->stacks.stack_size(), "worker",
               "spawns", "quick_res", "direct_wake", "steal_tries", "steals", "parks", "late_wk",
               "stack_reuse", "stack_take");
  if (rt->opts.stacks != stack_policy::fixed) print_split_stats(rt, out);
  for (auto& w : rt->workers) {
    auto& s = w->stats;
    std::fprintf(out, "ito: %6u %12llu %12llu %12llu %12llu %8llu %8llu %12llu %12llu %12llu\n",
                 w->index, static_cast<unsigned long long>(s.spawns.load()),
                 static_cast<unsigned long long>(s.quick_resumes.load()),
                 static_cast<unsigned long long>(s.direct_join_wakeups.load()),
                 static_cast<unsigned long long>(s.steal_attempts.load()),
                 static_cast<unsigned long long>(s.steals.load()),
                 static_cast<unsigned long long>(s.parks.load()),
                 static_cast<unsigned long long>(s.late_wakeups.load()),
                 static_cast<unsigned long long>(s.stacks_reused.load()),
                 static_cast<unsigned long long>(s.stacks_taken.load()));
  }
}


}  // namespace ito::sched
