// SPDX-License-Identifier: Apache-2.0
// Steals between processes (seed 003's distributed work stealing): an idle
// rank asks a random other rank for one ULT; the victim's progress thread
// takes one from its workers' deques (the oldest: the biggest piece of work)
// and sends it with its stack (ult_moves), or says it has none. One request
// is outstanding at a time; a refusal backs off exponentially. Locality
// first: where this rank's node holds other ranks and there are other nodes,
// it asks a random rank of its own node (whose pages it reads and writes in
// place), and only after one of them had nothing a random rank of any node
// (a node mate's refusal costs no back-off).
#pragma once

#include <cstdint>
#include <vector>

namespace ito::sched {
struct worker;
}

namespace ito::dist::detail::remote_steal {

// Registers its handlers; seeds the victim choice with the rank;
// node_of_rank: every rank's node.
void start(int rank, const std::vector<int>& node_of_rank);

// On the progress thread, under the wire's poll lock, each round: asks a
// victim when this rank has no runnable ULT, no request is outstanding and
// the back-off has passed.
void maybe_request(std::int64_t now_ns);

// No request waits for an answer (under the poll lock).
bool none_outstanding() noexcept;

// The processes extension's wants_work: an idle worker wants work from other
// ranks now, not at the progress thread's next round. Never blocks.
void wants_work(sched::worker* w) noexcept;

// Rank 0's main function returned: no more requests.
void stop_requesting() noexcept;

}  // namespace ito::dist::detail::remote_steal
