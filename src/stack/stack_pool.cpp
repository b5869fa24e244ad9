#include "stack/stack_pool.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <new>

namespace ito::stack {
namespace {

// Linux 6.13+: guard pages that do not split the mapping. Older headers lack it.
constexpr int madv_guard_install = 102;

// Without MADV_GUARD_INSTALL each guard page costs two mappings, and the
// kernel caps a process at vm.max_map_count of them. Keep half for the program.
std::size_t mprotect_guard_budget() {
  std::size_t max_maps = 65530;
  std::ifstream in("/proc/sys/vm/max_map_count");
  in >> max_maps;
  return max_maps / 4;
}

enum class guard_kind { unknown, madvise, mprotect, none };
guard_kind g_guard = guard_kind::unknown;
std::size_t g_mprotect_guards = 0;

bool install_guard(char* page) {
  if (g_guard == guard_kind::unknown || g_guard == guard_kind::madvise) {
    if (madvise(page, stack_pool::guard_size, madv_guard_install) == 0) {
      g_guard = guard_kind::madvise;
      return true;
    }
    g_guard = guard_kind::mprotect;
  }
  if (g_guard == guard_kind::mprotect) {
    static const std::size_t budget = mprotect_guard_budget();
    if (g_mprotect_guards < budget && mprotect(page, stack_pool::guard_size, PROT_NONE) == 0) {
      ++g_mprotect_guards;
      return true;
    }
    std::fprintf(stderr,
                 "ito: warning: out of guard pages (vm.max_map_count); further ULT stacks "
                 "have no guard page\n");
    g_guard = guard_kind::none;
  }
  return false;
}

}  // namespace

stack_pool::stack_pool(std::size_t stack_size) : stack_size_(stack_size) {}

stack_pool::~stack_pool() {
  for (auto& c : chunks_) munmap(c.base, c.bytes);
}

void stack_pool::map_chunk() {
  const std::size_t slot = guard_size + stack_size_;
  const std::size_t per_chunk = std::clamp<std::size_t>((std::size_t{4} << 20) / slot, 1, 64);
  const std::size_t bytes = slot * per_chunk;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
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
  stack_block s{guard + guard_size, guard + guard_size + stack_size_ - color, install_guard(guard)};
  return s;
}

stack_block stack_pool::allocate() {
  stack_block s;
  allocate_batch(&s, 1);
  return s;
}

void stack_pool::release(stack_block s) { release_batch(&s, 1); }

std::size_t stack_pool::allocate_batch(stack_block* out, std::size_t n) {
  std::lock_guard lock(mutex_);
  std::size_t got = 0;
  while (got < n && !free_.empty()) {
    out[got++] = free_.back();
    free_.pop_back();
  }
  // Carve at least one; carve more only to fill a batch from the current chunk.
  if (got == 0) out[got++] = carve();
  while (got < n && carve_next_ != carve_end_) out[got++] = carve();
  return got;
}

void stack_pool::release_batch(const stack_block* in, std::size_t n) {
  std::lock_guard lock(mutex_);
  free_.insert(free_.end(), in, in + n);
}

std::size_t stack_pool::stacks_mapped() const noexcept {
  std::lock_guard lock(mutex_);
  return mapped_;
}

bool stack_pool::in_guard_of(const stack_block& s, const void* address) noexcept {
  auto a = static_cast<const char*>(address);
  return s.guarded && a >= s.lo - guard_size && a < s.lo;
}

}  // namespace ito::stack
