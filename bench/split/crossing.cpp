// The cost of a call that crosses a segment boundary: __morestack, a segment
// from the worker's hot-split cache, the call, and the way back. Compared with
// the same call where the segment has room.
#include <cstring>

#include "ito/thread.hpp"
#include "split_bench.hpp"

namespace bench::split {
namespace {

// A frame larger than any segment of the runtime below has room for: every
// call grows (block 64 KiB).
[[gnu::noinline]] int big_leaf(int x) {
  volatile char frame[96 * 1024];
  frame[0] = static_cast<char>(x);
  return frame[0];
}

[[gnu::noinline]] int small_leaf(int x) {
  volatile char frame[64];
  frame[0] = static_cast<char>(x);
  return frame[0];
}

}  // namespace

int crossing_command(args& a, const common_flags& c, reporter& out) {
  const long long iters = a.take_int("--iters", 2'000'000, 1, 1'000'000'000);
  a.finish();
  for (ito::stack_policy p : {ito::stack_policy::lazy, ito::stack_policy::fair_use}) {
    for (bool crossing : {true, false}) {
      result r;
      r.bench = "crossing";
      r.group = "call";
      r.impl = std::string("ito ") + name(p) + (crossing ? ", every call crosses" : ", no crossing");
      r.workers = 1;
      r.ops = static_cast<double>(iters);
      r.note = crossing ? "96 KiB frame, 64 KiB blocks: __morestack on each call"
                        : "64-byte frame: the prologue check only";
      measure(r, c.runs, [&] {
        std::int64_t ns = 0;
        run_under(p, 1, 64 << 10, 0, [&] {
          int sum = 0;
          std::int64_t t0 = now_ns();
          for (long long i = 0; i < iters; ++i) sum += crossing ? big_leaf(static_cast<int>(i)) : small_leaf(static_cast<int>(i));
          ns = now_ns() - t0;
          do_not_optimize(sum);
        });
        return ns;
      });
      out.add(std::move(r));
    }
  }
  out.print_table("segment-crossing call");
  return 0;
}

}  // namespace bench::split
