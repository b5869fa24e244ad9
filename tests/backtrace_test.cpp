// SPDX-License-Identifier: Apache-2.0
// A backtrace taken inside a ULT (by gdb, perf --call-graph dwarf, or the
// unwinder itself) walks the ULT's own frames and ends cleanly at its entry,
// for a child started at once (child first) and for one queued and started
// later (help-first from the main ULT).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unwind.h>

#include <string>
#include <vector>

#include "ito/thread.hpp"

namespace {

struct walk {
  std::vector<std::string> names;
  int frames = 0;
};

_Unwind_Reason_Code record_frame(_Unwind_Context* ctx, void* p) {
  auto* w = static_cast<walk*>(p);
  if (++w->frames > 64) return _URC_NORMAL_STOP;  // a walk into garbage loops or runs on
  Dl_info info{};
  auto pc = reinterpret_cast<void*>(_Unwind_GetIP(ctx));
  if (!pc) return _URC_NO_REASON;  // libgcc reports the end itself as a frame with no IP
  w->names.push_back(dladdr(pc, &info) && info.dli_sname ? info.dli_sname : "?");
  return _URC_NO_REASON;
}

struct result {
  _Unwind_Reason_Code end;
  walk w;
};

[[gnu::noinline]] result backtrace_here() {
  result r{};
  r.end = _Unwind_Backtrace(&record_frame, &r.w);
  asm volatile("" ::: "memory");  // not a tail call: this frame stays on the stack
  return r;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (auto& n : v) s += n + " <- ";
  return s;
}

void expect_clean_end_at_the_entry(const result& r) {
  EXPECT_EQ(r.end, _URC_END_OF_STACK) << joined(r.w.names);
  EXPECT_LT(r.w.frames, 20) << joined(r.w.names);
  ASSERT_FALSE(r.w.names.empty());
  // The outermost frame is the context's start routine (ito_context_start or
  // the trampoline of a queued context); nothing unknown below it.
  const std::string& last = r.w.names.back();
  EXPECT_TRUE(last == "ito_context_start" || last == "ito_context_trampoline")
      << joined(r.w.names);
}

TEST(backtrace, inside_a_child_first_ult_ends_at_its_entry) {
  ito::start_main_thread_with_worker_size(1, [] {
    // From a ULT other than the main one, create_thread is child first.
    auto outer = ito::create_thread(ito::own_ult, [] {
      auto inner = ito::create_thread(ito::own_ult, [] { return backtrace_here(); });
      return ito::join(inner);
    });
    expect_clean_end_at_the_entry(ito::join(outer));
  });
}

TEST(backtrace, inside_a_queued_ult_ends_at_its_entry) {
  ito::start_main_thread_with_worker_size(1, [] {
    auto f = ito::create_thread(ito::own_ult, [] { return backtrace_here(); });  // help-first from main
    // Started from the queue: joined before it starts, it would run inline,
    // and its walk would go on through the join into the main ULT's frames.
    ito::yield();
    expect_clean_end_at_the_entry(ito::join(f));
  });
}

TEST(backtrace, after_a_switch_the_walk_still_ends_at_the_entry) {
  ito::start_main_thread_with_worker_size(2, [] {
    auto outer = ito::create_thread(ito::own_ult, [] {
      auto inner = ito::create_thread(ito::own_ult, [] {
        ito::yield();
        ito::sleep_for(std::chrono::nanoseconds(1000));
        return backtrace_here();
      });
      return ito::join(inner);
    });
    expect_clean_end_at_the_entry(ito::join(outer));
  });
}

}  // namespace
