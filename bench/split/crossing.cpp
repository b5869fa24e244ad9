// SPDX-License-Identifier: Apache-2.0
// The cost of a call that crosses a segment boundary: __morestack, a segment
// from the worker's hot-split cache, the call, and the way back. Compared with
// the same call where the segment has room.
#include <cstdlib>
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

// What a call into non-split code costs its (small-frame) split caller. The
// linker sends every call of a caller of strlen through
// __morestack_non_split; malloc and free are wrapped by ito's split-stack
// shims (src/split/morestack/morestack_x86_64.S). The same calls through function
// pointers, which the linker cannot see, are the floor: no check at all.
std::size_t (*volatile g_strlen)(const char*) = &std::strlen;
void* (*volatile g_malloc)(std::size_t) = &std::malloc;
void (*volatile g_free)(void*) = &std::free;
const char* volatile g_text = "ito";

[[gnu::noinline]] std::size_t calls_strlen(const char* s) { return std::strlen(s); }
[[gnu::noinline]] std::size_t calls_strlen_by_pointer(const char* s) { return g_strlen(s); }
[[gnu::noinline]] int calls_malloc_free(int x) {
  void* p = std::malloc(32);
  do_not_optimize(p);
  std::free(p);
  return x;
}
[[gnu::noinline]] int calls_malloc_free_by_pointer(int x) {
  void* p = g_malloc(32);
  do_not_optimize(p);
  g_free(p);
  return x;
}

void time_calls(const common_flags& c, reporter& out, long long iters) {
  struct one {
    const char* name;
    const char* note;
    long long (*loop)(long long);
  };
  const one cases[] = {
      {"strlen, caller goes through __morestack_non_split", "a non-split callee ito does not wrap",
       [](long long n) { long long s = 0; for (long long i = 0; i < n; ++i) s += static_cast<long long>(calls_strlen(g_text)); return s; }},
      {"strlen through a pointer (no check: the floor)", "invisible to the linker",
       [](long long n) { long long s = 0; for (long long i = 0; i < n; ++i) s += static_cast<long long>(calls_strlen_by_pointer(g_text)); return s; }},
      {"malloc+free through ito's split-stack shims", "--wrap=malloc,free",
       [](long long n) { long long s = 0; for (long long i = 0; i < n; ++i) s += calls_malloc_free(static_cast<int>(i)); return s; }},
      {"malloc+free through pointers (no check: the floor)", "invisible to the linker",
       [](long long n) { long long s = 0; for (long long i = 0; i < n; ++i) s += calls_malloc_free_by_pointer(static_cast<int>(i)); return s; }},
  };
  for (const one& k : cases) {
    result r;
    r.bench = "non-split call";
    r.group = "call";
    r.impl = std::string("ito lazy, ") + k.name;
    r.workers = 1;
    r.ops = static_cast<double>(iters);
    r.note = k.note;
    measure(r, c.runs, [&] {
      std::int64_t ns = 0;
      run_under(ito::stack_policy::lazy, 1, 256 << 10, 0, [&] {
        std::int64_t t0 = now_ns();
        long long sum = k.loop(iters);
        ns = now_ns() - t0;
        do_not_optimize(sum);
      });
      return ns;
    });
    out.add(std::move(r));
  }
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
  time_calls(c, out, iters);
  out.print_table("segment-crossing calls, and calls from split code into non-split code");
  return 0;
}

}  // namespace bench::split
