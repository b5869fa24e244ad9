// SPDX-License-Identifier: Apache-2.0
// The distributed scheduler's wire: its message types, how one is built and
// queued, and the poller that sends and receives them. Who handles messages:
// the progress thread (progress.hpp), on its own 8 MiB stack, through the
// handler each part registers for its types (wire::on); MPI calls and DSM
// fences need more than a ULT's stack. Workers queue what they send and nudge
// the progress thread. MPI and the fences are never called with a lock of a
// table held.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ito::sched {
struct ult;
}

namespace ito::dist::detail {

enum class msg : std::uint32_t {
  steal_request,   // thief → victim
  steal_none,      // victim → thief: nothing to give
  ult,             // victim → thief: a ULT's stack, descriptor included
  join_request,    // joiner's process → home
  detach_request,  // detacher's process → home
  ended,           // where a ULT ended → its home: its frame and descriptor
  done,            // home → joiner's process: the same, or an error
  free_stack,      // joiner's process → home: the stack may be reused
  come_home,       // home → joiner's process: its result stays here, join here
  joiner,          // joiner's process → home: the joiner's stack, as for `ult`
  placed,          // creator's process → the rank near its data: a new ULT, as for `ult`
  stop,            // rank 0 → all: the main function returned
  count
};

struct header {
  msg type;
  std::int32_t err;           // done: 0, or EINVAL / ESRCH
  std::uint64_t descriptor;   // the ULT
  std::uint64_t start;        // where the bytes that follow go
  std::uint64_t len;
  std::uint64_t stack_lo;     // the ULT's stack, [lo, hi)
  std::uint64_t stack_hi;
  std::uint64_t error_len;    // ended / done: the exception it threw, after the bytes
};

struct outgoing {
  int to = 0;
  bool carries_results = false;  // ult / ended / done: the sender's writes must be released first
  std::vector<char> bytes;
  MPI_Request request = MPI_REQUEST_NULL;
};

inline std::uint64_t addr(const void* p) { return reinterpret_cast<std::uint64_t>(p); }
template <class T>
T* ptr(std::uint64_t a) {
  return reinterpret_cast<T*>(a);
}

namespace wire {

// Collective (duplicates MPI_COMM_WORLD); before any other call here.
void open(int rank, int size);
// After the last poll.
void close() noexcept;
int rank() noexcept;
int size() noexcept;
MPI_Comm comm() noexcept;

// The progress thread calls handler(h, payload, from) for each message of
// type t. Each part registers its own, before the runtime starts.
using handler = void (*)(const header& h, const char* payload, int from);
void on(msg t, handler h) noexcept;

// A message to `to` about ULT u (or none), with len bytes from start, an
// error code and an exception's text. Copies the bytes.
std::unique_ptr<outgoing> make(int to, msg type, const sched::ult* u, const char* start = nullptr,
                               std::size_t len = 0, int err = 0, const std::string& error = {});
// Sends it at the progress thread's next round (nudged when it is the first).
void queue(std::unique_ptr<outgoing> o);

// Held while messages are handled: a holder sees no arrival or departure.
std::mutex& poll_lock() noexcept;
// Under poll_lock: handles up to a batch of arrived messages.
void receive_all();
// Under poll_lock: sends what is queued (after an sd_fence when a message
// carries results), then forgets the sends that completed.
void send_all();
// Under poll_lock: counts for quiescence (every message sent, every one
// received, since open).
std::uint64_t sent_total() noexcept;
std::uint64_t received_total() noexcept;
// Under poll_lock: nothing queued or on its way out.
bool idle() noexcept;

}  // namespace wire
}  // namespace ito::dist::detail
