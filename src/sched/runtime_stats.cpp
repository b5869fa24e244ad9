// SPDX-License-Identifier: Apache-2.0
// ITO_STATS=1: the per-worker counters, printed when the runtime stops.
#include <cstdio>
#include <mutex>

#include "sched/preempt.hpp"
#include "sched/runtime_control.hpp"

namespace ito::sched {

void print_stats(runtime_state* rt, std::FILE* out) {
  std::fprintf(out,
               "ito: stats: %zu workers, %zu stacks mapped (%zu bytes each)\n"
               "ito: %6s %12s %12s %12s %12s %12s %8s %8s %12s %12s %12s %12s"
               "\n",
               rt->workers.size(), rt->stacks.stacks_mapped(), rt->stacks.stack_size(), "worker",
               "spawns", "quick_res", "direct_wake", "inline_join", "steal_tries", "steals", "parks",
               "late_wk", "stack_reuse", "stack_take", "branch_ult");
  if (rt->stack_provider) rt->stack_provider->print_stats(*rt, out);
  for (auto& w : rt->workers) {
    auto& s = w->stats;
    std::fprintf(out,
                 "ito: %6u %12llu %12llu %12llu %12llu %12llu %8llu %8llu %12llu %12llu %12llu "
                 "%12llu\n",
                 w->index, static_cast<unsigned long long>(s.spawns.load()),
                 static_cast<unsigned long long>(s.quick_resumes.load()),
                 static_cast<unsigned long long>(s.direct_join_wakeups.load()),
                 static_cast<unsigned long long>(s.inline_joins.load()),
                 static_cast<unsigned long long>(s.steal_attempts.load()),
                 static_cast<unsigned long long>(s.steals.load()),
                 static_cast<unsigned long long>(s.parks.load()),
                 static_cast<unsigned long long>(s.late_wakeups.load()),
                 static_cast<unsigned long long>(s.stacks_reused.load()),
                 static_cast<unsigned long long>(s.stacks_taken.load()),
                 static_cast<unsigned long long>(s.branches_made_ults.load()));
  }
  if (rt->opts.preempt_us.value_or(0) != 0) {
    std::uint64_t preempts = 0, refused = 0;
    for (auto& w : rt->workers) {
      preempts += w->stats.preempts.load();
      refused += w->stats.preempts_refused.load();
    }
    std::fprintf(out,
                 "ito: preemption (slice %u us): %llu signals sent, %llu ULTs preempted, %llu "
                 "left running (not at a safe point)\n",
                 *rt->opts.preempt_us, static_cast<unsigned long long>(preempt_signals_sent(rt)),
                 static_cast<unsigned long long>(preempts), static_cast<unsigned long long>(refused));
  }
  std::lock_guard lock(rt->idle_mutex);
  std::fprintf(out, "ito: wake-ups that kept the woken worker off its waker's CPU: %llu\n",
               static_cast<unsigned long long>(rt->wakes_kept_off_waker));
}


}  // namespace ito::sched
