// SPDX-License-Identifier: Apache-2.0
// ITO_TRACE=file.json: a Chrome/Perfetto trace of what every worker and pool
// thread did (ULT run slices, steals, parks, pool jobs such as delegated
// calls, flow node runs; in the distributed mode, the messages between
// ranks), written when the runtime ends.
//
// Recording is per OS thread, into a buffer only that thread writes, stamped
// with the TSC: no lock, no system call. When tracing is off, each record
// point costs one load of a flag and a branch that is not taken.
#pragma once

#include <atomic>
#include <cstdint>

namespace ito::trace {

enum class kind : std::uint32_t {
  run,        // this thread now runs ULT `arg` (its id)
  scheduler,  // this thread is back in its scheduler loop (no ULT)
  park,       // the worker goes to sleep
  unpark,     // ... and wakes
  steal,      // took a ULT from worker `arg`
  job_begin,  // a pool thread starts a job (a delegated call, an os_pool task)
  job_end,
  node_begin,  // a flow node's body starts
  node_end,
  message_sent,      // the distributed mode's wire sent a message (message_arg)
  message_received,  // ... and one arrived
  poll_begin,        // the distributed mode's progress thread starts a round
  poll_end,
};

// A message between processes, packed into an event's argument: sender and
// receiver ranks (16 bits each), its type (8) and its number among those the
// sender sent the receiver (24; MPI keeps their order, so the receiver counts
// the same): the two ends become one flow arrow between the ranks' tracks.
inline std::uint64_t message_arg(unsigned from, unsigned to, unsigned type,
                                 std::uint64_t number) noexcept {
  return std::uint64_t{from & 0xffffu} << 48 | std::uint64_t{to & 0xffffu} << 32 |
         std::uint64_t{type & 0xffu} << 24 | (number & 0xffffffu);
}
// The names of the message types (the wire's, set once), for the slices.
void set_message_names(const char* const* names, unsigned count) noexcept;

// Set before a traced runtime's threads start, cleared after they end (pool
// threads outlive runtimes, hence atomic; a relaxed load is a plain load).
extern std::atomic<bool> g_on;

void record_slow(kind what, std::uint64_t arg) noexcept;

struct thread_buffer;
// This OS thread's buffer, made at its first record. Initial-exec TLS: its
// offset from the thread pointer is the same in every thread and in every
// ULT's TLS block (ITO_ULT_TLS), where sched/ult_tls.cpp's arrive() puts the
// worker's buffer, so that a ULT with a block records into its worker's
// buffer, not a new one of its own (24 MiB of address space, under a lock).
extern constinit thread_local thread_buffer* t_buffer __attribute__((tls_model("initial-exec")));

inline void record(kind what, std::uint64_t arg = 0) noexcept {
  if (g_on.load(std::memory_order_relaxed)) [[unlikely]] record_slow(what, arg);
}

// At a runtime's start and end (from start_runtime / stop_runtime).
void start() noexcept;
void finish() noexcept;

}  // namespace ito::trace
