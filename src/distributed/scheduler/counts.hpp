// SPDX-License-Identifier: Apache-2.0
// What the distributed scheduler counts (ITO_STATS, ito::dist::scheduler_stats),
// bumped by each of its parts, from zero at each start.
#pragma once

#include <atomic>
#include <cstdint>

#include "ito/dist.hpp"

namespace ito::dist::detail {

struct scheduler_counts {
  std::atomic<std::uint64_t> steal_requests{0}, steal_requests_in_node{0}, ults_received{0}, ults_sent{0}, ults_placed{0},
      remote_joins{0}, remote_ends{0}, stack_bytes_moved{0}, releases{0}, acquires{0};
};

// The running scheduler's counts.
scheduler_counts& counts() noexcept;
inline void bump(std::atomic<std::uint64_t>& c, std::uint64_t n = 1) noexcept {
  c.fetch_add(n, std::memory_order_relaxed);
}
// Back to zero (a new run).
void reset_counts() noexcept;
// A snapshot, as the public type.
ito::dist::scheduler_stats snapshot(const scheduler_counts& c) noexcept;

}  // namespace ito::dist::detail
