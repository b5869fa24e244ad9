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
// Waits until every rank has called it.
void barrier();

// The iso-address region: the same base and size on every rank.
struct region_info {
  void* base;
  std::size_t bytes;
};
region_info region();

}  // namespace ito::dist
