// The hot paths: spawn (child-first), finish (quick resume, direct join
// wake-up), join, yield, suspend. No locks, no allocation, no system calls here
// in steady state; stacks come from the worker's cache.
#include "sched/scheduler.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "arch/context.hpp"
#include "sched/idle.hpp"

#if ITO_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace ito::sched {

std::atomic<runtime_state*> g_runtime{nullptr};
void (*g_destroy_locals)(ult* u) = nullptr;

thread_local worker* tls_worker __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {

// Canary written at the bottom of a stack that has no guard page.
constexpr std::uint64_t stack_canary = 0x17017017DEADBEEFull;

// Switches from the running context (prev, or the scheduler when null) to next
// (or the scheduler when null); hook(arg) runs on next's stack first.
inline void switch_to(worker* w, ult* prev, ult* next, arch::on_top_fn hook, void* arg,
                      bool prev_dies = false) noexcept {
  void** save = prev ? &prev->sp : &w->scheduler_sp;
  void* load = next ? next->sp : w->scheduler_sp;
  arch::sanitizer_fiber& from = prev ? prev->fiber : w->scheduler_fiber;
  arch::sanitizer_fiber& to = next ? next->fiber : w->scheduler_fiber;
  w->current = next;
  arch::sanitizer_before_switch(from, to, prev_dies);
  arch::switch_context(save, load, arg, hook);
  arch::sanitizer_after_switch(from);
}

void* hook_push_ready(void* u) noexcept {
  push_ready(current_worker(), static_cast<ult*>(u));
  return nullptr;
}

void* hook_push_yielded(void* p) noexcept {
  worker* w = current_worker();
  auto* u = static_cast<ult*>(p);
  if (u->bound) {
    push_ready(w, u);
  } else {
    if (w->yielded.push(u)) notify_work(w->rt);
  }
  return nullptr;
}

void* hook_suspend(void* self) noexcept {
  worker* w = current_worker();
  w->suspend_after(static_cast<ult*>(self), w->suspend_arg);
  return nullptr;
}

// The finished ULT is off its stack now: only from here on may anyone free it.
void* hook_publish_finished(void* p) noexcept {
  worker* w = current_worker();
  auto* self = static_cast<ult*>(p);
  arch::sanitizer_destroy_fiber(self->fiber);
  std::uintptr_t old = self->join_state.exchange(join_finished, std::memory_order_acq_rel);
  if (old == join_detached) {
    release(self);
  } else if (is_joiner(old)) {
    auto* joiner = reinterpret_cast<ult*>(old);
    if (joiner != w->current) push_ready(w, joiner);
  }
  return nullptr;
}

void* hook_register_joiner(void* p) noexcept {
  auto* self = static_cast<ult*>(p);
  std::uintptr_t expected = join_running;
  if (!self->join_target->join_state.compare_exchange_strong(
          expected, reinterpret_cast<std::uintptr_t>(self), std::memory_order_acq_rel,
          std::memory_order_acquire)) {
    push_ready(current_worker(), self);  // it finished meanwhile
  }
  return nullptr;
}

void check_canary(const ult* u) {
  if (u->stack && !u->stack.guarded) {
    std::uint64_t c;
    std::memcpy(&c, u->stack.lo, sizeof c);
    if (c != stack_canary) {
      std::fprintf(stderr, "ito: stack overflow in ULT %llu (stack %zu bytes, no guard page)\n",
                   static_cast<unsigned long long>(u->id), u->stack.size());
      std::abort();
    }
  }
}

[[noreturn]] void finish(ult* self) noexcept {
  worker* w = current_worker();
  worker_stats::bump(w->stats.finished);
  check_canary(self);
  ult* next = nullptr;
  std::uintptr_t s = self->join_state.load(std::memory_order_acquire);
  if (is_joiner(s) && (!reinterpret_cast<ult*>(s)->bound || reinterpret_cast<ult*>(s)->bound == w)) {
    next = reinterpret_cast<ult*>(s);  // direct wake-up: run the joiner right away
    worker_stats::bump(w->stats.direct_join_wakeups);
  } else {
    next = pop_local(w);
    if (next && next == self->parent) worker_stats::bump(w->stats.quick_resumes);
  }
  switch_to(w, self, next, hook_publish_finished, self, /*prev_dies=*/true);
  __builtin_unreachable();
}

[[noreturn]] void ult_entry(void*, void* data) noexcept {
  auto* self = static_cast<ult*>(data);
  arch::sanitizer_after_switch(self->fiber);
  try {
    self->body(self->frame);
  } catch (const exit_unwind& e) {
    self->exited = true;
    self->exit_value = e.value;
  } catch (...) {
    fatal("an exception escaped a ULT started with the low-level fork() API");
  }
  if (self->locals && g_destroy_locals) g_destroy_locals(self);
  finish(self);
}

}  // namespace

void set_current_worker(worker* w) noexcept { tls_worker = w; }

void fatal(const char* message) {
  std::fprintf(stderr, "ito: %s\n", message);
  std::abort();
}

ult* pop_local(worker* w) noexcept {
  ult* u = nullptr;
  if (w->deque.pop(u)) return u;
  if (!w->inbox.looks_empty() && (u = w->inbox.pop())) return u;
  if (!w->rt->injector.looks_empty() && (u = w->rt->injector.pop())) return u;
  if (w->yielded.steal(u) == chase_lev_deque<ult*>::steal_result::success) return u;
  return nullptr;
}

void push_ready(worker* w, ult* u) noexcept {
  if (u->bound) {
    u->bound->inbox.push(u);
    if (u->bound != w) wake_worker(u->bound);
    return;
  }
  // Only a push onto an empty deque pays for the fence (see idle.hpp).
  if (w->deque.push(u)) notify_work(w->rt);
}

ult* allocate(std::size_t frame_bytes, void** frame) {
  worker* w = current_worker();
  stack::stack_block s = w->stacks.take(w->rt->stacks);
  // The top word of every stack counts its reuses; it outlives the descriptor.
  auto* generation = reinterpret_cast<std::uint32_t*>(s.hi - sizeof(std::uint64_t));
  auto top = reinterpret_cast<std::uintptr_t>(generation);
  auto* u = new (reinterpret_cast<void*>((top - sizeof(ult)) & ~std::uintptr_t{63})) ult;
  u->generation = ++*generation;
  u->stack = s;
  u->id = (w->next_id++ << 10) | w->index;
  auto frame_top = reinterpret_cast<std::uintptr_t>(u);
  *frame = reinterpret_cast<void*>((frame_top - frame_bytes) & ~std::uintptr_t{15});
  u->frame = *frame;
  if (!s.guarded) std::memcpy(s.lo, &stack_canary, sizeof stack_canary);
  arch::sanitizer_init_fiber(u->fiber, s.lo, s.size());
  return u;
}

void fork(ult* child, void (*body)(void*)) {
  worker* w = current_worker();
  ult* parent = w->current;
  child->body = body;
  child->parent = parent;
  child->sp = arch::make_context(child->frame, &ult_entry, child);
  worker_stats::bump(w->stats.spawns);
  if (parent->bound) {  // a bound parent must not be stolen: help-first
    push_ready(w, child);
    return;
  }
  switch_to(w, parent, child, &hook_push_ready, parent);
}

void wait_finished(ult* child) {
  if (child->join_state.load(std::memory_order_acquire) == join_finished) return;
  worker* w = current_worker();
  ult* self = w->current;
  self->join_target = child;
  switch_to(w, self, pop_local(w), &hook_register_joiner, self);
}

void release(ult* u) {
  if (u->frame_cleanup) u->frame_cleanup(u->frame);
  u->join_state.store(join_released, std::memory_order_relaxed);
  stack::stack_block s = u->stack;
#if ITO_ASAN
  // Frames of a finished ULT never returned; clear their redzones for reuse.
  __asan_unpoison_memory_region(s.lo, s.size() - sizeof(std::uint64_t));
#endif
  if (worker* w = current_worker(); w && w->rt == g_runtime.load(std::memory_order_relaxed)) {
    w->stacks.give(w->rt->stacks, s);
  } else {
    g_runtime.load(std::memory_order_acquire)->stacks.release(s);
  }
}

int detach(ult* child) {
  std::uintptr_t expected = join_running;
  if (child->join_state.compare_exchange_strong(expected, join_detached,
                                                std::memory_order_acq_rel)) {
    return 0;
  }
  if (expected == join_finished) {
    release(child);
    return 0;
  }
  return EINVAL;
}

void yield(bool push_to_head) {
  worker* w = current_worker();
  ult* self = w->current;
  // Now and then pass through the scheduler loop, so timers and ULTs woken
  // from other threads are not starved by two ULTs yielding to each other.
  ult* next = nullptr;
  if (++w->yields_since_scheduler < 64) next = pop_local(w);
  if (!next) {
    w->yields_since_scheduler = 0;
    switch_to(w, self, nullptr, &hook_push_yielded, self);
    return;
  }
  switch_to(w, self, next, push_to_head ? &hook_push_yielded : &hook_push_ready, self);
}

void suspend(void (*after)(ult*, void*), void* arg) {
  worker* w = current_worker();
  ult* self = w->current;
  w->suspend_after = after;
  w->suspend_arg = arg;
  switch_to(w, self, pop_local(w), &hook_suspend, self);
}

void make_ready(ult* u) {
  worker* w = current_worker();
  runtime_state* rt = g_runtime.load(std::memory_order_acquire);
  if (w && w->rt == rt) {
    push_ready(w, u);
  } else if (u->bound) {
    u->bound->inbox.push(u);
    wake_worker(u->bound);
  } else {
    rt->injector.push(u);
    notify_work(rt);
  }
}

void sleep_until_ns(std::int64_t deadline_ns) {
  struct sleeper : timer_entry {
    ult* self = nullptr;
  } s;
  s.deadline_ns = deadline_ns;
  s.self = current_ult();
  s.fire = [](timer_entry* t) { make_ready(static_cast<sleeper*>(t)->self); };
  suspend(
      [](ult*, void* arg) {
        runtime_state* rt = current_worker()->rt;
        rt->timers.add(static_cast<timer_entry*>(arg));
        notify_work(rt);  // a parked worker must recompute how long it may sleep
      },
      &s);
}

void exit_current(void* value) { throw exit_unwind{value}; }

// The scheduler context of a worker whose OS stack belongs to the main ULT.
void scheduler_entry(void*, void* data) noexcept {
  auto* w = static_cast<worker*>(data);
  arch::sanitizer_after_switch(w->scheduler_fiber);
  scheduler_loop(w);
  fatal("worker 0's scheduler loop ended while the main ULT still runs");
}

void* make_scheduler_context(worker* w) {
  return arch::make_context(w->scheduler_stack.hi, &scheduler_entry, w);
}

void run_ult(worker* w, ult* u) noexcept { switch_to(w, nullptr, u, nullptr, nullptr); }

}  // namespace ito::sched
