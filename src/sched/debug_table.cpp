// SPDX-License-Identifier: Apache-2.0
// ito_debug: what a debugger needs to list ULTs, as plain C data with field
// offsets, so that the gdb helper (scripts/ito-gdb.py) works on release
// builds without debug information and whatever C++ library layout. Written
// at runtime start and stop only.
#include <cstddef>
#include <cstdint>

#include "arch/context.hpp"
#include "sched/scheduler.hpp"

extern "C" {

struct ito_debug_table {
  std::uint32_t version;  // bumped when the layout below changes
  std::uint32_t worker_count;
  ito::sched::worker* const* workers;  // worker_count pointers while a runtime runs
  const ito::sched::ult* main_ult;
  // ito::sched::worker
  std::uint32_t worker_index, worker_current, worker_registry_head;
  // ito::sched::ult
  std::uint32_t ult_sp, ult_id, ult_join_state, ult_blocked_in, ult_blocked_on, ult_registry_next;
  std::uint32_t ult_stack_lo, ult_stack_hi, ult_join_target;
  // Words in the saved context at ult.sp. x86-64: 16 bytes of control words
  // and limit, then r15, r14, r13, r12, rbx, rbp and the return address
  // (arch/context_x86_64.S). aarch64: FPCR and a pad word, d8-d15, x19-x28,
  // fp and lr (arch/context_aarch64.S).
  std::uint32_t context_words;
};

// offsetof on these non-standard-layout types (private members, no virtual
// bases) is exact with GCC and Clang, which is all ito builds with.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
// Not static, not const: debuggers look it up by name and it must stay in the
// symbol table of every build.
[[gnu::used, gnu::visibility("default")]] ito_debug_table ito_debug = {
    2, 0, nullptr, nullptr,
    offsetof(ito::sched::worker, index), offsetof(ito::sched::worker, current),
    offsetof(ito::sched::worker, registry) + offsetof(ito::sched::ult_registry, head),
    offsetof(ito::sched::ult, sp), offsetof(ito::sched::ult, id),
    offsetof(ito::sched::ult, join_state), offsetof(ito::sched::ult, blocked_in),
    offsetof(ito::sched::ult, blocked_on), offsetof(ito::sched::ult, registry_next),
    offsetof(ito::sched::ult, stack) + offsetof(ito::stack::stack_block, lo),
    offsetof(ito::sched::ult, stack) + offsetof(ito::stack::stack_block, hi),
    offsetof(ito::sched::ult, join_target),
#if defined(__x86_64__)
    9,
#else
    ito::arch::context_frame_bytes / 8,
#endif
};
#pragma GCC diagnostic pop

}  // extern "C"

namespace ito::sched {

void publish_debug_table(runtime_state* rt) noexcept {
  static worker* workers[options::max_workers];
  if (!rt) {
    ito_debug.worker_count = 0;
    ito_debug.workers = nullptr;
    ito_debug.main_ult = nullptr;
    return;
  }
  for (std::size_t i = 0; i < rt->workers.size(); ++i) workers[i] = rt->workers[i].get();
  ito_debug.workers = workers;
  ito_debug.main_ult = &rt->main_ult;
  ito_debug.worker_count = static_cast<std::uint32_t>(rt->workers.size());
}

}  // namespace ito::sched
