// SPDX-License-Identifier: Apache-2.0
// A rank that exits with status 0 while the others wait for it in a barrier
// (a stray exit() in library code), run under a launcher that does not clean
// up: ito's peer watch must name the rank and stop the job, or it hangs.
// With the argument "hang" the rank stops itself (SIGSTOP) instead: alive
// for its pidfd, silent for heartbeats; with "kill" it is killed (SIGKILL).
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "ito/dist.hpp"

int main(int argc, char** argv) {
  ito::dist::runtime dist(&argc, &argv);
  ito::dist::barrier();
  const int leaver = ito::dist::size() - 1;
  if (ito::dist::rank() == leaver) {
    usleep(100'000);  // the others are in the barrier below by now
    if (argc > 1 && std::strcmp(argv[1], "hang") == 0) raise(SIGSTOP);
    if (argc > 1 && std::strcmp(argv[1], "kill") == 0) raise(SIGKILL);
    _exit(0);
  }
  ito::dist::barrier();
  std::printf("rank %d got past a barrier that rank %d never reached\n", ito::dist::rank(), leaver);
  return 0;
}
