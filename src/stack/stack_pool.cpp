// SPDX-License-Identifier: Apache-2.0
#include "stack/stack_pool.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <new>

#include "stack/guard.hpp"
#include "stack/stack_drop.hpp"
#include "stack/valgrind_stacks.hpp"

namespace ito::stack {

stack_pool::stack_pool(std::size_t stack_size, chunk_source source)
    : stack_size_(stack_size),
      // At least a cache's half, which one worker hands over and another takes.
      warm_limit_(std::max(warm_bytes / stack_size, stack_cache::capacity / 2)),
      chunk_source_(source) {}

stack_pool::~stack_pool() {
  for (auto& c : chunks_) {
    withdraw_stacks_in(c.base, c.base + c.bytes);
    munmap(c.base, c.bytes);
  }
}

void stack_pool::map_chunk() {
  const std::size_t slot = guard_size + stack_size_;
  const std::size_t per_chunk = std::clamp<std::size_t>((std::size_t{4} << 20) / slot, 1, 64);
  const std::size_t bytes = slot * per_chunk;
  chunks_.reserve(chunks_.size() + 1);  // so that recording the mapping cannot throw
  void* p = chunk_source_ ? chunk_source_(bytes)
                           : mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  // Thrown, not fatal: the caller decides (pthread_create gives EAGAIN).
  if (p == MAP_FAILED) throw std::bad_alloc();
  chunks_.push_back({static_cast<char*>(p), bytes});
  carve_next_ = static_cast<char*>(p);
  carve_end_ = carve_next_ + bytes;
}

stack_block stack_pool::carve() {
  if (carve_next_ == carve_end_) map_chunk();
  char* guard = carve_next_;
  carve_next_ += guard_size + stack_size_;
  // Stack tops are page-aligned, so every ULT descriptor and first frame would
  // fall into the same L1 sets; shifting each top by a different number of
  // cache lines spreads them over all sets (fib got ~2x faster).
  const std::size_t color = (mapped_++ % 64) * 64;
  static_assert(max_colour == 63 * 64);
  stack_block s{guard + guard_size, guard + guard_size + stack_size_ - color, install_guard(guard, guard_size)};
  announce_stack(s);
  return s;
}

stack_block stack_pool::allocate() {
  stack_block s;
  allocate_batch(&s, 1);
  return s;
}

void stack_pool::release(stack_block s) { release_batch(&s, 1); }

std::size_t stack_pool::allocate_batch(stack_block* out, std::size_t n) {
  n = std::min(n, max_batch);
  std::size_t got = 0;
  {
    std::lock_guard lock(mutex_);
    // Warm stacks first (newest first), then dropped ones, then new ones.
    while (got < n && !free_.empty()) {
      out[got++] = free_.back();
      free_.pop_back();
    }
    while (got < n && !dropped_.empty()) {
      out[got++] = dropped_.back();
      dropped_.pop_back();
    }
    // Carve at least one; carve more only to fill a batch from the current chunk.
    if (got == 0) out[got++] = carve();
    while (got < n && carve_next_ != carve_end_) out[got++] = carve();
  }
  return got;
}

void stack_pool::release_batch(const stack_block* in, std::size_t n) {
  bool over;
  {
    std::lock_guard lock(mutex_);
    free_.insert(free_.end(), in, in + n);
    over = free_.size() > warm_limit_;
  }
  if (over) [[unlikely]] drop_oldest();
}

void stack_pool::drop_oldest() {
  stack_block victims[max_batch];
  std::size_t n;
  {
    std::lock_guard lock(mutex_);
    if (free_.size() <= warm_limit_) return;
    n = std::min(free_.size() - warm_limit_, max_batch);
    std::copy(free_.begin(), free_.begin() + static_cast<std::ptrdiff_t>(n), victims);
    free_.erase(free_.begin(), free_.begin() + static_cast<std::ptrdiff_t>(n));
  }
  // Outside the lock: madvise takes a while, and these stacks are nobody's now.
  drop_pages(victims, n, stack_size_, guard_size);
  std::lock_guard lock(mutex_);
  dropped_.insert(dropped_.end(), victims, victims + n);
  dropped_total_ += n;
}

std::size_t stack_pool::stacks_mapped() const noexcept {
  std::lock_guard lock(mutex_);
  return mapped_;
}

std::size_t stack_pool::stacks_dropped() const noexcept {
  std::lock_guard lock(mutex_);
  return dropped_total_;
}

bool stack_pool::in_guard_of(const stack_block& s, const void* address) noexcept {
  auto a = static_cast<const char*>(address);
  return s.guarded && a >= s.lo - guard_size && a < s.lo;
}

}  // namespace ito::stack
