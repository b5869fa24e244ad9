// SPDX-License-Identifier: Apache-2.0
#include "sched/custom_stack.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <mutex>
#include <vector>

#include "sched/ult.hpp"
#include "stack/valgrind_stacks.hpp"

namespace ito::sched {
namespace {

constexpr std::size_t guard_bytes = stack::stack_pool::guard_size;
// Kept mapped for reuse; NPTL keeps a similar cache of thread stacks.
constexpr std::size_t max_cached = 16;

std::size_t round_to_pages(std::size_t bytes) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

struct dedicated_cache {
  std::mutex mutex;
  std::vector<stack::stack_block> free;  // guarded by mutex
};
dedicated_cache& cache() {
  static auto* c = new dedicated_cache;  // never destroyed: ULTs may end after static destructors
  return *c;
}

stack::stack_block map_dedicated(std::size_t bytes) {
  const std::size_t total = bytes + guard_bytes;
  void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
                 -1, 0);
  if (p == MAP_FAILED) return {};
  auto* base = static_cast<char*>(p);
  if (mprotect(base, guard_bytes, PROT_NONE) != 0) {
    munmap(p, total);
    return {};
  }
  const stack::stack_block s{base + guard_bytes, base + total, true};
  stack::announce_stack(s);
  return s;
}

// A block within a page of the size asked for ends at that size: the ULT's
// descriptor goes there, so the guard page lies exactly `wanted` bytes below
// it (a thread that asked for 16 KiB overflows at 16 KiB, as under NPTL). The
// mapping's end is that end rounded up to a page (release_custom_stack).
stack::stack_block fitted(stack::stack_block s, std::size_t wanted) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  if (s && s.size() - wanted < page) s.hi = s.lo + wanted;
  return s;
}

}  // namespace

std::size_t stack_top_reserve(std::size_t frame_bytes) noexcept {
  return sizeof(std::uint64_t) + sizeof(ult) + 63 + frame_bytes + 15;
}

stack::stack_block take_dedicated_stack(std::size_t bytes) {
  const std::size_t wanted = (bytes + 63) & ~std::size_t{63};  // the descriptor's alignment
  bytes = round_to_pages(wanted);
  {
    dedicated_cache& c = cache();
    std::lock_guard lock(c.mutex);
    // The smallest cached stack that fits, unless it would waste over half.
    auto best = c.free.end();
    for (auto it = c.free.begin(); it != c.free.end(); ++it) {
      if (it->size() >= bytes && it->size() <= 2 * bytes &&
          (best == c.free.end() || it->size() < best->size()))
        best = it;
    }
    if (best != c.free.end()) {
      stack::stack_block s = *best;
      c.free.erase(best);
      return fitted(s, wanted);
    }
  }
  return fitted(map_dedicated(bytes), wanted);
}

stack::stack_block caller_stack(void* base, std::size_t bytes) {
  auto lo = (reinterpret_cast<std::uintptr_t>(base) + 63) & ~std::uintptr_t{63};
  auto hi = (reinterpret_cast<std::uintptr_t>(base) + bytes) & ~std::uintptr_t{63};
  if (hi <= lo || hi - lo < min_custom_stack - 128) return {};
  const stack::stack_block s{reinterpret_cast<char*>(lo), reinterpret_cast<char*>(hi), false};
  stack::announce_stack(s);
  return s;
}

void release_custom_stack(stack::stack_block s, stack_origin origin) {
  if (origin != stack_origin::dedicated) {  // the caller's memory: theirs again
    stack::withdraw_stack(s);
    return;
  }
  s.hi = s.lo + round_to_pages(s.size());  // the whole mapping again (fitted)
  dedicated_cache& c = cache();
  {
    std::lock_guard lock(c.mutex);
    if (c.free.size() < max_cached) {
      c.free.push_back(s);
      return;
    }
  }
  stack::withdraw_stack(s);
  munmap(s.lo - guard_bytes, s.size() + guard_bytes);
}

}  // namespace ito::sched
