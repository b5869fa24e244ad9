// SPDX-License-Identifier: Apache-2.0
// ITO_STATS=1: the per-worker counters, printed when the runtime stops.
#include <cstdio>
#include <mutex>
#include <string>

#include "sched/preempt.hpp"
#include "sched/runtime_control.hpp"

namespace ito::sched {

void print_stats(runtime_state* rt, std::FILE* out) {
  std::fprintf(out,
               "ito: stats: %zu workers, %zu stacks mapped (%zu bytes each)\n"
               "ito: %6s %12s %12s %12s %12s %12s %8s %8s %12s %12s %12s %12s"
               " %12s\n",
               rt->workers.size(), rt->stacks.stacks_mapped(), rt->stacks.stack_size(), "worker",
               "spawns", "quick_res", "direct_wake", "inline_join", "steal_tries", "steals", "parks",
               "late_wk", "stack_reuse", "stack_take", "branch_ult", "record_ult");
  if (rt->stack_provider) rt->stack_provider->print_stats(*rt, out);
  for (auto& w : rt->workers) {
    auto& s = w->stats;
    std::fprintf(out,
                 "ito: %6u %12llu %12llu %12llu %12llu %12llu %8llu %8llu %12llu %12llu %12llu "
                 "%12llu %12llu\n",
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
                 static_cast<unsigned long long>(s.branches_made_ults.load()),
                 static_cast<unsigned long long>(s.records_made_ults.load()));
  }
  // TLS blocks (ITO_ULT_TLS; sched/ult_tls.hpp), where any were given.
  std::uint64_t made = 0, reused = 0, freed = 0;
  std::string per_worker;
  for (auto& w : rt->workers) {
    const std::uint64_t m = w->stats.tls_blocks_made.load(), r = w->stats.tls_blocks_reused.load(),
                        f = w->stats.tls_blocks_freed.load();
    made += m;
    reused += r;
    freed += f;
    per_worker += (per_worker.empty() ? "" : ", ") + std::to_string(w->index) + ": " +
                  std::to_string(m) + "/" + std::to_string(r) + "/" + std::to_string(f);
  }
  if (made + reused != 0)
    std::fprintf(out,
                 "ito: TLS blocks: %llu made by ld.so, %llu reused from a worker's cache, %llu "
                 "handed back to ld.so with the cache full (per worker, made/reused/handed back: "
                 "%s)\n",
                 static_cast<unsigned long long>(made), static_cast<unsigned long long>(reused),
                 static_cast<unsigned long long>(freed), per_worker.c_str());
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
