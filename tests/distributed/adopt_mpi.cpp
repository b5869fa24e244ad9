// SPDX-License-Identifier: Apache-2.0
// A program that starts MPI itself, then ito::dist::runtime: with
// MPI_THREAD_MULTIPLE the runtime adopts MPI and leaves it running at its end;
// below that level it stops with a message saying what to do.
#include <mpi.h>

#include <cstdio>
#include <cstring>

#include "ito/dist.hpp"

int main(int argc, char** argv) {
  const bool multiple = argc > 1 && std::strcmp(argv[1], "multiple") == 0;
  int provided = 0;
  MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
  {
    ito::dist::runtime dist(&argc, &argv);
    ito::dist::barrier();
  }
  int finalized = 1;
  MPI_Finalized(&finalized);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::printf("after the runtime, MPI is %s\n", finalized ? "finalized" : "still up");
  MPI_Finalize();
  return 0;
}
