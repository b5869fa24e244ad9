// SPDX-License-Identifier: Apache-2.0
// The `fixed` stack policy: equal-sized stacks, each above a guard region,
// carved from large mappings and recycled through a per-worker cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace ito::stack {

struct stack_block {
  char* lo = nullptr;  // lowest usable byte; the guard (if any) lies just below
  char* hi = nullptr;  // one past the highest usable byte
  bool guarded = false;
  std::size_t size() const noexcept { return static_cast<std::size_t>(hi - lo); }
  explicit operator bool() const noexcept { return lo != nullptr; }
};

// Thread-safe; only reached when a worker's cache is empty or full.
//
// Free stacks are kept warm (their pages resident, LIFO) up to warm_limit();
// beyond it the oldest give their pages back to the kernel, so that the
// memory of a burst of ULTs is returned once they end, as NPTL's cache of
// thread stacks (40 MiB) frees stacks beyond its size. The mappings stay.
class stack_pool {
 public:
  // Where the pool maps its chunks: null, anywhere (mmap); the distributed
  // scheduler gives one that maps them read-write in this process's slice of
  // the iso-address stack area (MAP_FAILED when it is full).
  using chunk_source = void* (*)(std::size_t bytes);
  explicit stack_pool(std::size_t stack_size, chunk_source source = nullptr);
  ~stack_pool();
  stack_pool(const stack_pool&) = delete;
  stack_pool& operator=(const stack_pool&) = delete;

  std::size_t stack_size() const noexcept { return stack_size_; }
  stack_block allocate();
  void release(stack_block s);
  // Moves up to `n` free stacks into `out`; returns how many.
  std::size_t allocate_batch(stack_block* out, std::size_t n);
  void release_batch(const stack_block* in, std::size_t n);

  std::size_t stacks_mapped() const noexcept;
  std::size_t warm_limit() const noexcept { return warm_limit_; }
  // Stacks whose pages went back to the kernel, since the pool was made.
  std::size_t stacks_dropped() const noexcept;
  // Bytes of free stacks kept warm, as NPTL's stack cache (stack_cache_maxsize).
  static constexpr std::size_t warm_bytes = std::size_t{40} << 20;
  // True when the address lies in the guard below stack s.
  static bool in_guard_of(const stack_block& s, const void* address) noexcept;

  // Larger than a page, so that a big frame (a local buffer) cannot jump over
  // it into the stack below: any frame up to this size that runs off the
  // stack faults in the guard. A guard costs address space only (and, with
  // MADV_GUARD_INSTALL, one page-table marker per page; with mprotect, the
  // same one mapping split as a single page would).
  static constexpr std::size_t guard_size = 64 * 1024;
  // Stack tops are lowered by up to this much (see carve).
  static constexpr std::size_t max_colour = 63 * 64;

 private:
  void map_chunk();  // called with mutex_ held
  stack_block carve();
  void drop_oldest();  // called without mutex_ held

  // At most this many stacks are dropped or revived per call (a cache's worth).
  static constexpr std::size_t max_batch = 64;

  const std::size_t stack_size_;
  const std::size_t warm_limit_;
  const chunk_source chunk_source_;
  mutable std::mutex mutex_;
  std::vector<stack_block> free_;         // warm, oldest first
  std::vector<stack_block> dropped_;      // pages given back
  std::size_t dropped_total_ = 0;
  struct chunk { char* base; std::size_t bytes; };
  std::vector<chunk> chunks_;
  char* carve_next_ = nullptr;
  char* carve_end_ = nullptr;
  std::size_t mapped_ = 0;
};


// One per worker: a LIFO of recently freed stacks, so that a spawn in steady
// state neither locks nor maps memory (and reuses warm cache lines).
class stack_cache {
 public:
  static constexpr std::size_t capacity = 64;

  stack_block take(stack_pool& pool) {
    if (count_ == 0) {
      count_ = pool.allocate_batch(slots_, capacity / 2);
      ++refills_;
    } else {
      ++reused_;
    }
    return slots_[--count_];
  }
  void give(stack_pool& pool, stack_block s) {
    if (count_ == capacity) {
      pool.release_batch(slots_ + capacity / 2, capacity / 2);
      count_ = capacity / 2;
    }
    slots_[count_++] = s;
  }
  void drain(stack_pool& pool) {
    pool.release_batch(slots_, count_);
    count_ = 0;
  }
  std::uint64_t reused() const noexcept { return reused_; }
  std::uint64_t refills() const noexcept { return refills_; }

  // The largest frame a ULT may reserve on these stacks, read by every spawn;
  // 0 until the worker's first spawn sets it (sched::check_frame).
  std::size_t frame_limit = 0;

 private:
  stack_block slots_[capacity];
  std::size_t count_ = 0;
  std::uint64_t reused_ = 0;
  std::uint64_t refills_ = 0;
};

}  // namespace ito::stack
