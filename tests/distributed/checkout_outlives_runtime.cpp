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
  std::puts("the runtime ended");
  std::fflush(stdout);
  kept.reset();
  std::puts("the checkin returned");
  return 0;
}
