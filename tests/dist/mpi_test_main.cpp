// SPDX-License-Identifier: Apache-2.0
// main() of the GoogleTest programs run through mpiexec: every rank starts
// the distributed runtime and runs every test; rank 0 reports, and the exit
// status is non-zero when a test failed on any rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

#include "ito/dist.hpp"

int main(int argc, char** argv) {
  ito::dist::runtime dist(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  if (ito::dist::rank() != 0) {  // one rank's report is enough; failures are summed below
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS() != 0, any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any && ito::dist::rank() == 0) std::fprintf(stderr, "%s: a test failed on some rank\n", argv[0]);
  return any;
}
