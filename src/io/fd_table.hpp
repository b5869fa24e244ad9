// SPDX-License-Identifier: Apache-2.0
// What ito remembers per file descriptor: its kind, its epoll registration,
// who owns its O_NONBLOCK flag, and the ULTs parked on it. Indexed by the
// descriptor number in a two-level table whose chunks are never freed, so a
// pointer to an entry stays valid (the poller keeps them in epoll_event.data).
#pragma once

#include <atomic>
#include <cstdint>

#include "ito/detail/spinlock.hpp"

namespace ito::detail {

enum class fd_kind : std::uint8_t {
  unknown,  // not looked at yet
  socket,   // epoll-able: waited for by the poller
  other,    // a file, pipe, terminal...: delegated
  // A regular file on a local file system (io/local_files.hpp): reads tried
  // on the worker from the page cache first; closed there when read-only.
  local_file,
};

// Readiness directions, as the poller reports them.
inline constexpr std::uint32_t ready_in = 1;
inline constexpr std::uint32_t ready_out = 2;

struct fd_waiter;

struct alignas(64) fd_state {  // a line each: the poller and workers touch neighbours
  spinlock lock;
  std::uint32_t ready = 0;       // edges seen while nobody waited for them (guarded by lock)
  fd_waiter* waiters = nullptr;  // ULTs parked on this descriptor (guarded by lock)
  std::atomic<fd_kind> kind{fd_kind::unknown};
  std::atomic<bool> registered{false};    // in the poller's epoll set (edge-triggered)
  std::atomic<bool> ito_nonblock{false};  // ito set O_NONBLOCK itself (listening sockets)
  // The program's own O_NONBLOCK: -1 unknown (ask fcntl when about to park), 0 or 1.
  std::atomic<std::int8_t> user_nonblock{-1};
  // A stream socket (a short read then means its queue was empty): -1 unknown, 0, 1.
  std::atomic<std::int8_t> stream{-1};
  // Read-readiness edges delivered so far (written under lock, by the poller).
  std::atomic<std::uint32_t> in_edges{0};
  // (in_edges << 1 | 1) as sampled before a read that emptied the queue, or 0.
  // While in_edges still equals that sample no data has come since, so the
  // next read would fail with EAGAIN: it parks at once instead. Not after a
  // hang-up or error: the next read then returns 0 or the error at once, and
  // its edge may have come before the short read (set before in_edges moves).
  std::atomic<std::uint64_t> drained_mark{0};
  std::atomic<bool> hung_up{false};
  // A local_file opened read-only: nothing to flush at its close.
  std::atomic<bool> read_only_file{false};
  // The registration's generation, bumped (under lock) by io::close. A call
  // samples it when it begins and parks only while it is unchanged, so a call
  // on a closed descriptor fails with EBADF instead of retrying on its number,
  // which a new descriptor may have taken meanwhile. Never reset.
  std::atomic<std::uint32_t> generation{0};

  // The generation a call beginning now belongs to.
  std::uint32_t current_generation() const noexcept {
    return generation.load(std::memory_order_acquire);
  }

  // A new descriptor took this number (or the old one is gone).
  void reset(fd_kind k) noexcept {
    kind.store(k, std::memory_order_relaxed);
    registered.store(false, std::memory_order_relaxed);
    ito_nonblock.store(false, std::memory_order_relaxed);
    user_nonblock.store(-1, std::memory_order_relaxed);
    stream.store(-1, std::memory_order_relaxed);
    drained_mark.store(0, std::memory_order_relaxed);
    hung_up.store(false, std::memory_order_relaxed);
    read_only_file.store(false, std::memory_order_relaxed);
  }
};

// The entry for fd, or null when fd is negative or beyond the table
// (2^22 descriptors); such descriptors are always delegated.
fd_state* fd_lookup(int fd) noexcept;
// The entry for fd if its part of the table exists, else null: nothing was
// ever recorded about fd, so there is nothing to reset (open, close,
// connect). Allocates nothing: a process whose threads never wait on a
// descriptor never builds the table.
fd_state* fd_find(int fd) noexcept;

}  // namespace ito::detail
