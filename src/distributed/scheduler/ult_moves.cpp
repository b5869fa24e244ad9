// SPDX-License-Identifier: Apache-2.0
#include "distributed/scheduler/ult_moves.hpp"

#include <cstddef>
#include <utility>
#include <vector>

#include "distributed/scheduler/counts.hpp"
#include "distributed/scheduler/local_runtime.hpp"
#include "distributed/scheduler/remote_join.hpp"
#include "distributed/scheduler/ult_image.hpp"
#include "distributed/scheduler/wire.hpp"
#include "distributed/scheduler/stack_area.hpp"
#include "sched/extension.hpp"
#include "sched/join_word.hpp"
#include "sched/scheduler.hpp"

namespace ito::dist::detail::ult_moves {
namespace {

using sched::ult;

void send_away(ult* u, int to, msg type) {
  const bool foreign = sched::is_foreign(u);
  if (!foreign) remote_join::departing(u);
  // Its children must publish their ends (no quick resume of a parent that moved).
  ++u->resumes;
  char* sp = static_cast<char*>(u->sp);
  const std::size_t len = static_cast<std::size_t>(u->stack.hi - sp);
  auto message = wire::make(to, type, u, sp, len);  // the bytes are copied: the stack may go
  if (foreign) drop_range(u->stack.lo, u->stack.hi);
  wire::queue(std::move(message));
  local_runtime()->moved_out.fetch_add(1, std::memory_order_acq_rel);
  bump(type == msg::placed ? counts().ults_placed : counts().ults_sent);
  bump(counts().stack_bytes_moved, len);
}

// A ULT (stolen by this rank, or placed here by its creator) or a joiner
// (sent to its child here) arrives.
void on_arrival(const header& h, const char* payload, int) {
  ult* u = ptr<ult>(h.descriptor);
  if (sched::is_foreign(u)) {
    write_foreign_copy(u, h, payload, ptr<void>(h.stack_lo), ptr<void>(h.stack_hi));
    sched::join_word::host_foreign(u);
  } else {
    remote_join::returned(u, h, payload);  // home again: its join goes back to the ordinary protocol
  }
  ++u->resumes;
  local_runtime()->moved_out.fetch_sub(1, std::memory_order_acq_rel);
  bump(counts().ults_received);
  acquire_for_ult();  // DAG consistency: it sees what its victim released before the steal
  sched::make_ready(u);
}

// Placed ULTs that arrived before this rank's runtime started: the creator's
// run may begin first (the progress thread receives once the run's wire is
// open, before the runtime exists). The progress thread's alone.
struct early_arrival {
  header h;
  std::vector<char> stack;
};
std::vector<early_arrival> g_early;

void on_placed(const header& h, const char* payload, int from) {
  if (local_runtime()) return on_arrival(h, payload, from);
  g_early.push_back({h, std::vector<char>(payload, payload + h.len)});
}

// At a joiner's process: the child's result stays on its home (not trivially
// copyable), so the joiner goes there and joins it as a local ULT would.
void on_come_home(const header& h, const char*, int from) {
  ult* joiner = remote_join::take_waiting_joiner(ptr<ult>(h.descriptor));
  if (!may_leave(joiner, /*in_its_join=*/true))
    fail_for(joiner,
             "it joins a ULT of another process whose result is not trivially copyable, and "
             "cannot go there to take it (it is the main ULT, holds a lock, a handle, ULT-local "
             "values or a caught exception): return a trivially copyable value instead "
             "(docs/DISTRIBUTED.md)");
  send_away(joiner, from, msg::joiner);
}

}  // namespace

void start() {
  g_early.clear();
  wire::on(msg::joiner, &on_arrival);
  wire::on(msg::placed, &on_placed);
  wire::on(msg::come_home, &on_come_home);
  // msg::ult arrives through remote_steal, which also ends the steal it answers.
}

bool may_leave(const ult* u, bool in_its_join) {
  const sched::extension* p = sched::processes_extension();
  const auto a = addr(u);
  return !u->bound && !u->handle && !u->locals && u->eh.empty() &&
         u->must_stay <= (in_its_join ? 1u : 0u) && !u->frame_result_local &&
         (u->stack_from == sched::stack_origin::pool ||
          u->stack_from == sched::stack_origin::foreign) &&
         a >= p->foreign.area_lo && a < p->foreign.area_hi;
}

void give(ult* u, int to) { send_away(u, to, msg::ult); }

void place(ult* u, int to) { send_away(u, to, msg::placed); }

void arrived(const header& h, const char* payload) { on_arrival(h, payload, -1); }

bool early_arrivals_waiting() noexcept { return !g_early.empty(); }

void admit_early_arrivals() {
  if (g_early.empty() || !local_runtime()) return;
  for (const early_arrival& e : g_early) on_arrival(e.h, e.stack.data(), -1);
  g_early.clear();
}

}  // namespace ito::dist::detail::ult_moves
