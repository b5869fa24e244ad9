// SPDX-License-Identifier: Apache-2.0
#include "distributed/scheduler/remote_steal.hpp"

#include <algorithm>
#include <atomic>

#include "common/random.hpp"
#include "distributed/progress.hpp"
#include "distributed/scheduler/counts.hpp"
#include "distributed/scheduler/local_runtime.hpp"
#include "distributed/scheduler/ult_moves.hpp"
#include "distributed/scheduler/wire.hpp"
#include "sched/runtime_control.hpp"
#include "sched/scheduler.hpp"

namespace ito::dist::detail::remote_steal {
namespace {

constexpr std::int64_t min_poll_gap_ns = 10'000;   // between an idle worker's nudges
constexpr std::int64_t first_backoff_ns = 20'000;  // after a steal found nothing
constexpr std::int64_t max_backoff_ns = 1'000'000;

// The progress thread's alone, but for the atomics the workers read.
struct thief {
  bool outstanding = false;
  std::int64_t next_ns = 0, backoff_ns = 0;
  std::uint64_t rng = 0;
  std::vector<int> mates;  // the other ranks of this node, when there are other nodes too
  bool asked_mate = false;      // the outstanding request went to a node mate
  bool mates_refused = false;   // the last one did, and had nothing: ask any rank next
  std::atomic<bool> stopped{false};
  std::atomic<std::int64_t> last_nudge_ns{0};
  std::atomic<std::int64_t> next_ns_shared{0};  // next_ns, for the workers' nudges
};
thief g;

void answered(bool got_one) {
  const std::int64_t now = sched::monotonic_ns();
  g.outstanding = false;
  g.mates_refused = !got_one && g.asked_mate;
  if (g.mates_refused) {  // farther at once: no back-off
    g.next_ns = now;
  } else if (got_one) {
    g.backoff_ns = 0;
    g.next_ns = now;
  } else {
    g.backoff_ns = g.backoff_ns ? std::min(g.backoff_ns * 2, max_backoff_ns) : first_backoff_ns;
    g.next_ns = now + g.backoff_ns;
  }
  g.next_ns_shared.store(g.next_ns, std::memory_order_relaxed);
}

// This rank is the victim.
void on_request(const header&, const char*, int thief_rank) {
  sched::runtime_state* rt = local_runtime();
  sched::ult* u = rt ? sched::steal_for_outside(rt, g.rng) : nullptr;
  // A ULT created near data held here would fetch it all on the thief (the
  // stencil: each stolen block of rows moved ~50x its compute time).
  if (u && (u->near_its_data || !ult_moves::may_leave(u))) {
    sched::make_ready(u);  // runs here after all
    u = nullptr;
  }
  if (!u) return wire::queue(wire::make(thief_rank, msg::steal_none, nullptr));
  ult_moves::give(u, thief_rank);
}

void on_none(const header&, const char*, int) { answered(false); }

void on_ult(const header& h, const char* payload, int) {
  ult_moves::arrived(h, payload);
  answered(true);
}

}  // namespace

void start(int rank, const std::vector<int>& node_of_rank) {
  g.outstanding = false;
  g.asked_mate = g.mates_refused = false;
  g.mates.clear();
  const auto mine = node_of_rank[static_cast<std::size_t>(rank)];
  const bool other_nodes =
      std::any_of(node_of_rank.begin(), node_of_rank.end(), [&](int n) { return n != mine; });
  for (std::size_t r = 0; other_nodes && r < node_of_rank.size(); ++r)
    if (node_of_rank[r] == mine && static_cast<int>(r) != rank) g.mates.push_back(static_cast<int>(r));
  g.next_ns = g.backoff_ns = 0;
  g.rng = 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(rank + 1);
  g.stopped.store(false, std::memory_order_relaxed);
  g.last_nudge_ns.store(0, std::memory_order_relaxed);
  g.next_ns_shared.store(0, std::memory_order_relaxed);
  wire::on(msg::steal_request, &on_request);
  wire::on(msg::steal_none, &on_none);
  wire::on(msg::ult, &on_ult);
}

void maybe_request(std::int64_t now) {
  const int size = wire::size();
  if (size < 2 || g.stopped.load(std::memory_order_relaxed) || g.outstanding || now < g.next_ns)
    return;
  sched::runtime_state* rt = local_runtime();
  if (!rt || !rt->injector.looks_empty()) return;  // work is on its way to the workers
  // Runnable work here: our own workers take it first. (Counting idle
  // workers instead missed a rank whose workers wake every few microseconds.)
  if (sched::ults_waiting(rt)) return;
  int victim = 0;
  g.asked_mate = !g.mates.empty() && !g.mates_refused;
  if (g.asked_mate) {
    victim = g.mates[common::next_random(g.rng) % g.mates.size()];
    bump(counts().steal_requests_in_node);
  } else {
    victim = static_cast<int>(common::next_random(g.rng) % static_cast<unsigned>(size - 1));
    if (victim >= wire::rank()) ++victim;
  }
  g.outstanding = true;
  bump(counts().steal_requests);
  wire::queue(wire::make(victim, msg::steal_request, nullptr));
}

bool none_outstanding() noexcept { return !g.outstanding; }

// Messages themselves are only ever handled on the progress thread: MPI calls
// and DSM fences need more stack than a ULT's (a fence's MPI_Put overflowed a
// 64 KiB one) and must not run in a switch hook.
void wants_work(sched::worker*) noexcept {
  const std::int64_t now = sched::monotonic_ns();
  if (now - g.last_nudge_ns.load(std::memory_order_relaxed) < min_poll_gap_ns ||
      now < g.next_ns_shared.load(std::memory_order_relaxed))
    return;
  g.last_nudge_ns.store(now, std::memory_order_relaxed);
  nudge_progress();
}

void stop_requesting() noexcept { g.stopped.store(true, std::memory_order_release); }

}  // namespace ito::dist::detail::remote_steal
