// SPDX-License-Identifier: Apache-2.0
// A consumer of the installed ito::dist: one rank (a singleton MPI process,
// no mpiexec) starts the distributed runtime, sees its region, and keeps a
// global in the DSM (which needs the installed linker script: without it the
// runtime stops at start).
#include <cstdio>

#include "ito/dist.hpp"

ITO_DSM_GLOBAL int g_shared_counter = 41;

int main(int argc, char** argv) {
  ito::dist::runtime dist(&argc, &argv, {.region_bytes = std::size_t{1} << 30});
  const auto r = ito::dist::region();
  ++g_shared_counter;
  ito::dist::release();  // the paper's sd_fence
  ito::dist::acquire();  // si_fence
  ito::dist::barrier();
  const bool ok = r.base && ito::dist::size() == 1 && g_shared_counter == 42;
  std::printf("consumer: %s (rank %d of %d, region %zu bytes, global %d)\n", ok ? "ok" : "wrong",
              ito::dist::rank(), ito::dist::size(), r.bytes, g_shared_counter);
}
