// SPDX-License-Identifier: Apache-2.0
// The iso-address stack area of the distributed scheduler: one range at the
// same address on every rank, cut in one slice per rank. A rank's stack pool
// maps its chunks in its own slice (so every ULT stack has one home: the rank
// whose slice holds it), and a rank that hosts a ULT of another slice maps
// just that stack's pages, at the same address, while it runs there. Outside
// the DSM: a stack is only ever used by the one process that runs its ULT,
// and it moves as a copy at a steal (uni-address, as in MassiveThreads/DM and
// Itoyori; docs/DISTRIBUTED.md says why this and not DSM pages).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ito::dist::detail {

struct stack_area {
  char* base = nullptr;
  std::size_t slice = 0;  // bytes per rank
  int ranks = 0;
  int me = -1;
  std::size_t used = 0;   // bytes of this rank's slice handed to its pool

  char* slice_of(int rank) const noexcept { return base + slice * static_cast<std::size_t>(rank); }
  int home_of(const void* p) const noexcept {
    return static_cast<int>(static_cast<std::size_t>(static_cast<const char*>(p) - base) / slice);
  }
};

// Collective: reserves the area (no access, nothing committed) at an address
// free on every rank. Exits with an `ito: dist:` message when there is none.
void reserve_stack_area(int rank, int ranks, stack_area& a);
void release_stack_area(stack_area& a) noexcept;

// The stack pool's chunk source (stack_pool::chunk_source) for the area reserved last.
void* map_stack_chunk(std::size_t bytes);

// The rank whose slice of the area reserved last holds p: a ULT's home.
int home_of(const void* p) noexcept;

// [lo, hi) of another slice, readable and writable here (a ULT arrives), or
// given back to the kernel (it left). Page-rounded outward / inward.
void host_range(const void* lo, const void* hi);
void drop_range(const void* lo, const void* hi) noexcept;

}  // namespace ito::dist::detail
