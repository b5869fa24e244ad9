// SPDX-License-Identifier: Apache-2.0
// ito-bench-split: seed 000's benchmarks under the fixed, lazy and fair_use
// stack policies. Built with -fsplit-stack (see bench/split/CMakeLists.txt).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "split_bench.hpp"

namespace {

const char usage_text[] =
    "usage: ito-bench-split COMMAND [--workers 1,2] [--runs N] [--json] [options]\n"
    "  fib       [--n N] [--block SIZE]     fib(n) under fixed, lazy, fair_use + sequential\n"
    "  matfib    [--n N] [--block 8K,16K,64K,2M]\n"
    "                                       benchmark 1: two 64x64 double matrices per frame\n"
    "  chain     [--depth D] [--block 8K,64K,1M,64M]\n"
    "                                       benchmark 2 (listing 4.2), lazy and fair_use, 2 workers\n"
    "  crossing  [--iters N]                the cost of a segment-crossing call\n"
    "Peak stack bytes (blocks allocated; fixed: stacks mapped) are in the notes column.\n";

int run(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help")) {
    std::fputs(usage_text, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  // --block takes a list, which bench::args cannot: take it off first.
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--block") && i + 1 < argc) {
      bench::split::g_block_list = argv[++i];
    } else {
      rest.push_back(argv[i]);
    }
  }
  const std::string cmd = rest[1];
  bench::args a(static_cast<int>(rest.size()), rest.data(), 2);
  const bench::common_flags c = a.take_common(5);
  bench::reporter out(c.json);
  if (cmd == "fib") return bench::split::fib_command(a, c, out);
  if (cmd == "matfib") return bench::split::matfib_command(a, c, out);
  if (cmd == "chain") return bench::split::chain_command(a, c, out);
  if (cmd == "crossing") return bench::split::crossing_command(a, c, out);
  throw bench::usage_error("unknown command '" + cmd + "'");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const bench::usage_error& e) {
    std::fprintf(stderr, "ito-bench-split: %s\n%s", e.what(), usage_text);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ito-bench-split: %s\n", e.what());
    return 1;
  }
}
