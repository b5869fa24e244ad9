// SPDX-License-Identifier: Apache-2.0
#include "distributed/scheduler/stack_area.hpp"

#include <mpi.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ito::dist::detail {
namespace {

constexpr std::uintptr_t tib = std::uintptr_t{1} << 40;
// Between the DSM region's candidates (16, 32, ... 96 TiB; a region up to
// 8 TiB leaves these free), below the executable of a program without ASLR
// (near 85 TiB) and above ASan's shadow (up to 16 TiB, where the first
// choice, 8 TiB, failed under ASan); then below 16 TiB.
constexpr std::uintptr_t candidates[] = {24 * tib, 40 * tib, 56 * tib, 72 * tib, 8 * tib, 4 * tib};
constexpr std::size_t area_limit = 4 * tib;
constexpr std::size_t max_slice = std::size_t{4} << 30;  // 4 GiB of address per rank

stack_area* g_area = nullptr;

[[noreturn]] void stop(const char* what, int err) {
  std::fprintf(stderr, "ito: dist: %s%s%s\n", what, err ? ": " : "", err ? std::strerror(err) : "");
  std::exit(2);
}

std::uintptr_t page_down(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) & ~(static_cast<std::uintptr_t>(getpagesize()) - 1);
}
std::uintptr_t page_up(const void* p) {
  const auto page = static_cast<std::uintptr_t>(getpagesize());
  return (reinterpret_cast<std::uintptr_t>(p) + page - 1) & ~(page - 1);
}

}  // namespace

void reserve_stack_area(int rank, int ranks, stack_area& a) {
  a.ranks = ranks;
  a.me = rank;
  a.slice = std::min(max_slice, (area_limit / static_cast<std::size_t>(ranks)) & ~((std::size_t{2} << 20) - 1));
  const std::size_t bytes = a.slice * static_cast<std::size_t>(ranks);
  for (std::uintptr_t at : candidates) {
    void* p = mmap(reinterpret_cast<void*>(at), bytes, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    int here = p != MAP_FAILED && reinterpret_cast<std::uintptr_t>(p) == at, everywhere = 0;
    if (p != MAP_FAILED && !here) munmap(p, bytes);
    MPI_Allreduce(&here, &everywhere, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (everywhere) {
      a.base = static_cast<char*>(p);
      a.used = 0;
      g_area = &a;
      return;
    }
    if (here) munmap(p, bytes);
  }
  stop("no address range for the ULT stacks is free at the same address on every rank", 0);
}

void release_stack_area(stack_area& a) noexcept {
  if (g_area == &a) g_area = nullptr;
  if (a.base) munmap(a.base, a.slice * static_cast<std::size_t>(a.ranks));
  a.base = nullptr;
}

int home_of(const void* p) noexcept { return g_area->home_of(p); }

void* map_stack_chunk(std::size_t bytes) {
  stack_area& a = *g_area;
  if (a.used + bytes > a.slice) return MAP_FAILED;  // the pool throws bad_alloc
  char* at = a.slice_of(a.me) + a.used;
  void* p = mmap(at, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  if (p == MAP_FAILED) return MAP_FAILED;
  a.used += bytes;
  return p;
}

void host_range(const void* lo, const void* hi) {
  const std::uintptr_t from = page_down(lo), to = page_up(hi);
  if (mprotect(reinterpret_cast<void*>(from), to - from, PROT_READ | PROT_WRITE) != 0)
    stop("cannot map a migrated ULT's stack (mprotect)", errno);
}

void drop_range(const void* lo, const void* hi) noexcept {
  const std::uintptr_t from = page_up(lo), to = page_down(hi);
  if (to > from) madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
}

}  // namespace ito::dist::detail
