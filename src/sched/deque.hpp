// SPDX-License-Identifier: Apache-2.0
// Chase–Lev work-stealing deque (Lê, Pop, Cohen, Zappa Nardelli, PPoPP 2013).
// The owner pushes and pops at the bottom; any thread steals from the top.
// Lock-free; grows by doubling, keeping retired buffers until destruction
// because a thief may still read one.
//
// The owner's pop must not read `top` before its store to `bottom` is
// visible to thieves (x86 does reorder a store before a later load): a
// store-load fence in every pop, ~6 ns here. With use_asymmetric_fence()
// the pop has only a compiler barrier and each steal that finds something
// to take pays instead, with os::heavy_fence() between its reads of `top`
// and `bottom`: every running thread passes a full barrier there, so the
// owner's store is visible to the thief's read of `bottom` or the owner's
// read of `top` comes after the thief's (the asymmetric Dekker argument).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "os/membarrier.hpp"

namespace ito::sched {

template <class T>
class chase_lev_deque {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(void*));

  // The slots follow the mask in the same allocation: reaching a slot takes
  // one load less than through a pointer to a separate array (every push,
  // pop and steal reads buffer_, then the slot).
  struct buffer {
    static buffer* make(std::int64_t capacity) {
      void* memory = ::operator new(sizeof(buffer) + static_cast<std::size_t>(capacity) * sizeof(std::atomic<T>),
                                    std::align_val_t{alignof(buffer)});
      auto* b = ::new (memory) buffer(capacity - 1);
      for (std::int64_t i = 0; i < capacity; ++i) ::new (b->slots() + i) std::atomic<T>();
      return b;
    }
    struct deleter {
      void operator()(buffer* b) const noexcept {
        // The slots are trivially destructible atomics of trivially copyable T.
        b->~buffer();
        ::operator delete(b, std::align_val_t{alignof(buffer)});
      }
    };
    T load(std::int64_t i) const noexcept { return slots()[i & mask].load(std::memory_order_relaxed); }
    void store(std::int64_t i, T v) noexcept { slots()[i & mask].store(v, std::memory_order_relaxed); }
    std::atomic<T>* slots() noexcept { return reinterpret_cast<std::atomic<T>*>(this + 1); }
    const std::atomic<T>* slots() const noexcept { return reinterpret_cast<const std::atomic<T>*>(this + 1); }

    const std::int64_t mask;

   private:
    explicit buffer(std::int64_t m) noexcept : mask(m) {}
  };
  static_assert(sizeof(buffer) % alignof(std::atomic<T>) == 0);
  using owned_buffer = std::unique_ptr<buffer, typename buffer::deleter>;

 public:
  explicit chase_lev_deque(std::int64_t initial_capacity = 1024) {
    retired_.push_back(owned_buffer(buffer::make(initial_capacity)));
    buffer_.store(retired_.back().get(), std::memory_order_relaxed);
    own_slots_ = retired_.back()->slots();
    own_mask_ = retired_.back()->mask;
  }
  chase_lev_deque(const chase_lev_deque&) = delete;
  chase_lev_deque& operator=(const chase_lev_deque&) = delete;

  // Before any other thread uses the deque, and only where
  // os::asymmetric_fence_ready(); pointless for a deque whose owner never pops.
  void use_asymmetric_fence() noexcept { asymmetric_ = true; }

  // Owner only. Returns true if the deque looked empty before the push.
  bool push(T item) {
    std::int64_t b = bottom_.load(std::memory_order_relaxed);
    std::int64_t t = top_.load(std::memory_order_acquire);
    if (b - t > own_mask_) [[unlikely]] grow(t, b);
    own_store(b, item);
    // A release store (free on x86) rather than a fence: also what TSan models.
    bottom_.store(b + 1, std::memory_order_release);
    return b == t;
  }

  // Owner only: push() where no growing is needed (nothing that allocates or
  // calls out); false, with nothing pushed, when the buffer is full.
  bool push_if_room(T item) noexcept {
    std::int64_t b = bottom_.load(std::memory_order_relaxed);
    std::int64_t t = top_.load(std::memory_order_acquire);
    if (b - t > own_mask_) [[unlikely]] return false;
    own_store(b, item);
    bottom_.store(b + 1, std::memory_order_release);
    return true;
  }

  // Owner only: push() onto a deque that already holds items and has room
  // (no fence is owed to idle workers then: idle.hpp); false, with nothing
  // pushed, otherwise.
  bool push_behind_others(T item) noexcept {
    std::int64_t b = bottom_.load(std::memory_order_relaxed);
    std::int64_t t = top_.load(std::memory_order_acquire);
    if (b == t || b - t > own_mask_) [[unlikely]] return false;
    own_store(b, item);
    bottom_.store(b + 1, std::memory_order_release);
    return true;
  }

  // Owner only. Returns false when empty.
  bool pop(T& out) noexcept {
    std::int64_t b = bottom_.load(std::memory_order_relaxed) - 1;
    bottom_.store(b, std::memory_order_relaxed);
    if (asymmetric_) std::atomic_signal_fence(std::memory_order_seq_cst);  // steal() fences for us
    else std::atomic_thread_fence(std::memory_order_seq_cst);
    std::int64_t t = top_.load(std::memory_order_relaxed);
    if (t > b) {
      bottom_.store(b + 1, std::memory_order_relaxed);
      return false;
    }
    out = own_load(b);
    if (t == b) {  // last item: race the thieves for it
      bool won = top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                              std::memory_order_relaxed);
      bottom_.store(b + 1, std::memory_order_relaxed);
      return won;
    }
    return true;
  }

  // Owner only: pop() if the bottom item is `expected`; false, with nothing
  // changed, when another item is there. A bottom slot holding `expected`
  // below `top` is a stale copy: pop() then finds the deque empty.
  bool pop_if_bottom(T expected) noexcept {
    std::int64_t b = bottom_.load(std::memory_order_relaxed) - 1;
    if (own_load(b) != expected) return false;
    T out;
    return pop(out);
  }
  // The same while no thread can steal.
  bool pop_if_bottom_unshared(T expected) noexcept {
    std::int64_t b = bottom_.load(std::memory_order_relaxed);
    if (b == top_.load(std::memory_order_relaxed)) return false;
    if (own_load(b - 1) != expected) return false;
    bottom_.store(b - 1, std::memory_order_relaxed);
    return true;
  }

  // Owner only, and only while no thread can steal (a one-worker runtime):
  // pop() without its StoreLoad fence (~6 ns here).
  bool pop_unshared(T& out) noexcept {
    std::int64_t b = bottom_.load(std::memory_order_relaxed);
    std::int64_t t = top_.load(std::memory_order_relaxed);
    if (b == t) return false;
    out = own_load(b - 1);
    bottom_.store(b - 1, std::memory_order_relaxed);
    return true;
  }

  // Owner only, while no thread can steal: the bottom item for `item`, a pop
  // and a push in one store. False when empty.
  bool swap_bottom_unshared(T item, T& out) noexcept {
    std::int64_t b = bottom_.load(std::memory_order_relaxed);
    if (b == top_.load(std::memory_order_relaxed)) return false;
    out = own_load(b - 1);
    own_store(b - 1, item);
    return true;
  }

  enum class steal_result { success, empty, lost_race };

  // Any thread.
  steal_result steal(T& out) noexcept {
    std::int64_t t = top_.load(std::memory_order_acquire);
    if (asymmetric_) {
      // Nothing there: no reason to interrupt every other thread.
      if (t >= bottom_.load(std::memory_order_relaxed)) return steal_result::empty;
      os::heavy_fence();
    } else {
      std::atomic_thread_fence(std::memory_order_seq_cst);
    }
    std::int64_t b = bottom_.load(std::memory_order_acquire);
    if (t >= b) return steal_result::empty;
    buffer* a = buffer_.load(std::memory_order_acquire);
    T item = a->load(t);
    if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                      std::memory_order_relaxed))
      return steal_result::lost_race;
    out = item;
    return steal_result::success;
  }

  // A hint: may be stale the moment it returns.
  bool looks_empty() const noexcept {
    return top_.load(std::memory_order_relaxed) >= bottom_.load(std::memory_order_relaxed);
  }
  std::int64_t size_hint() const noexcept {
    auto n = bottom_.load(std::memory_order_relaxed) - top_.load(std::memory_order_relaxed);
    return n < 0 ? 0 : n;
  }

 private:
  [[gnu::noinline, gnu::cold]] void grow(std::int64_t t, std::int64_t b) {
    owned_buffer bigger(buffer::make((own_mask_ + 1) * 2));
    for (std::int64_t i = t; i < b; ++i) bigger->store(i, own_load(i));
    buffer* raw = bigger.get();
    retired_.push_back(std::move(bigger));
    buffer_.store(raw, std::memory_order_release);
    own_slots_ = raw->slots();
    own_mask_ = raw->mask;
  }
  T own_load(std::int64_t i) const noexcept { return own_slots_[i & own_mask_].load(std::memory_order_relaxed); }
  void own_store(std::int64_t i, T v) noexcept { own_slots_[i & own_mask_].store(v, std::memory_order_relaxed); }

  alignas(64) std::atomic<std::int64_t> top_{0};
  alignas(64) std::atomic<std::int64_t> bottom_{0};
  // The owner's copy of buffer_'s slots and mask, on bottom_'s line: only
  // the owner replaces the buffer, and its pushes and pops then reach a slot
  // without first loading buffer_ from another line.
  std::atomic<T>* own_slots_ = nullptr;
  std::int64_t own_mask_ = 0;
  alignas(64) std::atomic<buffer*> buffer_{nullptr};
  bool asymmetric_ = false;  // beside buffer_: both sides read it with buffer_
  std::vector<owned_buffer> retired_;  // owner only
};

}  // namespace ito::sched
