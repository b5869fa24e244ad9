// SPDX-License-Identifier: Apache-2.0
// Two ranks write different values to one byte between the same fences (a
// data race): with ITO_DSM_CHECK=1 the second diff to reach the home is
// reported with the byte's address. The ordering is forced with plain MPI
// barriers, which are no DSM fences.
#include <mpi.h>

#include <cstdio>

#include "ito/dist.hpp"

int main(int argc, char** argv) {
  ito::dist::runtime dist(&argc, &argv);
  auto* page = static_cast<unsigned char*>(ito::dist::alloc_collective(4096));
  const int me = ito::dist::rank();
  if (me == 0) page[0] = 1;  // first touch: rank 0 is the home
  ito::dist::barrier();
  if (me == 1) {
    page[5] = 11;  // a twin of the page as it was, then this rank's byte
    std::printf("rank 1 wrote byte %p\n", static_cast<void*>(page + 5));
    std::fflush(stdout);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0) page[5] = 22;  // the home writes the same byte: no fence between
  MPI_Barrier(MPI_COMM_WORLD);
  ito::dist::barrier();  // rank 1's release finds the home's 22 where its twin had 0
  return 0;
}
