// SPDX-License-Identifier: Apache-2.0
#include "distributed/dsm/dsm_alloc.hpp"

#include <mpi.h>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "distributed/dist_state.hpp"
#include "distributed/dsm/dsm.hpp"
#include "distributed/dsm/remote_free.hpp"
#include "ito/error.hpp"

namespace ito::dist::detail {
namespace {

constexpr std::size_t page_bytes = 4096;
constexpr unsigned smallest_class = 4;  // 16 bytes
constexpr unsigned largest_class = 20;  // 1 MiB; larger blocks are whole pages

struct heap {
  char* base = nullptr;  // of the whole region
  std::size_t part_bytes = 0;
  int rank = 0;
  char* end = nullptr;              // of the last rank's part
  char* collective_next = nullptr;  // bump pointer in part 0
  char* own_next = nullptr;         // bump pointer in this rank's part
  char* own_end = nullptr;
  std::vector<char*> free_small[largest_class + 1];
  std::multimap<std::size_t, char*> free_large;  // by size
  std::unordered_map<char*, std::size_t> live;   // block -> its size (class or pages)
  std::mutex lock;
};

heap* g_heap = nullptr;

heap& require_heap(const char* what) {
  if (!g_heap)
    throw usage_error(EPERM, std::string("ito: dsm: ") + what +
                                 " needs a running ito::dist::runtime (create one first, on "
                                 "every rank)");
  return *g_heap;
}

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

char* bump(heap& h, std::size_t bytes, std::size_t align) {
  char* p = reinterpret_cast<char*>(round_up(reinterpret_cast<std::uintptr_t>(h.own_next), align));
  if (p + bytes > h.own_end || p + bytes < p) throw std::bad_alloc();
  h.own_next = p + bytes;
  return p;
}

// False when p is not the start of a live block of h.
bool free_own(heap& h, char* p) {
  std::lock_guard hold(h.lock);
  auto it = h.live.find(p);
  if (it == h.live.end()) return false;
  const std::size_t size = it->second;
  h.live.erase(it);
  if (size <= (std::size_t{1} << largest_class))
    h.free_small[std::bit_width(size - 1)].push_back(p);
  else
    h.free_large.emplace(size, p);
  return true;
}

}  // namespace

void start_allocator(const dist_state& st) {
  auto* h = new heap;
  h->base = st.region.view;
  h->part_bytes = st.region.bytes / static_cast<std::size_t>(st.size + 1) / page_bytes * page_bytes;
  h->rank = st.rank;
  h->end = h->base + h->part_bytes * static_cast<std::size_t>(st.size + 1);
  h->collective_next = h->base;
  h->own_next = h->base + h->part_bytes * static_cast<std::size_t>(st.rank + 1);
  h->own_end = h->own_next + h->part_bytes;
  g_heap = h;
}

void stop_allocator() noexcept {
  delete g_heap;
  g_heap = nullptr;
}

void* allocate(std::size_t bytes) {
  heap& h = require_heap("alloc");
  std::lock_guard hold(h.lock);
  if (bytes == 0) bytes = 1;
  if (bytes <= (std::size_t{1} << largest_class)) {
    const unsigned c = std::max(smallest_class, static_cast<unsigned>(std::bit_width(bytes - 1)));
    char* p;
    if (!h.free_small[c].empty()) {
      p = h.free_small[c].back();
      h.free_small[c].pop_back();
    } else {
      p = bump(h, std::size_t{1} << c, std::min<std::size_t>(std::size_t{1} << c, page_bytes));
    }
    h.live.emplace(p, std::size_t{1} << c);
    return p;
  }
  const std::size_t size = round_up(bytes, page_bytes);
  char* p;
  if (auto it = h.free_large.lower_bound(size); it != h.free_large.end() && it->first == size) {
    p = it->second;
    h.free_large.erase(it);
  } else {
    p = bump(h, size, page_bytes);
  }
  h.live.emplace(p, size);
  return p;
}

void deallocate(void* ptr) {
  if (!ptr) return;
  heap& h = require_heap("free");
  char* p = static_cast<char*>(ptr);
  if (p < h.base || p >= h.end)
    throw usage_error(EINVAL, "ito: dsm: free: the pointer is not in the DSM region");
  const std::size_t part = static_cast<std::size_t>(p - h.base) / h.part_bytes;
  if (part == 0)
    throw usage_error(EINVAL, "ito: dsm: free: the block was allocated collectively; "
                              "collective blocks live as long as the runtime");
  if (part != static_cast<std::size_t>(h.rank) + 1)
    return post_remote_free(static_cast<int>(part - 1), p);
  if (!free_own(h, p))
    throw usage_error(EINVAL, "ito: dsm: free: not the start of a live block (freed twice?)");
}

void free_returned_block(void* p, int from) noexcept {
  if (g_heap && free_own(*g_heap, static_cast<char*>(p))) return;
  std::fprintf(stderr,
               "ito: dsm: free: rank %d freed %p, which is not the start of a live block of rank "
               "%d's heap (freed twice?)\n",
               from, p, g_heap ? g_heap->rank : -1);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::_Exit(2);
}

void* allocate_collective(std::size_t bytes, const distribution& where) {
  heap& h = require_heap("alloc_collective");
  using kind = distribution::kind;
  if (where.how == kind::cyclic && where.block_bytes == 0)
    throw usage_error(EINVAL, "ito: dsm: alloc_collective: a cyclic distribution needs "
                              "block_bytes > 0");
  // What every rank asked for, compared as the largest and the smallest value.
  std::uint64_t mine[6] = {bytes, static_cast<std::uint64_t>(where.how), where.block_bytes};
  for (int i = 0; i < 3; ++i) mine[3 + i] = ~mine[i];
  std::uint64_t all[6] = {};
  MPI_Allreduce(mine, all, 6, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  for (int i = 0; i < 3; ++i)
    if (all[i] != mine[i] || ~all[3 + i] != mine[i])
      throw usage_error(EINVAL, "ito: dsm: alloc_collective: the ranks asked for different sizes "
                                "or distributions (every rank must make the same collective "
                                "calls, in one order)");
  char* p = nullptr;
  {
    std::lock_guard hold(h.lock);
    const std::size_t align = bytes >= page_bytes ? page_bytes : 64;
    // A distributed array has its pages to itself: the next one starts on a
    // page of its own, homed as it says.
    const std::size_t taken = bytes >= page_bytes ? round_up(bytes, page_bytes) : bytes;
    p = reinterpret_cast<char*>(round_up(reinterpret_cast<std::uintptr_t>(h.collective_next), align));
    if (p + taken > h.base + h.part_bytes) throw std::bad_alloc();
    h.collective_next = p + taken;
  }
  if (bytes >= page_bytes && where.how != kind::first_touch) place_pages(p, bytes, where);
  return p;
}

}  // namespace ito::dist::detail
