// SPDX-License-Identifier: Apache-2.0
// ITO_DSM_GLOBAL variables in a program linked without ito-dsm.ld: their
// section shares pages with other data, so the runtime must refuse, naming
// the fix, instead of mapping over the neighbours.
#include <cstdio>

#include "ito/dist.hpp"

ITO_DSM_GLOBAL int g_counter = 1;
int g_neighbour = 2;

int main(int argc, char** argv) {
  ito::dist::runtime dist(&argc, &argv);
  std::printf("started with %d %d\n", g_counter, g_neighbour);
  return 0;
}
