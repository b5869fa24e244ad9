// SPDX-License-Identifier: Apache-2.0
// Running one activation of a node on a worker's scheduler stack: its body,
// the completion futures, then its static successors.
#include <cerrno>
#include <exception>

#include "flow/hot_path.hpp"
#include "trace/trace.hpp"

namespace ito::flow::detail {
namespace {

void call_body(node_core& n, context& ctx) noexcept {
  trace::record(trace::kind::node_begin);
  try {
    n.body(n.storage, &ctx);
  } catch (...) {
    // Kept for graph::wait(); the node still counts as completed, so its
    // successors run and the graph drains.
    n.owner->record_error(std::current_exception());
  }
  trace::record(trace::kind::node_end);
}

void complete_observers(node_core& n) noexcept {
  node_extra* x = n.extra.load(std::memory_order_acquire);
  if (x && x->done.observed()) x->done.complete();
}

// In order: the first successor this activation releases runs next on this
// worker (next_local, as a spawned child runs first), the others go on the
// deque. With edges listed in memory order, a grid is walked along its rows,
// which the hardware prefetchers follow.
void continue_successors(const place& at, const node_core& n) noexcept {
  const std::uintptr_t* s = n.successors;
  const std::uintptr_t* const end = s + n.successor_count;
  for (; s != end; ++s) {
    auto* target = reinterpret_cast<node_core*>(*s & ~std::uintptr_t{63});
    try {
      continue_core(at, *target, 0, static_cast<unsigned>(*s & 63));
    } catch (...) {
      n.owner->record_error(std::current_exception());
    }
  }
}

void run_plain(const place& at, node_core& n) {
  const std::uint64_t value = n.value;
  // Re-armed before the body: continuations from now on count toward the
  // next activation (the release orders our read of `value` before them).
  n.counter.store(n.reset, std::memory_order_release);
  context ctx = access::make_context(at.fw, n, &value, 1);
  call_body(n, ctx);
  if (is_dynamic(n)) {
    recycle_dynamic_node(at.fw, n);
    return;
  }
  complete_observers(n);
  continue_successors(at, n);
}

// Runs as the node's owner (see exclusive.hpp): at most one activation, then
// either keeps ownership and re-queues itself (more values queued: the
// self-continuation, which runs at the next node boundary) or gives it up.
void run_exclusive(const place& at, node_core& n) {
  exclusive_state& ex = *n.extra.load(std::memory_order_acquire)->exclusive;
  std::uint64_t seen = ex.pending.load(std::memory_order_acquire);
  bool ran = false;
  for (;;) {
    if (!ran && ex.all_ready()) {
      std::uint64_t values[max_ports];
      for (unsigned p = 0; p < ex.ports; ++p) values[p] = ex.rings[p].pop();
      context ctx = access::make_context(at.fw, n, values, ex.ports);
      call_body(n, ctx);
      complete_observers(n);
      ran = true;
      if (ex.all_ready()) {
        make_runnable(at, n);
        break;
      }
    }
    const std::uint64_t old = ex.pending.fetch_sub(seen, std::memory_order_acq_rel);
    if (old == seen) break;  // given up: the next continuation schedules it again
    if (ran) {               // values arrived meanwhile: look at them next time
      make_runnable(at, n);
      break;
    }
    seen = old - seen;
  }
  if (ran) continue_successors(at, n);
}

}  // namespace

void run_node(flow_worker* fw, node_core& n) {
  switch_credit_graph(fw, n.owner);
  const place at{fw, fw->frt};
  if (n.flags.load(std::memory_order_relaxed) & flag_exclusive) run_exclusive(at, n);
  else run_plain(at, n);
  return_credit(fw);  // this activation's credit, now that it touches the graph no more
}

}  // namespace ito::flow::detail
