// SPDX-License-Identifier: Apache-2.0
// main() of the GoogleTest programs run through mpiexec: every rank starts
// the distributed runtime and runs every test; rank 0 reports, and the exit
// status is non-zero when a test failed on any rank. The other ranks print
// their failures only, each line naming the rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

#include "ito/dist.hpp"

namespace {

class failures_only : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo& t) override { test_ = &t; }
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "rank %d: %s.%s: %s:%d: %s\n", ito::dist::rank(),
                 test_ ? test_->test_suite_name() : "?", test_ ? test_->name() : "?",
                 r.file_name() ? r.file_name() : "?", r.line_number(), r.summary());
  }
  const ::testing::TestInfo* test_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  ito::dist::runtime dist(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  if (ito::dist::rank() != 0) {  // one rank's report is enough; failures are summed below
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new failures_only);
  }
  int failed = RUN_ALL_TESTS() != 0, any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any && ito::dist::rank() == 0) std::fprintf(stderr, "%s: a test failed on some rank\n", argv[0]);
  return any;
}
