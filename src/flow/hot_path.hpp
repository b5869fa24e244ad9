// SPDX-License-Identifier: Apache-2.0
// The node-to-node path, inline: continuing a node, making it runnable,
// taking an in-flight credit. Everything unusual (exclusive nodes, high
// priority, other threads, errors) leaves through an out-of-line call.
#pragma once

#include "flow/state.hpp"

namespace ito::flow::detail {

// Nodes added one after the other lie one after the other and tend to run
// one after the other (rows of a grid, stages of a pipeline): a continued
// node starts fetching the one this many places on, likely continued soon.
// (The 10^6-node wavefront on one worker: 37 -> 27 ns per node.)
inline constexpr std::size_t prefetch_ahead = 8;  // nodes: 1 KiB

// A graph counts its activations in flight (see scheduling.cpp): a worker
// running nodes spends credits it drew in a batch; anyone else adds one.
inline void take_credit(const place& at, graph_state* g) noexcept {
  flow_worker* fw = at.fw;
  if (fw && fw->in_run_some && fw->credit_graph == g) [[likely]] {
    if (fw->credits == 0) [[unlikely]] {
      g->in_flight.add(credit_batch);
      fw->credits = credit_batch;
    }
    --fw->credits;
    return;
  }
  g->in_flight.add(1);
}

inline void make_runnable(const place& at, node_core& n) {
  flow_worker* fw = at.fw;
  // The first node a running activation releases runs next on this worker
  // (next_local): no deque, no fence, no wake-up.
  if (fw && fw->in_run_some && !fw->next_local &&
      !(n.flags.load(std::memory_order_relaxed) & flag_high)) [[likely]] {
    take_credit(at, n.owner);
    fw->next_local = &n;
    return;
  }
  make_runnable_slow(at, n);
}

inline void continue_core(const place& at, node_core& n, std::uint64_t value, unsigned port) {
  if ((n.flags.load(std::memory_order_relaxed) & flag_exclusive) || port != 0) [[unlikely]] {
    continue_special(at, n, value, port);
    return;
  }
  const char* ahead = reinterpret_cast<const char*>(&n) + prefetch_ahead * sizeof(node_core);
  __builtin_prefetch(ahead, 1, 3);       // its counter line, to be written
  __builtin_prefetch(ahead + 64, 0, 3);  // its body, to be read
  // One locked instruction. A continuation that finds the counter at 0 or
  // below (the node is runnable and has not started) is an error; its
  // decrement is not undone: the node's start resets the counter anyway, and
  // undoing it could race with that reset.
  const std::int32_t before = n.counter.fetch_sub(1, std::memory_order_acq_rel);
  if (before > 1) return;
  if (before <= 0) [[unlikely]] below_zero(n);
  n.value = value;  // read by the runner, after the push that publishes the node
  make_runnable(at, n);
}

}  // namespace ito::flow::detail
