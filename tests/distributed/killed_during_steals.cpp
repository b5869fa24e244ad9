// SPDX-License-Identifier: Apache-2.0
// A rank killed (SIGKILL) while the distributed scheduler runs fib across the
// ranks (steal requests, migrated ULTs and remote joins in flight): the job
// must end with a message naming the rank, not hang, and fib must not finish.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <thread>

#include "distributed/fib_kernel.hpp"  // bench/
#include "ito/dist.hpp"

int main(int argc, char** argv) {
  ito::dist::runtime dist(&argc, &argv);
  const int victim = ito::dist::size() - 1;
  if (ito::dist::rank() == victim) {
    std::thread([] {
      usleep(300'000);  // well inside the run below (seconds long even in a release build)
      raise(SIGKILL);
    }).detach();
  }
  const long r = ito::dist::start_main_thread(fib_kernel::fib, 40);
  std::printf("rank %d finished fib = %ld although rank %d was killed\n", ito::dist::rank(), r,
              victim);
  return 0;
}
