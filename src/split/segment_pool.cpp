// SPDX-License-Identifier: Apache-2.0
#include "split/segment_pool.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <new>

#include "arch/context.hpp"

namespace ito::stack {
namespace {

std::atomic<std::size_t> g_live_all{0};

// Holds the pool's lock with the split-stack limit word cleared. In a split
// program the code under the lock is split-stack code too (libito_split, the
// operator new behind a vector's growth): were it to reach __morestack, that
// would ask this pool for a segment and wait for the lock its own thread
// holds. Cleared, nothing under the lock grows: the little it needs (list
// updates, malloc behind a vector's growth) fits in the backoff that lies
// below every limit (docs/SPLIT_STACKS.md, knobs).
class pool_lock {
 public:
  explicit pool_lock(std::mutex& m) : limit_(arch::split_limit()), m_(m) {
    arch::set_split_limit(nullptr);
    m_.lock();
  }
  ~pool_lock() {
    m_.unlock();
    arch::set_split_limit(limit_);
  }
  pool_lock(const pool_lock&) = delete;
  pool_lock& operator=(const pool_lock&) = delete;

 private:
  void* limit_;
  std::mutex& m_;
};

// The pool is searched from its newest entries: recently freed memory is warm.
constexpr std::size_t pool_search_depth = 16;

void free_block(segment_block* b) noexcept {
  std::size_t bytes = b->bytes;
  bool from_malloc = b->from_malloc;
  char* base = b->base();
  b->magic = 0;
  b->~segment_block();
  if (from_malloc) std::free(base);
  else munmap(base, bytes);
  g_live_all.fetch_sub(bytes, std::memory_order_relaxed);
}

}  // namespace

std::size_t split_block_bytes_live() noexcept { return g_live_all.load(std::memory_order_relaxed); }

segment_pool::~segment_pool() {
  drain();
  for (segment_block* b : spare_) free_block(b);
}

void segment_pool::count(std::ptrdiff_t delta) noexcept {
  std::size_t now = live_.fetch_add(static_cast<std::size_t>(delta), std::memory_order_relaxed) +
                    static_cast<std::size_t>(delta);
  std::size_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

region segment_pool::new_block(std::size_t min_usable) {
  std::size_t bytes = std::max(block_size_, min_usable + segment_block::header_bytes);
  bytes = (bytes + 4095) & ~std::size_t{4095};
  {
    // A spare of about that size (not one many times larger).
    pool_lock lock(mutex_);
    std::size_t searched = 0;
    for (auto it = spare_.rbegin(); it != spare_.rend() && searched < pool_search_depth; ++it, ++searched) {
      segment_block* b = *it;
      if (b->bytes >= bytes && b->bytes <= 2 * bytes) {
        spare_.erase(std::next(it).base());
        b->refs.store(1, std::memory_order_relaxed);
        count(static_cast<std::ptrdiff_t>(b->bytes));
        return {b, b->usable_lo(), b->end()};
      }
    }
  }
  void* p = nullptr;
  if (alloc_ == stack_alloc::malloc) {
    p = std::aligned_alloc(64, bytes);
  } else {
    p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
             -1, 0);
    if (p == MAP_FAILED) p = nullptr;
  }
  if (!p) {
    std::fprintf(stderr, "ito: out of memory allocating a %zu-byte split-stack block\n", bytes);
    std::abort();
  }
  auto* b = new (static_cast<char*>(p) + bytes - segment_block::header_bytes) segment_block;
  b->bytes = bytes;
  b->magic = segment_block::live_magic;
  b->from_malloc = alloc_ == stack_alloc::malloc;
  g_live_all.fetch_add(bytes, std::memory_order_relaxed);
  count(static_cast<std::ptrdiff_t>(bytes));
  return {b, b->usable_lo(), b->end()};
}

void segment_pool::destroy(segment_block* b) noexcept {
  if (b->magic != segment_block::live_magic) {
    // Non-split code ran below the bottom of the segment mapped above this
    // one (mmap places new mappings downwards): the adjust size is too small.
    std::fprintf(stderr, "ito: split-stack block header overwritten (stack overflow below a segment)\n");
    std::abort();
  }
  count(-static_cast<std::ptrdiff_t>(b->bytes));
  pool_lock lock(mutex_);
  spare_.push_back(b);
}


void segment_pool::put(const region* first, std::size_t count) {
  pool_lock lock(mutex_);
  free_.insert(free_.end(), first, first + count);
  pooled_.store(free_.size(), std::memory_order_relaxed);
}

region segment_pool::take(std::size_t min_bytes) {
  pool_lock lock(mutex_);
  std::size_t searched = 0;
  for (auto it = free_.rbegin(); it != free_.rend() && searched < pool_search_depth; ++it, ++searched) {
    if (it->size() >= min_bytes) {
      region r = *it;
      free_.erase(std::next(it).base());
      pooled_.store(free_.size(), std::memory_order_relaxed);
      return r;
    }
  }
  return {};
}

void segment_pool::drain() {
  std::vector<region> all;
  {
    pool_lock lock(mutex_);
    all.swap(free_);
    pooled_.store(0, std::memory_order_relaxed);
  }
  for (region& r : all) unref(r.block);
}

std::size_t segment_pool::pooled_regions() const {
  pool_lock lock(mutex_);
  return free_.size();
}

}  // namespace ito::stack
