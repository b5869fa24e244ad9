// SPDX-License-Identifier: Apache-2.0
// A rank killed (SIGKILL) while the others wait for it in a barrier: the job
// must end, not hang, and no rank may get past the barrier.
#include <signal.h>
#include <unistd.h>

#include <cstdio>

#include "ito/dist.hpp"

int main(int argc, char** argv) {
  ito::dist::runtime dist(&argc, &argv);
  auto* slots = static_cast<int*>(ito::dist::alloc_collective(4096));
  ito::dist::barrier();
  const int victim = ito::dist::size() - 1;
  if (ito::dist::rank() == victim) {
    usleep(100'000);  // the others are in the barrier below by now
    raise(SIGKILL);
  }
  slots[ito::dist::rank()] = 1;  // a diff to send: the barrier's release has work
  ito::dist::barrier();
  std::printf("rank %d got past a barrier that rank %d never reached\n", ito::dist::rank(), victim);
  return 0;
}
