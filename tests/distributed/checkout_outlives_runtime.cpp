// SPDX-License-Identifier: Apache-2.0
// A checkout destroyed after the distributed runtime ended: its checkin
// stops the program with a message naming the range (a dangling pin, whose
// writes have nowhere to go), never a crash or silence.
#include <cstdio>
#include <optional>

#include "ito/dist.hpp"

int main(int argc, char** argv) {
  std::optional<ito::dist::checkout<long>> kept;
  {
    ito::dist::runtime dist(&argc, &argv);
    auto* v = static_cast<long*>(ito::dist::alloc_collective(4096));
    kept.emplace(v, 8, ito::dist::access::read_write);
    (*kept)[0] = 1;
  }
  // On stderr, as the checkin's message: Open MPI's launcher forwards a
  // rank's stdout and stderr separately, and could print them out of order.
  std::fputs("the runtime ended\n", stderr);
  kept.reset();
  std::fputs("the checkin returned\n", stderr);
  return 0;
}
