// SPDX-License-Identifier: Apache-2.0
#include "distributed/scheduler/counts.hpp"

namespace ito::dist::detail {
namespace {
scheduler_counts g_counts;
}

scheduler_counts& counts() noexcept { return g_counts; }

void reset_counts() noexcept {
  for (auto* c : {&g_counts.steal_requests, &g_counts.steal_requests_in_node, &g_counts.ults_received, &g_counts.ults_sent,
                  &g_counts.ults_placed, &g_counts.remote_joins, &g_counts.remote_ends, &g_counts.stack_bytes_moved,
                  &g_counts.releases, &g_counts.acquires})
    c->store(0, std::memory_order_relaxed);
}

ito::dist::scheduler_stats snapshot(const scheduler_counts& c) noexcept {
  ito::dist::scheduler_stats s;
  s.steal_requests = c.steal_requests.load(std::memory_order_relaxed);
  s.steal_requests_in_node = c.steal_requests_in_node.load(std::memory_order_relaxed);
  s.ults_received = c.ults_received.load(std::memory_order_relaxed);
  s.ults_sent = c.ults_sent.load(std::memory_order_relaxed);
  s.ults_placed = c.ults_placed.load(std::memory_order_relaxed);
  s.remote_joins = c.remote_joins.load(std::memory_order_relaxed);
  s.remote_ends = c.remote_ends.load(std::memory_order_relaxed);
  s.stack_bytes_moved = c.stack_bytes_moved.load(std::memory_order_relaxed);
  s.releases = c.releases.load(std::memory_order_relaxed);
  s.acquires = c.acquires.load(std::memory_order_relaxed);
  return s;
}

}  // namespace ito::dist::detail
