// SPDX-License-Identifier: Apache-2.0
#include "distributed/scheduler/wire.hpp"

#include <cstring>
#include <iterator>

#include "distributed/doorbells.hpp"
#include "distributed/dsm/dsm.hpp"
#include "distributed/mpi_receive.hpp"
#include "distributed/peer_watch.hpp"
#include "distributed/progress.hpp"
#include "distributed/scheduler/counts.hpp"
#include "sched/ult.hpp"
#include "trace/trace.hpp"

#if ITO_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace ito::dist::detail::wire {
namespace {

constexpr int message_tag = 0x170;
// msg's names, in its order, for ITO_TRACE's message slices.
constexpr const char* message_names[] = {"steal_request", "steal_none", "ult",  "join_request",
                                          "detach_request", "ended",    "done", "free_stack",
                                          "come_home",     "joiner",     "placed", "stop"};
static_assert(std::size(message_names) == static_cast<std::size_t>(msg::count));
// Messages handled per round, so that one round never starves the sends.
constexpr int receive_batch = 64;

struct state {
  int rank = 0, size = 1;
  MPI_Comm comm = MPI_COMM_NULL;
  std::mutex poll_lock;  // the one poller
  std::mutex lock;       // the outbox; never held across MPI
  std::vector<std::unique_ptr<outgoing>> outbox;
  // The poller's alone.
  std::vector<std::unique_ptr<outgoing>> in_flight;
  std::vector<char> inbox;
  std::uint64_t sent = 0, received = 0;
  // Per peer, numbering each one's messages for the trace (MPI keeps a
  // pair's messages in order: both ends count alike).
  std::vector<std::uint64_t> sent_to, received_from;
};
state* g = nullptr;
handler g_handlers[static_cast<std::size_t>(msg::count)] = {};

// One end of a message from `from` to `to`, numbered by `count` (the sender's
// count for `to`, or the receiver's for `from`): ITO_TRACE joins the two.
void trace_message(trace::kind end, int from, int to, const char* bytes, std::uint64_t& count) {
  header h;
  std::memcpy(&h, bytes, sizeof h);
  trace::record(end, trace::message_arg(static_cast<unsigned>(from), static_cast<unsigned>(to),
                                        static_cast<unsigned>(h.type), ++count));
}

}  // namespace

void open(int rank, int size) {
  g = new state;
  g->rank = rank;
  g->size = size;
  g->sent_to.assign(static_cast<std::size_t>(size), 0);
  g->received_from.assign(static_cast<std::size_t>(size), 0);
  trace::set_message_names(message_names, static_cast<unsigned>(std::size(message_names)));
  MPI_Comm_dup(MPI_COMM_WORLD, &g->comm);
  name_mpi_failures(g->comm);
}

void close() noexcept {
  MPI_Comm_free(&g->comm);
  delete g;
  g = nullptr;
}

int rank() noexcept { return g->rank; }
int size() noexcept { return g->size; }
MPI_Comm comm() noexcept { return g->comm; }

void on(msg t, handler h) noexcept { g_handlers[static_cast<std::size_t>(t)] = h; }

std::unique_ptr<outgoing> make(int to, msg type, const sched::ult* u, const char* start,
                               std::size_t len, int err, const std::string& error) {
#if ITO_ASAN
  // A suspended or ended ULT's stack holds its frames' redzones, and it leaves
  // this process (or is dead): read it unchecked (each receiver unpoisons too).
  if (len) __asan_unpoison_memory_region(start, len);
#endif
  auto o = std::make_unique<outgoing>();
  o->to = to;
  o->carries_results =
      type == msg::ult || type == msg::joiner || type == msg::placed || type == msg::ended ||
      type == msg::done;
  o->bytes.resize(sizeof(header) + len + error.size());
  header h{type, err, addr(u), addr(start), len, 0, 0, error.size()};
  if (u && (type == msg::ult || type == msg::joiner || type == msg::placed))
    h.stack_lo = addr(u->stack.lo), h.stack_hi = addr(u->stack.hi);
  std::memcpy(o->bytes.data(), &h, sizeof h);
  if (len) std::memcpy(o->bytes.data() + sizeof h, start, len);
  if (!error.empty()) std::memcpy(o->bytes.data() + sizeof h + len, error.data(), error.size());
  return o;
}

void queue(std::unique_ptr<outgoing> o) {
  bool first;
  {
    std::lock_guard hold(g->lock);
    first = g->outbox.empty();
    g->outbox.push_back(std::move(o));
  }
  if (first) nudge_progress();
}

std::mutex& poll_lock() noexcept { return g->poll_lock; }

void receive_all() {
  int from = 0;
  for (int i = 0; i < receive_batch; ++i) {
    if (!receive_if_arrived(g->comm, message_tag, MPI_BYTE, g->inbox, from)) return;
    ++g->received;
    header h;
    std::memcpy(&h, g->inbox.data(), sizeof h);
    trace_message(trace::kind::message_received, from, g->rank, g->inbox.data(),
                  g->received_from[static_cast<std::size_t>(from)]);
    g_handlers[static_cast<std::size_t>(h.type)](h, g->inbox.data() + sizeof h, from);
  }
}

void send_all() {
  std::vector<std::unique_ptr<outgoing>> batch;
  {
    std::lock_guard hold(g->lock);
    batch.swap(g->outbox);
  }
  bool release_first = false;
  for (auto& o : batch) release_first |= o->carries_results;
  if (release_first) {
    bump(counts().releases);
    sd_fence();  // DAG consistency: what went before is at its homes
  }
  for (auto& o : batch) {
    // Stamped before it leaves: stamped after, a sender preempted there showed
    // a message received before it was sent.
    trace_message(trace::kind::message_sent, g->rank, o->to, o->bytes.data(),
                  g->sent_to[static_cast<std::size_t>(o->to)]);
    MPI_Isend(o->bytes.data(), static_cast<int>(o->bytes.size()), MPI_BYTE, o->to, message_tag,
              g->comm, &o->request);
    ++g->sent;
    ring_doorbell(o->to);  // a node mate handles it now, not at its next poll
    g->in_flight.push_back(std::move(o));
  }
  std::erase_if(g->in_flight, [](std::unique_ptr<outgoing>& o) {
    int done = 0;
    MPI_Test(&o->request, &done, MPI_STATUS_IGNORE);
    return done != 0;
  });
}

std::uint64_t sent_total() noexcept { return g->sent; }
std::uint64_t received_total() noexcept { return g->received; }

bool idle() noexcept {
  std::lock_guard hold(g->lock);
  return g->outbox.empty() && g->in_flight.empty();
}

}  // namespace ito::dist::detail::wire
