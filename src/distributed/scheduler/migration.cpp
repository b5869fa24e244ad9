// SPDX-License-Identifier: Apache-2.0
#include "distributed/scheduler/migration.hpp"

#include <cstdio>
#include <mutex>

#include "distributed/dist_state.hpp"
#include "distributed/progress.hpp"
#include "distributed/scheduler/counts.hpp"
#include "distributed/scheduler/local_runtime.hpp"
#include "distributed/scheduler/placement.hpp"
#include "distributed/scheduler/quiescence.hpp"
#include "distributed/scheduler/remote_join.hpp"
#include "distributed/scheduler/remote_steal.hpp"
#include "distributed/scheduler/ult_moves.hpp"
#include "distributed/scheduler/wire.hpp"
#include "distributed/scheduler/stack_area.hpp"
#include "sched/extension.hpp"
#include "sched/scheduler.hpp"

namespace ito::dist::detail {
namespace {

// The scheduler's view of the distributed mode (sched/extension.hpp has
// each hook's contract).
struct processes final : sched::extension {
  int wait(sched::ult* child) override { return remote_join::wait(child); }
  int detach(sched::ult* child) override { return remote_join::detach(child); }
  void ended(sched::worker* w, sched::ult* self) noexcept override { remote_join::ended(w, self); }
  void release(sched::ult* u) noexcept override { remote_join::release(u); }
  void wants_work(sched::worker* w) noexcept override { remote_steal::wants_work(w); }
  int placement(const sched::ult* child, const void* data) noexcept override {
    return placement::where(child, data);
  }
  void send_new(sched::ult* child, int rank) noexcept override { placement::send(child, rank); }
};

processes* g_processes = nullptr;
ito::dist::scheduler_stats g_last_counts;  // of the last run, once it ended

// The progress thread's round: what arrived, a steal if this rank is idle,
// then what is queued.
void poll_from_progress() {
  std::lock_guard hold(wire::poll_lock());
  wire::receive_all();
  ult_moves::admit_early_arrivals();
  placement::send_queued();
  remote_steal::maybe_request(sched::monotonic_ns());
  wire::send_all();
  sched::runtime_state* rt = local_runtime();
  set_rank_idle(rt && rt->parked.load(std::memory_order_relaxed) ==
                          static_cast<unsigned>(rt->workers.size()));
}

}  // namespace

void start_migration(const stack_area& area, int rank, int size,
                     const std::vector<int>& node_of_rank) {
  reset_counts();
  wire::open(rank, size);
  remote_join::start();
  ult_moves::start();
  remote_steal::start(rank, node_of_rank);
  placement::start();
  quiescence::start();
  g_processes = new processes;
  g_processes->foreign.area_lo = addr(area.base);
  g_processes->foreign.area_hi = addr(area.slice_of(size));
  g_processes->foreign.mine_lo = addr(area.slice_of(rank));
  g_processes->foreign.mine_hi = addr(area.slice_of(rank + 1));
  g_processes->stack_chunks = &map_stack_chunk;
  sched::install_extension(sched::extension_slot::processes, g_processes);
  set_progress_hook(progress_hook::scheduler, &poll_from_progress);
}

void set_runtime(sched::runtime_state* rt) {
  std::lock_guard hold(wire::poll_lock());  // the progress thread is between rounds
  set_local_runtime(rt);
}

void stop_migration() noexcept {
  set_progress_hook(progress_hook::scheduler, nullptr);
  set_rank_idle(false);  // no scheduler to say so until the next run
  sched::install_extension(sched::extension_slot::processes, nullptr);
  g_last_counts = snapshot(counts());
  if (stats_requested()) {
    const ito::dist::scheduler_stats& c = g_last_counts;
    std::fprintf(stderr,
                 "ito: dist: stats: rank %d: remote steals: %llu requests sent (%llu within "
                 "its node), %llu ULTs received, %llu given, %llu placed elsewhere; %llu remote "
                 "joins, %llu ends away from home, %llu stack bytes moved; %llu releases, %llu "
                 "acquires\n",
                 wire::rank(), static_cast<unsigned long long>(c.steal_requests),
                 static_cast<unsigned long long>(c.steal_requests_in_node),
                 static_cast<unsigned long long>(c.ults_received),
                 static_cast<unsigned long long>(c.ults_sent),
                 static_cast<unsigned long long>(c.ults_placed),
                 static_cast<unsigned long long>(c.remote_joins),
                 static_cast<unsigned long long>(c.remote_ends),
                 static_cast<unsigned long long>(c.stack_bytes_moved),
                 static_cast<unsigned long long>(c.releases),
                 static_cast<unsigned long long>(c.acquires));
  }
  remote_join::stop();
  wire::close();
  delete g_processes;
  g_processes = nullptr;
}

bool scheduler_running() noexcept { return g_processes != nullptr; }

ito::dist::scheduler_stats current_counts() noexcept {
  return g_processes ? snapshot(counts()) : g_last_counts;
}

}  // namespace ito::dist::detail
