// SPDX-License-Identifier: Apache-2.0
// Stack blocks for the lazy and fair_use policies: allocation (mmap or malloc),
// reference counts, and fair_use's pool of freed regions any ULT may take.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "ito/options.hpp"

namespace ito::stack {

// Header at the high end of every block, where a segment's first frames are:
// it shares their page, so a fresh block costs no page fault for the header
// alone (page faults cost ~16 us in the VMs measured; chain with 8 KiB blocks
// takes one block per level). Several ULTs' segments may lie in one block (a
// lazy child on its parent's tail, pooled regions): each holder of a
// separately freed piece holds one reference.
struct segment_block {
  std::atomic<std::int64_t> refs{1};
  std::size_t bytes = 0;  // the whole allocation, header included
  std::uint64_t magic = 0;
  bool from_malloc = false;

  // The allocation's start, and the usable range [usable_lo, end): all of the
  // block below this header.
  char* base() noexcept { return reinterpret_cast<char*>(this) + header_bytes - bytes; }
  char* usable_lo() noexcept { return base(); }
  char* end() noexcept { return reinterpret_cast<char*>(this); }
  static constexpr std::size_t header_bytes = 64;
  static constexpr std::uint64_t live_magic = 0x17051A5B10C4ull;
};

// A piece of a block usable as a stack segment, with one reference on the block.
struct region {
  segment_block* block = nullptr;
  char* lo = nullptr;
  char* hi = nullptr;
  std::size_t size() const noexcept { return static_cast<std::size_t>(hi - lo); }
  explicit operator bool() const noexcept { return block != nullptr; }
};

// One per runtime. Thread-safe; reached only off the spawn/switch fast paths
// (in __morestack, or when a child does not fit on its parent's tail).
class segment_pool {
 public:
  segment_pool(std::size_t block_size, stack_alloc alloc) : block_size_(block_size), alloc_(alloc) {}
  ~segment_pool();
  segment_pool(const segment_pool&) = delete;
  segment_pool& operator=(const segment_pool&) = delete;

  std::size_t block_size() const noexcept { return block_size_; }
  // A fresh block of at least max(block_size, min_usable + header) bytes, as a
  // region covering all of it (one reference). Aborts when out of memory.
  region new_block(std::size_t min_usable);
  // Drops one reference; true when it was the last (the caller then recycles
  // or destroys the block).
  static bool drop(segment_block* b) noexcept {
    return b->refs.fetch_sub(1, std::memory_order_acq_rel) == 1;
  }
  // Drops one reference; frees the block when it was the last.
  void unref(segment_block* b) noexcept {
    if (drop(b)) destroy(b);
  }
  // A block nobody references: kept mapped for reuse until the pool dies
  // (munmap costs a TLB shootdown on every CPU the process runs on).
  void destroy(segment_block* b) noexcept;
  static void ref(segment_block* b) noexcept { b->refs.fetch_add(1, std::memory_order_relaxed); }

  // fair_use's shared pool (workers keep a lock-free part of their own,
  // split_worker::pooled): put takes the regions' references, take hands one
  // back.
  void put(const region* first, std::size_t count);
  region take(std::size_t min_bytes);
  // A lock-free hint for callers on a fast path: false means take() would
  // almost surely find nothing.
  bool maybe_has_regions() const noexcept { return pooled_.load(std::memory_order_relaxed) != 0; }
  void drain();  // unrefs every pooled region

  // Bytes in blocks in use (the worker caches count, the pool's spares do not).
  std::size_t live_bytes() const noexcept { return live_.load(std::memory_order_relaxed); }
  std::size_t peak_bytes() const noexcept { return peak_.load(std::memory_order_relaxed); }
  void reset_peak() noexcept { peak_.store(live_bytes(), std::memory_order_relaxed); }
  std::size_t pooled_regions() const;

 private:
  void count(std::ptrdiff_t delta) noexcept;

  const std::size_t block_size_;
  const stack_alloc alloc_;
  std::atomic<std::size_t> live_{0};
  std::atomic<std::size_t> peak_{0};
  mutable std::mutex mutex_;
  std::vector<region> free_;  // guarded by mutex_
  std::atomic<std::size_t> pooled_{0};  // free_.size(), for maybe_has_regions
  std::vector<segment_block*> spare_;  // unreferenced blocks, guarded by mutex_
};

// Bytes mapped (or malloc'd) for split-stack blocks across every runtime of
// this process; a test compares it with its value before a run (no leaks).
std::size_t split_block_bytes_live() noexcept;

}  // namespace ito::stack
