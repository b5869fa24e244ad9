// SPDX-License-Identifier: Apache-2.0
#include "distributed/scheduler/placement.hpp"

#include <mutex>
#include <utility>
#include <vector>

#include "distributed/dsm/dsm.hpp"
#include "distributed/progress.hpp"
#include "distributed/scheduler/ult_moves.hpp"
#include "distributed/scheduler/wire.hpp"
#include "sched/extension.hpp"

namespace ito::dist::detail::placement {
namespace {

using queue = std::vector<std::pair<sched::ult*, int>>;

struct outbox {
  std::mutex lock;  // creators and the progress thread; never held across MPI
  queue waiting;
  queue leaving;  // the progress thread's alone
};
outbox g;

}  // namespace

void start() {
  std::lock_guard hold(g.lock);
  g.waiting.clear();
  g.waiting.reserve(64);  // a creator's queueing seldom allocates
}

int where(const sched::ult* child, const void* data) noexcept {
  const int rank = placement_rank(data);
  if (rank < 0) return sched::extension::placement_none;
  if (rank == wire::rank()) return sched::extension::placement_here;
  return ult_moves::may_leave(child) ? rank : sched::extension::placement_none;
}

void send(sched::ult* child, int rank) noexcept {
  bool first;
  {
    std::lock_guard hold(g.lock);
    first = g.waiting.empty();
    g.waiting.emplace_back(child, rank);
  }
  if (first) nudge_progress();
}

void send_queued() {
  {
    std::lock_guard hold(g.lock);
    if (g.waiting.empty()) return;
    g.leaving.swap(g.waiting);  // both keep their buffers from round to round
  }
  for (auto [child, rank] : g.leaving) ult_moves::place(child, rank);
  g.leaving.clear();
}

}  // namespace ito::dist::detail::placement
