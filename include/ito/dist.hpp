// SPDX-License-Identifier: Apache-2.0
// ito's distributed mode: one program on many processes (MPI ranks), launched
// with `mpirun -n P ./prog` / `mpiexec -n P ./prog`. Link ito::dist (CMake) or
// `pkg-config ito-dist`. docs/DISTRIBUTED.md describes it.
//
//   int main(int argc, char** argv) {
//     ito::dist::runtime dist(&argc, &argv);   // every rank
//     if (ito::dist::rank() == 0) ...;
//     ito::dist::barrier();
//   }
//
// Every rank reserves the same range of virtual addresses (the iso-address
// region, ITO_DSM_SIZE bytes, default 64 GiB, reserved, not committed): data
// placed there has one address on every process.
#pragma once

#include "ito/cxx20.hpp"

#include <cstddef>
#include <functional>

namespace ito::dist {

struct options {
  // The region's size in bytes; 0: ITO_DSM_SIZE, else 64 GiB.
  std::size_t region_bytes = 0;
};

// Starts the distributed runtime on this rank: initialises MPI with
// MPI_THREAD_MULTIPLE unless the program did already (then it must have asked
// for that level), and reserves the region at an address every rank agrees
// on. Before MPI starts, a rank whose address-space layout is randomised
// re-executes itself with randomisation off, so that code and static data
// have one address on every rank too. Collective: every rank constructs one,
// and destroys it (which finalises MPI if the runtime initialised it).
// Errors: config_error for a bad ITO_DSM_SIZE or options, usage_error for a
// second runtime; a region no address fits on every rank stops the program
// with an `ito: dsm:` message (exit status 2), as a bad environment does.
class runtime {
 public:
  explicit runtime(int* argc = nullptr, char*** argv = nullptr, const options& o = {});
  ~runtime();
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;
};

// This process's rank and the number of ranks. usage_error(EPERM) outside a
// distributed runtime.
int rank();
int size();
// Waits until every rank has called it, with a release fence before and an
// acquire fence after (sd_fence, si_fence): what any rank wrote before the
// barrier is seen by every rank after it.
void barrier();

// --- The distributed shared memory (docs/DISTRIBUTED.md) -------------------
// Memory in the region is shared by all ranks, page by page, for programs
// free of data races: what a rank wrote is sent at its next sd_fence
// (release), and another rank sees it after its own si_fence (acquire) that
// follows in time (a barrier, or a message, orders the two).

// From this rank's heap in the region: no communication. Only the allocating
// rank may free a block (usage_error otherwise, or for a double free or a
// pointer that is not from alloc). bad_alloc when this rank's part is full.
void* alloc(std::size_t bytes);
void free(void* p);
// Collective: every rank calls it with the same size, in the same order, and
// gets the same pointer. Lives as long as the runtime.
void* alloc_collective(std::size_t bytes);

// A global or static variable in the DSM: one copy shared by every rank under
// the same fences as alloc'ed memory, initialised as the program initialises
// it (every rank runs the same initialisation):
//   ITO_DSM_GLOBAL long histogram[256];
// Linking with ito::dist (or `pkg-config --libs ito-dist`) adds the linker
// script that puts these on pages of their own. Not for const variables.
// Before the runtime starts and after it ends they are this rank's plain
// memory (after: holding what this rank last saw of them).
#ifndef ITO_DSM_GLOBAL
#define ITO_DSM_GLOBAL __attribute__((section("ito_dsm"), used))
#endif

// Release: this rank's writes since its last sd_fence reach their pages' homes.
void sd_fence();
// Acquire: this rank's copies of pages others may have written are dropped.
void si_fence();
// The same fences without waiting: the fence runs on a thread of ito's
// OS-thread pool and `done` runs there once it is complete (an exception
// from `done` is reported on stderr, not propagated). Until then its effect
// is not guaranteed; stores the caller makes meanwhile may go with this
// release or the next. The runtime's destructor waits for every one.
// usage_error(EPERM) outside a distributed runtime.
void sd_fence_async(std::function<void()> done);
void si_fence_async(std::function<void()> done);
// Keeps [p, p+bytes) accessible (and this rank's writes to it pending) across
// fences until unpin: for memory that must never fault (what MPI or a
// signal handler touches).
void pin(void* p, std::size_t bytes);
void unpin(void* p, std::size_t bytes);

// The iso-address region: the same base and size on every rank.
struct region_info {
  void* base;
  std::size_t bytes;
};
region_info region();

}  // namespace ito::dist
