// SPDX-License-Identifier: Apache-2.0
// main() of the GoogleTest programs run through mpiexec: every rank starts
// the distributed runtime and runs every test; rank 0 reports, and the exit
// status is non-zero when a test failed on any rank. The other ranks print
// their failures only, each line naming the rank.
//
// A suite that hangs leaves a trace: past SUITE_HANG_DUMP_S seconds (the
// suites' CMake sets it below their timeout), each rank prints its threads'
// stacks and its ULTs to stderr (gdb, with scripts/ito-gdb.py where
// SUITE_GDB_HELPER names it) and goes on; ctest's timeout still ends it.
#include <gtest/gtest.h>
#include <mpi.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

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

extern "C" char** environ;

void dump_this_process(int rank) {
  const std::string pid = std::to_string(getpid());
  std::vector<std::string> args = {"gdb", "-p", pid, "-batch", "-nx"};
  if (const char* helper = std::getenv("SUITE_GDB_HELPER")) {
    args.insert(args.end(), {"-ex", std::string("source ") + helper, "-ex", "info ito-ults"});
  }
  args.insert(args.end(), {"-ex", "thread apply all bt 25"});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fprintf(stderr, "rank %d (pid %s): still running past SUITE_HANG_DUMP_S: its stacks\n",
               rank, pid.c_str());
  pid_t child = 0;
  if (posix_spawnp(&child, "gdb", nullptr, nullptr, argv.data(), environ) != 0) {
    std::fprintf(stderr, "rank %d: no gdb to show them\n", rank);
    return;
  }
  int status = 0;
  waitpid(child, &status, 0);
}

void start_hang_dump(int rank) {
  const char* after = std::getenv("SUITE_HANG_DUMP_S");
  const long seconds = after ? std::atol(after) : 0;
  if (seconds <= 0) return;
  std::thread([seconds, rank] {
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    dump_this_process(rank);
  }).detach();
}

}  // namespace

int main(int argc, char** argv) {
  ito::dist::runtime dist(&argc, &argv);
  start_hang_dump(ito::dist::rank());
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
