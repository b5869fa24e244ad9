// SPDX-License-Identifier: Apache-2.0
#include "sched/resume_action.hpp"

#include <atomic>
#include <cstdint>

#include "arch/context.hpp"
#include "sched/scheduler.hpp"

namespace ito::sched {
namespace {

std::atomic<resume_action_fn> g_action{nullptr};
std::atomic<bool> g_asked{false};

// What the injected context needs: kept just below the saved context, in
// memory nothing else uses until that context resumes.
struct injected {
  ult* self;
  void* saved_sp;
};

ito_exit_switch run_then_resume(void* p) noexcept {
  const injected in = *static_cast<injected*>(p);
  arch::sanitizer_after_switch(in.self->fiber);
  if (resume_action_fn action = g_action.load(std::memory_order_acquire)) {
    try {
      action(in.self);
    } catch (const exit_unwind& e) {
      // pthread_exit from a handler: this context cannot unwind into the
      // suspended one (ito's frames in between are noexcept, and the
      // trampoline ends the stack). The ULT resumes and exits at its next
      // point that can (ult.hpp, exit_deferred_for).
      in.self->exit_deferred_for = in.self->id;
      in.self->exit_deferred_value = e.value;
    }
  }
  // The ULT may have been switched out and back in inside the action (a
  // handler that blocked): its saved context is still the one below which
  // this context was made. A null hook argument: the trampoline calls nothing.
  // The saved side finishes a switch of the sanitizers' as it resumes.
  arch::sanitizer_before_switch(in.self->fiber, in.self->fiber, false);
  return {in.saved_sp, nullptr};
}

}  // namespace

void set_resume_action(resume_action_fn action) noexcept {
  g_action.store(action, std::memory_order_release);
}

bool resume_actions_asked() noexcept { return g_asked.load(std::memory_order_seq_cst); }

void ask_resume_action(ult* u) noexcept {
  u->resume_action_pending.store(true, std::memory_order_release);
  if (!g_asked.exchange(true, std::memory_order_seq_cst)) {
    runtime_state* rt = g_runtime.load(std::memory_order_acquire);
    if (rt)
      for (auto& w : rt->workers) __atomic_store_n(&w->switch_extras, true, __ATOMIC_SEQ_CST);
  }
}

void arrive_with_resume_action(ult* next) noexcept {
  if (!next->resume_action_pending.exchange(false, std::memory_order_acq_rel)) return;
  // A red zone's worth of room, then the record, then the new context.
  auto top = reinterpret_cast<std::uintptr_t>(next->sp) - 128 - sizeof(injected);
  top &= ~std::uintptr_t{15};
  auto* in = reinterpret_cast<injected*>(top);
  in->self = next;
  in->saved_sp = next->sp;
  next->sp = arch::make_context(in, &run_then_resume, in);
}

}  // namespace ito::sched
