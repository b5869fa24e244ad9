// SPDX-License-Identifier: Apache-2.0
// Runnable nodes: where they go, which one runs next, and the in-flight
// credits that let graph::wait() know when a graph is idle.
//
// Each worker has two Chase–Lev deques of nodes (normal and high priority);
// threads that are not workers push onto two lock-free injector stacks. At
// each node boundary a worker takes a high-priority node first, if
// `high_pending` says one is runnable anywhere (quasi-preemption), then the
// node the last activation released first (next_local), then its own normal
// deque (LIFO, like ULTs), then the injector, then steals.
#include <cerrno>

#include "common/random.hpp"
#include "flow/hot_path.hpp"
#include "sched/idle.hpp"

namespace ito::flow::detail {
namespace {

using deque_ptr = sched::chase_lev_deque<node_core*> flow_worker::*;

node_core* steal(flow_worker* fw, deque_ptr which) noexcept {
  auto& all = fw->frt->workers;
  const auto n = static_cast<unsigned>(all.size());
  if (n < 2) return nullptr;
  for (unsigned attempt = 0; attempt < n; ++attempt) {
    auto v = static_cast<unsigned>(common::next_random(fw->rng) % (n - 1));
    if (v >= fw->index) ++v;
    auto& victim = (*all[v]).*which;
    node_core* got = nullptr;
    // Looking first keeps an idle worker's polling to plain loads: steal()
    // pays a full fence even on an empty deque.
    if (!victim.looks_empty() &&
        victim.steal(got) == sched::chase_lev_deque<node_core*>::steal_result::success)
      return got;
  }
  return nullptr;
}

// Moves what other threads injected onto our deque and returns the oldest.
// (No order is promised among normal nodes; exclusive nodes keep their own.)
node_core* take_injected(flow_worker* fw, injector& from, sched::chase_lev_deque<node_core*>& to) {
  node_core* first = from.take_all();
  if (!first) return nullptr;
  bool pushed = false;
  for (node_core* rest = first->link; rest;) {
    node_core* next = rest->link;  // once pushed, a thief may run it and reuse the link
    pushed |= to.push(rest);
    rest = next;
  }
  if (pushed && !fw->worker->alone) sched::notify_work(fw->frt->rt);  // others may help
  return first;
}

// The owner's pop; a one-worker runtime has no thief, so no fence (as ULTs).
// An empty-looking deque is left alone: pop() would pay its fence for
// nothing, and only the owner adds to it.
bool pop_own(flow_worker* fw, sched::chase_lev_deque<node_core*>& d, node_core*& n) noexcept {
  if (d.looks_empty()) return false;
  return fw->worker->alone ? d.pop_unshared(n) : d.pop(n);
}

node_core* take_high(flow_worker* fw) noexcept {
  node_core* n = nullptr;
  if (pop_own(fw, fw->high, n)) return n;
  if (!fw->frt->high_in.looks_empty() && (n = take_injected(fw, fw->frt->high_in, fw->high)))
    return n;
  return steal(fw, &flow_worker::high);
}

}  // namespace

void make_runnable_slow(const place& at, node_core& n) {
  take_credit(at, n.owner);
  const bool high = n.flags.load(std::memory_order_relaxed) & flag_high;
  flow_runtime* frt = at.frt;
  if (high) frt->high_pending.fetch_add(1, std::memory_order_seq_cst);
  if (!at.fw) {
    (high ? frt->high_in : frt->normal_in).push(&n);
    sched::notify_work(frt->rt);
  } else if (high) {
    at.fw->high.push(&n);
    if (!at.fw->worker->alone) sched::notify_work(frt->rt);
  } else if (at.fw->normal.push(&n) && !at.fw->worker->alone) {
    // Only a push onto an empty deque pays for the fence (as ULTs do; idle.hpp),
    // and never on a one-worker runtime: the only worker is the one pushing.
    sched::notify_work(frt->rt);
  }
}

node_core* next_node(flow_worker* fw) {
  flow_runtime* frt = fw->frt;
  node_core* n = nullptr;
  if (frt->high_pending.load(std::memory_order_relaxed) > 0 && (n = take_high(fw))) {
    frt->high_pending.fetch_sub(1, std::memory_order_relaxed);
    return n;
  }
  if ((n = fw->next_local)) {
    fw->next_local = nullptr;
    return n;
  }
  if (pop_own(fw, fw->normal, n)) return n;
  if (!frt->normal_in.looks_empty() && (n = take_injected(fw, frt->normal_in, fw->normal))) return n;
  return steal(fw, &flow_worker::normal);
}

bool any_runnable(flow_runtime* frt) noexcept {
  if (frt->high_pending.load(std::memory_order_relaxed) > 0) return true;
  if (!frt->normal_in.looks_empty() || !frt->high_in.looks_empty()) return true;
  for (auto& fw : frt->workers)
    if (!fw->normal.looks_empty() || !fw->high.looks_empty()) return true;
  return false;
}

// --- Credits -----------------------------------------------------------------
//
// A graph counts its activations in flight (graph_state::in_flight). Counting
// each one on one shared atomic would bounce its cache line between workers
// on every node, so a worker running nodes draws credits in batches: it adds
// 64 to the shared count once, then uses them one per node it makes runnable;
// a finished activation hands its credit back to the worker that ran it. The
// shared count is therefore never below the true count and reaches zero only
// when every worker has returned its credits (at the end of run_some, or when
// it moves on to another graph's nodes) and nothing is in flight.

void switch_credit_graph(flow_worker* fw, graph_state* g) noexcept {
  if (fw->credit_graph == g) return;
  flush_credits(fw);
  fw->credit_graph = g;
}

void return_credit(flow_worker* fw) noexcept {
  if (++fw->credits > 2 * credit_batch) {
    // Keeps at least credit_batch back, so this cannot bring the count to zero.
    fw->credit_graph->in_flight.sub(credit_batch);
    fw->credits -= credit_batch;
  }
}

void hand_back_next_local(flow_worker* fw) noexcept {
  if (node_core* n = fw->next_local) {
    fw->next_local = nullptr;
    if (fw->normal.push(n) && !fw->worker->alone) sched::notify_work(fw->frt->rt);
  }
}

void flush_credits(flow_worker* fw) noexcept {
  graph_state* g = fw->credit_graph;
  std::int64_t n = fw->credits;
  fw->credit_graph = nullptr;
  fw->credits = 0;
  // May bring the count to zero and wake graph::wait(): the last touch of g.
  if (n) g->in_flight.sub(static_cast<std::uint64_t>(n));
}

}  // namespace ito::flow::detail
