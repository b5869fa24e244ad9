// SPDX-License-Identifier: Apache-2.0
// A consumer of the installed ito::dist: one rank (a singleton MPI process,
// no mpiexec) starts the distributed runtime and sees its region.
#include <cstdio>

#include "ito/dist.hpp"

int main(int argc, char** argv) {
  ito::dist::runtime dist(&argc, &argv, {.region_bytes = std::size_t{1} << 30});
  const auto r = ito::dist::region();
  std::printf("consumer: %s (rank %d of %d, region %zu bytes)\n",
              r.base && ito::dist::size() == 1 ? "ok" : "wrong", ito::dist::rank(),
              ito::dist::size(), r.bytes);
}
