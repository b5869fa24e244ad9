// SPDX-License-Identifier: Apache-2.0
// Seed 000's benchmark 2 (listing 4.2): create and sync repeatedly. Each parent
// frame holds an 8 KiB zeroed array, spawns a child that waits on its flag,
// releases and joins the previous child, then recurses. Children end while
// their parents are deep elsewhere: lazy keeps every block, fair_use reuses
// the freed regions.
#include <cstring>

#include "ito/sync.hpp"
#include "ito/thread.hpp"
#include "split_bench.hpp"

namespace bench::split {
namespace {

// The child's "flag": a semaphore, so that a waiting child is suspended rather
// than spinning with yield (which mostly measured the scheduler's yield path).
using flag = ito::counting_semaphore;

void child(flag* wait) { wait->acquire(); }

[[gnu::noinline]] void parent(int count, ito::future<void>* prev_child, flag* prev_wait) {
  volatile char array[8192];
  std::memset(const_cast<char*>(array), 0, sizeof array);
  if (count == 0) {
    prev_wait->release();
    ito::join(*prev_child);
    return;
  }
  flag wait(0);
  ito::future<void> c = ito::create_thread(child, &wait);
  prev_wait->release();
  ito::join(*prev_child);
  parent(count - 1, &c, &wait);
  do_not_optimize(array[0]);
}

void parent_start(int depth) {
  flag wait(0);
  ito::future<void> c = ito::create_thread(child, &wait);
  parent(depth, &c, &wait);
}

}  // namespace

int chain_command(args& a, const common_flags& c, reporter& out) {
  const int depth = static_cast<int>(a.take_int("--depth", 125, 1, 1'000'000));
  const std::vector<std::size_t> blocks = parse_sizes(
      "--block", g_block_list.empty() ? "8K,64K,1M,64M" : g_block_list);
  a.finish();
  std::vector<unsigned> workers = c.workers.empty() ? std::vector<unsigned>{2} : c.workers;
  for (unsigned w : workers) {
    for (std::size_t block : blocks) {
      for (ito::stack_policy p : {ito::stack_policy::lazy, ito::stack_policy::fair_use}) {
        progress("chain depth %d, %s, %s blocks, %u worker(s)...", depth, name(p),
                 size_text(block).c_str(), w);
        result r;
        r.bench = "chain";
        r.group = "depth=" + std::to_string(depth) + " block=" + size_text(block);
        r.impl = std::string("ito ") + name(p);
        r.workers = w;
        r.ops = depth + 1;
        measure_policy(r, c.runs, p, w, block, 0, [&] { parent_start(depth); });
        out.add(std::move(r));
      }
    }
  }
  out.print_table("chain (listing 4.2), depth " + std::to_string(depth));
  return 0;
}

}  // namespace bench::split
