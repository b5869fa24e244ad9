// SPDX-License-Identifier: Apache-2.0
// More interleaved pages than Linux allows mappings per process: the rank
// that runs out must say so and what to do, not crash. Homed by first touch,
// each rank's pages are its own: no page of the other rank is written (the
// block distribution would make half of the writes remote faults, 40,000
// round trips a rank, minutes on a loaded machine).
#include <cstdio>

#include "ito/dist.hpp"

int main(int argc, char** argv) {
  ito::dist::runtime dist(&argc, &argv);
  const std::size_t pages = 160'000;  // 80,000 homes a rank at 2 ranks, every other page
  auto* big = static_cast<unsigned char*>(
      ito::dist::alloc_collective(pages * 4096, ito::dist::distribution::first_touch()));
  for (std::size_t p = static_cast<std::size_t>(ito::dist::rank()); p < pages;
       p += static_cast<std::size_t>(ito::dist::size()))
    big[p * 4096] = 1;
  ito::dist::barrier();
  std::printf("many_mappings: every page written (vm.max_map_count must be large here)\n");
}
