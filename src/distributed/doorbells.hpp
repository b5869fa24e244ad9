// SPDX-License-Identifier: Apache-2.0
// Doorbells: how a rank wakes the progress thread of a rank of its own node.
// Between rounds, each rank's progress thread sleeps on a word of its own in
// the node's memory (the page after the region, node_memory.hpp); a rank that
// sends a node mate a message stores to the mate's word and wakes it (a
// futex keyed by the shared memory), so the message is handled at once
// rather than at the mate's next poll. Measured between two ranks of one
// 2-core host (BENCHMARKS.md, "Doorbells"): 21-26 us from send to receipt
// at the median and 140-154 at the 90th percentile before, 7-10 and 30-47
// with them.
// Ranks of other nodes share no memory and are not rung: their messages wait
// for the poll, as before.
//
// A node's page holds `slots` doorbells (a cache line each); a node of more
// ranks shares them (rank i of the node rings slot i % slots), and a rank
// that takes a ring meant for another only costs that one its poll's wait.
#pragma once

#include <cstddef>
#include <cstdint>

#include "os/futex.hpp"

namespace ito::dist::detail {

struct node_info;

// The doorbells in a node's page at `page` (node_page_bytes, doorbells_at).
class doorbell_board {
 public:
  static constexpr std::size_t line = 64;
  static std::size_t slots() noexcept;

  explicit doorbell_board(void* page) noexcept : page_(static_cast<char*>(page)) {}

  os::futex_word* slot(int index_in_node) const noexcept;
  // Wakes the thread sleeping on `bell` (a no-op if it was rung and not yet
  // heard: a wake-up is on its way).
  static void ring(os::futex_word* bell) noexcept;
  // Sleeps on `bell` until it rings or timeout_ns passes; returns at once,
  // clearing it, if it rang since the last wait. (Shared futexes work on a
  // process's private words too: one ring and wait for every bell.)
  static void wait(os::futex_word* bell, std::int64_t timeout_ns) noexcept;

 private:
  char* page_;
};

// Maps this rank's node's page (when its node holds other ranks) and finds
// its own bell and its mates'. After reserve_region, before start_progress.
void open_doorbells(int node_fd, std::size_t region_bytes, const node_info& node, int rank);
// After stop_progress.
void close_doorbells() noexcept;

// This rank's bell in the node's page, or null (a node of one rank).
os::futex_word* own_doorbell() noexcept;
// Rings `rank`'s progress thread if it is a node mate; nothing otherwise.
void ring_doorbell(int rank) noexcept;

}  // namespace ito::dist::detail
