// SPDX-License-Identifier: Apache-2.0
// An exclusive node's input: one FIFO per port, and an ownership count.
//
// Static dataflow's rule: a port holds one value per activation; the node
// runs when every port holds one. Values that arrive meanwhile (while it runs,
// or while their port is already filled) wait in the port's FIFO, in order.
// `pending` counts values not yet seen by an owner; whoever raises it from 0
// owns the node and schedules it, and only the owner runs the body or pops
// the FIFOs. So the body never runs twice at once, without a lock: that is
// the paper's self-continuation (reset the counter, continue to itself,
// process the queued requests).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace ito::flow::detail {

inline constexpr unsigned max_ports = 32;

// Many producers, one consumer (the node's current owner): Vyukov's bounded
// queue. Never allocates after construction.
class port_ring {
 public:
  port_ring() = default;
  // Before first use: capacity rounded up to a power of two.
  void init(unsigned capacity);
  // Any thread. False when full.
  bool push(std::uint64_t value) noexcept {
    std::uint64_t pos = tail_.load(std::memory_order_relaxed);
    for (;;) {
      cell& c = cells_[pos & mask_];
      std::uint64_t seq = c.seq.load(std::memory_order_acquire);
      auto diff = static_cast<std::int64_t>(seq - pos);
      if (diff == 0) {
        if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          c.value = value;
          c.seq.store(pos + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;
      } else {
        pos = tail_.load(std::memory_order_relaxed);
      }
    }
  }
  // The owner only: a value is published at the head.
  // (Any thread may ask, as a hint: node::counter().)
  bool ready() const noexcept {
    std::uint64_t h = head_.load(std::memory_order_relaxed);
    return cells_[h & mask_].seq.load(std::memory_order_acquire) == h + 1;
  }
  // The owner only, after ready().
  std::uint64_t pop() noexcept {
    std::uint64_t h = head_.load(std::memory_order_relaxed);
    cell& c = cells_[h & mask_];
    std::uint64_t v = c.value;
    c.seq.store(h + mask_ + 1, std::memory_order_release);
    head_.store(h + 1, std::memory_order_relaxed);
    return v;
  }
  unsigned capacity() const noexcept { return static_cast<unsigned>(mask_ + 1); }

 private:
  struct cell {
    std::atomic<std::uint64_t> seq{0};
    std::uint64_t value = 0;
  };
  std::unique_ptr<cell[]> cells_;
  std::uint64_t mask_ = 0;
  // Written by the owner only; ownership passes with acquire/release on `pending`.
  std::atomic<std::uint64_t> head_{0};
  alignas(64) std::atomic<std::uint64_t> tail_{0};
};

struct exclusive_state {
  exclusive_state(unsigned ports, unsigned capacity);
  bool all_ready() const noexcept {
    for (unsigned p = 0; p < ports; ++p)
      if (!rings[p].ready()) return false;
    return true;
  }
  unsigned empty_ports() const noexcept {
    unsigned n = 0;
    for (unsigned p = 0; p < ports; ++p) n += !rings[p].ready();
    return n;
  }

  alignas(64) std::atomic<std::uint64_t> pending{0};
  unsigned ports;
  std::unique_ptr<port_ring[]> rings;
};

}  // namespace ito::flow::detail
