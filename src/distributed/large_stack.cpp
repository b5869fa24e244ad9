// SPDX-License-Identifier: Apache-2.0
// A call from a ULT's stack onto its worker's signal stack and back
// (large_stack.hpp): a context started there, which resumes its caller when
// the body returns.
#include "distributed/large_stack.hpp"

#include <exception>

#include "arch/context.hpp"
#include "arch/sanitizer.hpp"
#include "sched/overflow.hpp"

namespace ito::dist::detail {
namespace {

struct signal_stack_call {
  void (*body)(void*) = nullptr;
  void* arg = nullptr;
  void* caller_sp = nullptr;  // the caller's context while the body runs
  std::exception_ptr error;
#if ITO_ASAN
  void* caller_fake_stack = nullptr;
  const void* caller_bottom = nullptr;
  std::size_t caller_size = 0;
#endif
};

ito_exit_switch run_body(void* p) {
  auto* call = static_cast<signal_stack_call*>(p);
#if ITO_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &call->caller_bottom, &call->caller_size);
#endif
  try {
    call->body(call->arg);
  } catch (...) {
    call->error = std::current_exception();
  }
#if ITO_ASAN
  // This context ends here: nothing of its fake stack to keep.
  __sanitizer_start_switch_fiber(nullptr, call->caller_bottom, call->caller_size);
#endif
  return {call->caller_sp, nullptr};
}

}  // namespace

void run_on_signal_stack(void (*body)(void*), void* arg) {
  const sched::worker* w = sched::current_worker();
  const sched::ult* u = sched::current_ult();
  char* const lo = w ? static_cast<char*>(w->altstack) : nullptr;
  const char probe = 0;
  const bool on_it = lo && &probe >= lo && &probe < lo + sched::altstack_bytes;
  if (!u || !u->stack || !lo || on_it) return body(arg);
  signal_stack_call call;
  call.body = body;
  call.arg = arg;
#if ITO_ASAN
  __sanitizer_start_switch_fiber(&call.caller_fake_stack, lo, sched::altstack_bytes);
#endif
  // A signal that comes meanwhile (a DSM fault while the body reads a page)
  // finds the thread on its signal stack already and runs below the body.
  ito_context_start(&call.caller_sp, lo + sched::altstack_bytes, &call, nullptr, nullptr,
                    &run_body);
#if ITO_ASAN
  __sanitizer_finish_switch_fiber(call.caller_fake_stack, nullptr, nullptr);
#endif
  if (call.error) std::rethrow_exception(call.error);
}

}  // namespace ito::dist::detail
