// SPDX-License-Identifier: Apache-2.0
// A plain runtime started after a distributed one has ended still reports a
// ULT's stack overflow: stopping the DSM put MPI's SIGSEGV handler back in
// front of ito's, which a later runtime must take over again.
#include <cstdio>

#include "ito/dist.hpp"
#include "ito/runtime.hpp"
#include "ito/thread.hpp"

namespace {

[[gnu::noinline]] int deeper(int n) {
  volatile char pad[4096];
  pad[0] = static_cast<char>(n);
  return n > 0 ? deeper(n - 1) + pad[0] : pad[0];
}

}  // namespace

int main(int argc, char** argv) {
  {
    ito::dist::runtime dist(&argc, &argv);
    ito::dist::start_main_thread([] { return 1; });
  }
  std::fprintf(stderr, "the distributed runtime has ended\n");
  ito::runtime rt;
  ito::create_thread(deeper, 1 << 20).get();  // 4 GiB of frames: past any stack
  std::fprintf(stderr, "no overflow reported\n");
  return 0;
}
