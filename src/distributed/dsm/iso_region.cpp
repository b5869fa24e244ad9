// SPDX-License-Identifier: Apache-2.0
#include "distributed/dsm/iso_region.hpp"

#include <mpi.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "distributed/dist_state.hpp"
#include "distributed/dsm/dsm.hpp"
#include "distributed/dsm/dsm_globals.hpp"
#include "distributed/node_memory.hpp"

namespace ito::dist::detail {
namespace {

// 16, 32, 48... TiB: above the heap and the executable, below where mmap and
// the stack start (near 128 TiB), for any region up to 16 TiB.
constexpr std::uintptr_t candidate_step = std::uintptr_t{1} << 44;
constexpr int candidates = 6;

[[noreturn]] void stop(const char* what, int err) {
  std::fprintf(stderr, "ito: dsm: %s%s%s\n", what, err ? ": " : "", err ? std::strerror(err) : "");
  std::exit(2);
}

// This rank's view at `at`, or null if something else is there.
char* map_view_at(std::uintptr_t at, std::size_t bytes, int memfd) {
  void* p = mmap(reinterpret_cast<void*>(at), bytes, PROT_NONE,
                 MAP_SHARED | MAP_FIXED_NOREPLACE | MAP_NORESERVE, memfd, 0);
  if (p == MAP_FAILED) return nullptr;
  if (reinterpret_cast<std::uintptr_t>(p) != at) {  // a kernel without FIXED_NOREPLACE
    munmap(p, bytes);
    return nullptr;
  }
  return static_cast<char*>(p);
}

// An alias of the file's first `bytes`, with `tail` bytes of address space
// reserved (no access) from the page after them.
char* map_alias(std::size_t bytes, int memfd, std::size_t tail = 0) {
  void* at = mmap(nullptr, page_rounded(bytes) + tail, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (at == MAP_FAILED ||
      mmap(at, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_NORESERVE, memfd, 0) ==
          MAP_FAILED)
    stop("cannot map the region's alias (try a smaller ITO_DSM_SIZE)", errno);
  return static_cast<char*>(at);
}

}  // namespace

void reserve_region(std::size_t bytes, node_shape shape, iso_region& r, node_info& node) {
  const globals_section g = find_globals_section();
  const node_files files = open_node_memory(bytes + g.bytes, shape, node);
  r.memfd = files.own_fd;
  r.node_memfd = files.node_fd;
  r.tail_at = page_rounded(bytes + g.bytes);
  r.tail_bytes = sharing_bytes_for((bytes + g.bytes) / node_page_bytes);
  const bool one_file = files.node_fd == files.own_fd;
  r.alias = map_alias(bytes + g.bytes, r.memfd, one_file ? r.tail_bytes : 0);
  r.node_alias = one_file ? r.alias : map_alias(bytes + g.bytes, files.node_fd, r.tail_bytes);
  r.bytes = bytes;
  if (g.bytes != 0) {
    // The globals' values as the program initialised them (on a node of
    // several ranks, as its first rank did: every rank ran the same code),
    // then the section becomes DSM pages (no access until the DSM grants it)
    // over that copy.
    if (node.first_in_node) std::memcpy(r.node_alias + bytes, g.begin, g.bytes);
    if (mmap(g.begin, g.bytes, PROT_NONE, MAP_SHARED | MAP_FIXED, r.memfd,
             static_cast<off_t>(bytes)) == MAP_FAILED)
      stop("cannot map the ITO_DSM_GLOBAL variables into the DSM", errno);
    r.globals = g.begin;
    r.globals_bytes = g.bytes;
  }
  for (int i = 1; i <= candidates; ++i) {
    const std::uintptr_t at = candidate_step * static_cast<std::uintptr_t>(i);
    char* view = map_view_at(at, bytes, r.memfd);
    int here = view != nullptr, everywhere = 0;
    MPI_Allreduce(&here, &everywhere, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (everywhere) {
      r.view = view;
      return;
    }
    if (view) munmap(view, bytes);
  }
  stop("no address range of ITO_DSM_SIZE bytes is free at the same address on every rank "
       "(try a smaller ITO_DSM_SIZE)",
       0);
}

void release_region(iso_region& r) noexcept {
  if (r.globals) {
    // Plain memory again, holding what this rank last saw of each page
    // (its view maps each page from the node's memory or its own).
    std::vector<char> seen(r.globals_bytes);
    if (mprotect(r.globals, r.globals_bytes, PROT_READ) == 0)
      std::memcpy(seen.data(), r.globals, r.globals_bytes);
    void* p = mmap(r.globals, r.globals_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (p != MAP_FAILED) std::memcpy(r.globals, seen.data(), r.globals_bytes);
  }
  if (r.view) munmap(r.view, r.bytes);
  const bool one_file = r.node_alias == r.alias;
  if (r.node_alias && !one_file) munmap(r.node_alias, r.tail_at + r.tail_bytes);
  if (r.alias) munmap(r.alias, r.tail_at + (one_file ? r.tail_bytes : 0));
  if (r.node_memfd >= 0 && r.node_memfd != r.memfd) close(r.node_memfd);
  if (r.memfd >= 0) close(r.memfd);
  r = iso_region{};
}

}  // namespace ito::dist::detail
