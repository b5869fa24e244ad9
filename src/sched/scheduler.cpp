// SPDX-License-Identifier: Apache-2.0
// The hot paths: spawn (child-first), finish (quick resume, direct join
// wake-up), join, yield, suspend. No locks, no allocation, no system calls here
// in steady state; stacks come from the worker's cache.
#include "sched/scheduler.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <new>

#include "arch/context.hpp"
#include "sched/branches.hpp"
#include "sched/fork_child.hpp"
#include "sched/handles.hpp"
#include "sched/idle.hpp"
#include "sched/interrupt.hpp"
#include "sched/join_word.hpp"
#include "sched/overflow.hpp"
#include "sched/registry.hpp"
#include "sched/extension.hpp"
#include "trace/trace.hpp"

#if ITO_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace ito::sched {

std::atomic<runtime_state*> g_runtime{nullptr};
namespace detail {
constinit extension* g_extensions[extension_slots] = {};
}

void install_extension(extension_slot slot, extension* e) noexcept {
  detail::g_extensions[static_cast<unsigned>(slot)] = e;
}

constinit thread_local worker* tls_worker __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {

// Set in the exit hook's argument when the finished ULT quick-resumes a parent
// that has not run since the fork (descriptors are 64-byte aligned).
constexpr std::uintptr_t quick_resume_tag = 1;

// ITO_TRACE: this worker now runs `next` (its scheduler loop when null).
inline void trace_switch(const ult* next) noexcept {
  if (next) trace::record(trace::kind::run, next->id);
  else trace::record(trace::kind::scheduler);
}

// switch_to's ending on a worker with switch extras (swap_own_eh said so):
// the program's exception globals, next's resume action, and with ult_tls
// next's thread pointer, then the switch. Out of line and entered by a tail
// call, so that switch_to's common path keeps nothing live across a call and
// saves no registers (inline, it cost yield three pushes and pops). (ult_tls
// never runs under a sanitizer: start_runtime refuses it there.)
// The sanitizers hear of the switch here, not in switch_to: TSan records
// this function's entry on the fiber in force then, and its return on the
// one it returns on, so both must be `from` (told before, every switch through
// here grew the resumed fiber's shadow stack by a frame and shrank this one's,
// until TSan crashed: a program that once aimed a signal at a ULT sends every
// switch this way).
[[gnu::noinline]] void switch_context_extras(worker* w, ult* prev, ult* next, arch::on_top_fn hook,
                                             void* arg, bool prev_dies) noexcept {
  void** save = prev ? &prev->sp : &w->scheduler_sp;
  arch::sanitizer_fiber& from = prev ? prev->fiber : w->scheduler_fiber;
  arch::sanitizer_fiber& to = next ? next->fiber : w->scheduler_fiber;
  const bool tls = switch_eh_extras(w, prev ? prev->eh : w->scheduler_eh,
                                    next ? next->eh : w->scheduler_eh, next);
  // Read after the resume action, which may have put a context in front.
  void* load = next ? next->sp : w->scheduler_sp;
  if (tls) ult_tls::arrive(w, next, nullptr);  // last before the switch
  arch::sanitizer_before_switch(from, to, prev_dies);
  arch::switch_context(save, load, arg, hook);
  arch::sanitizer_after_switch(from);
}

// Switches from the running context (prev, or the scheduler when null) to next
// (or the scheduler when null); hook(arg) runs on next's stack first.
// traced = false: the caller saw tracing off (a path that calls nothing else
// then saves no registers for the trace call).
template <bool traced = true>
inline void switch_to(worker* w, ult* prev, ult* next, arch::on_top_fn hook, void* arg,
                      bool prev_dies = false) noexcept {
  void** save = prev ? &prev->sp : &w->scheduler_sp;
  arch::sanitizer_fiber& from = prev ? prev->fiber : w->scheduler_fiber;
  arch::sanitizer_fiber& to = next ? next->fiber : w->scheduler_fiber;
  w->current = next;
  if (next) ++next->resumes;
  if constexpr (traced) trace_switch(next);
  if (swap_own_eh(w, prev ? prev->eh : w->scheduler_eh, next ? next->eh : w->scheduler_eh))
      [[unlikely]]
    return switch_context_extras(w, prev, next, hook, arg, prev_dies);
  arch::sanitizer_before_switch(from, to, prev_dies);
  arch::switch_context(save, next ? next->sp : w->scheduler_sp, arg, hook);
  arch::sanitizer_after_switch(from);
}

[[gnu::noinline]] void* hook_push_ready(void* u) noexcept {
  push_ready(current_worker(), static_cast<ult*>(u));
  return nullptr;
}

// hook_push_ready for the parent of a child-first fork (never bound): its
// common case, a deque that holds the parent's own ancestors already (no
// fence owed to idle workers, no growing), calls nothing, so it saves no
// registers; the rest goes the general way.
void* hook_push_parent(void* u) noexcept {
  if (current_worker()->deque.push_behind_others(static_cast<ult*>(u))) [[likely]] return nullptr;
  return hook_push_ready(u);
}

void* hook_push_yielded(void* p) noexcept {
  worker* w = current_worker();
  auto* u = static_cast<ult*>(p);
  if (u->bound) {
    push_ready(w, u);
  } else {
    if (w->yielded.push(u) && !w->alone) notify_work(w->rt);
  }
  return nullptr;
}

void* hook_suspend(void* self) noexcept {
  worker* w = current_worker();
  w->suspend_after(static_cast<ult*>(self), w->suspend_arg);
  return nullptr;
}

// Non-split even in libito's split-stack build (see its definition).
__attribute__((no_split_stack)) ito_exit_switch ult_main(void* data) noexcept;

// A detached ULT's frame holds a result or an exception whose destructor may
// block (lock an ito::mutex): it runs as a ULT, never in a switch hook.
void clean_orphaned_frame(void*) {
  ult* self = current_ult();
  auto cleanup = self->frame_cleanup;
  self->frame_cleanup = nullptr;
  cleanup(self->frame, self->id);
}

// The exit hook found its ULT detached with its frame still to clean (it was
// detached between ult_main's check and its end): run the cleanup as a new
// ULT on the same stack, which the finished one has just left.
void clean_frame_on_own_stack(worker* w, ult* self) noexcept {
  // A provider gave its stack away already (exited): clean up here instead.
  if (self->from_provider()) return release(self, true);
  join_word::rerun_detached(self);
  self->body = &clean_orphaned_frame;
  self->parent = nullptr;  // never a quick resume: its end must be published
  self->id_was_public = true;
  ++self->must_stay;  // the frame's objects belong to this process's heap
  self->sp = arch::make_context(self->frame, &ult_main, self);
  worker_stats::bump(w->stats.spawns);  // it will finish once more
  push_ready(w, self);
}

}  // namespace

namespace {

void exit_hook(worker* w, std::uintptr_t tagged) noexcept {
  auto* self = reinterpret_cast<ult*>(tagged & ~quick_resume_tag);
  // Before a joiner may recycle it.
  if (self->from_provider()) [[unlikely]] w->stack_provider->exited(w, self);
  if (tagged & quick_resume_tag) {
    // Nobody but the parent, which we resume now, can know this ULT: no joiner
    // or detacher can race us, and a plain store replaces the exchange.
    join_word::end_unseen(self);
    return;
  }
  std::uintptr_t old = join_word::publish_end(self);
  if (old == join_detached) {
    if (self->frame_cleanup) [[unlikely]] clean_frame_on_own_stack(w, self);
    else release(self, true);
  } else if (is_joiner(old)) {
    auto* joiner = reinterpret_cast<ult*>(old);
    if (joiner != w->current) push_ready(w, joiner);
  } else if (old == join_remote) [[unlikely]] {
    processes_extension()->ended(w, self);
  }
}

// The exit hook with a processes extension (the distributed mode): around the ordinary one, what decides
// where the next ULT on this descriptor may run and when this rank is quiescent.
[[gnu::noinline]] void exit_hook_distributed(worker* w, std::uintptr_t tagged) noexcept {
  // A lock it never released, or a past clean-up, must not pin the next ULT
  // on this descriptor to this process.
  auto* self = reinterpret_cast<ult*>(tagged & ~quick_resume_tag);
  self->must_stay = 0;
  self->near_its_data = false;
  exit_hook(w, tagged);
  // After whatever message the end sent (quiescent_locally).
  worker_stats::bump(w->stats.exit_hooks_done);
}

}  // namespace

// The finished ULT is off its stack now: only from here on may anyone free it.
extern "C" void* ito_ult_exit_hook(void* p) noexcept {
#if ITO_TSAN
  // The exit path skips the call for a null argument; TSan's, a plain
  // switch, does not.
  if (!p) return nullptr;
#endif
  worker* w = current_worker();
  const auto tagged = reinterpret_cast<std::uintptr_t>(p);
  if (processes_extension()) [[unlikely]] exit_hook_distributed(w, tagged);  // one load on the ordinary path
  else exit_hook(w, tagged);
  return nullptr;
}

namespace {

// Registers the joiner once its context is saved. If the target is no longer
// running (it ended, or another joiner or a detacher came first) the joiner
// resumes at once and looks again.
void* hook_register_joiner(void* p) noexcept {
  auto* self = static_cast<ult*>(p);
  if (!join_word::register_joiner(self->join_target, self)) push_ready(current_worker(), self);
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

// Picks what runs after `self` ends: its joiner if one waits (direct wake-up),
// else local work (usually the parent: quick resume), else the scheduler.
ito_exit_switch finish(ult* self) noexcept {
  worker* w = current_worker();
  worker_stats::bump(w->stats.finished);
  check_canary(self);
  ult* next = nullptr;
  // The exit hook's argument: self, tagged for a quick resume, or null when
  // there is nothing left for the hook to do.
  auto hook_arg = reinterpret_cast<std::uintptr_t>(self);
  std::uintptr_t s = join_word::read(self);
  auto* joiner = reinterpret_cast<ult*>(s);
  if (is_joiner(s) && (!joiner->bound || joiner->bound == w) &&
      (!joiner->may_withdraw_joins || join_word::claim_joiner_for_end(self, s))) {
    next = joiner;
    worker_stats::bump(w->stats.direct_join_wakeups);
  } else {
    next = next_local(w, w->stats.finished.load(std::memory_order_relaxed));
    if (next && next == self->parent) {
      worker_stats::bump(w->stats.quick_resumes);
      // Popped from our own deque and not switched to since the fork: the
      // parent has not seen the future yet, so nobody can join or detach us.
      if (next->resumes == self->parent_resumes && !self->id_was_public) {
        // Nobody can free self before the parent runs, so its end may be
        // stored here and the exit hook skipped (the distributed mode still
        // needs it; a stack provider, unless it can give the stack back
        // into the parent's saved context now).
        if (!processes_extension() &&
            (!self->from_provider() ||
             w->stack_provider->exited_into_parent(w, self, next))) [[likely]] {
          join_word::end_unseen(self);
          hook_arg = 0;
        } else {
          hook_arg |= quick_resume_tag;
        }
      }
    }
  }
  w->current = next;
  if (next) ++next->resumes;
  trace_switch(next);
  // self has no exception state left (its handlers are over): nothing to
  // save. Last: with ult_tls, next's thread pointer, and self's block freed.
  install_eh(w, next ? next->eh : w->scheduler_eh, next, self, next);
  return {next ? next->sp : w->scheduler_sp, reinterpret_cast<void*>(hook_arg)};
}

// Non-split even in libito's split-stack build: its handlers call libstdc++,
// which would send every split-stack call of it through __morestack_non_split.
// It runs at the top of a fresh stack or region, where there is room.
// (Declared no_split_stack above.)
// A ULT's life on whatever stack it runs: its body, what the body threw
// (kept in its frame), its ULT-local values' end. ult_main and join_inline.
[[gnu::always_inline]] inline void run_body(ult* self) noexcept {
  try {
    self->body(self->frame);
  } catch (const exit_unwind& e) {
    self->exited = true;
    self->exit_value = e.value;
    if (self->frame_catch) self->frame_catch(self->frame, true);
  } catch (...) {
    if (!self->frame_catch) fatal("an exception escaped a ULT started with the low-level fork() API");
    self->frame_catch(self->frame, false);
  }
  if (self->locals) [[unlikely]] {
    if (extension* locals = locals_extension()) locals->ult_ending(self);
  }
}

ito_exit_switch ult_main(void* data) noexcept {
  auto* self = static_cast<ult*>(data);
  arch::sanitizer_after_switch(self->fiber);
  // (A provider's ULT runs with its own split-stack limit already: the
  // context start or the made context loaded it.)
  self->unstarted.store(false, std::memory_order_relaxed);
  run_body(self);
  // Already detached: destroy the result (or report the exception) here, on
  // our own stack, where its destructors may block.
  if (self->frame_cleanup &&
      join_word::read(self) == join_detached) [[unlikely]]
    clean_orphaned_frame(self->frame);
  // The thread of a child forked from a runtime, which has no worker to finish
  // on: none, or that of a runtime the child started since, which adopted
  // this OS thread as its main ULT.
  worker* w = current_worker();
  if (forked_child_thread(w, self)) [[unlikely]] end_forked_child_thread();
  if (self->from_provider()) [[unlikely]] w->stack_provider->finish(self);
  ito_exit_switch exit = finish(self);
  w = current_worker();
  arch::sanitizer_leave_for_good();
  arch::sanitizer_before_switch(self->fiber, w->current ? w->current->fiber : w->scheduler_fiber,
                                /*from_dies=*/true);
#if ITO_TSAN
  // TSan would record this function's return on the fiber we switch to and
  // unbalance its shadow stack: leave by switching instead of returning
  // (its entry popped from this fiber's above).
  void* abandoned_sp;
  ito_context_switch(&abandoned_sp, exit.next_sp, exit.hook_arg, &ito_ult_exit_hook);
  __builtin_unreachable();
#else
  return exit;
#endif
}

}  // namespace

void set_current_worker(worker* w) noexcept { tls_worker = w; }

void fatal(const char* message) {
  std::fprintf(stderr, "ito: %s\n", message);
  std::abort();
}

ult* pop_local_slow(worker* w) noexcept {
  ult* u = nullptr;
  if ((u = w->bound_here.pop())) return u;
  if (!w->inbox.looks_empty() && (u = w->inbox.pop())) return u;
  if (!w->rt->injector.looks_empty() && (u = w->rt->injector.pop())) return u;
  // Queued branches and create_thread records before ULTs that yielded (or
  // were preempted): a ULT that yields while it waits for a child it
  // queued lets that child run, on one worker too.
  if ((u = take_own_branch(w))) return u;
  if (w->yielded.steal(u) == chase_lev_deque<ult*>::steal_result::success) return u;
  return nullptr;
}

ult* poll_outside_work(worker* w) noexcept {
  timer_queue& timers = w->rt->timers;
  // Firing makes sleepers ready on this worker (make_ready pushes locally).
  if (std::int64_t due = timers.next_deadline(); due != timer_queue::never && due <= monotonic_ns())
    timers.fire_expired(monotonic_ns());
  return pop_local_slow(w);
}

void push_ready_slow(worker* w, ult* u, bool deque_was_empty) noexcept {
  if (deque_was_empty) {
    notify_work(w->rt);
    return;
  }
  if (u->bound == w) return w->bound_here.push(u);
  u->bound->inbox.push(u);
  wake_worker(u->bound);
}

namespace {

// A descriptor at the top of stack `s`.
ult* place_descriptor(stack::stack_block s, stack_origin origin) {
  auto top = reinterpret_cast<std::uintptr_t>(s.hi - sizeof(std::uint64_t));
  auto* u = new (reinterpret_cast<void*>((top - sizeof(ult)) & ~std::uintptr_t{63})) ult;
  u->stack = s;
  u->record_floor = reinterpret_cast<std::uintptr_t>(s.lo + s.size() / 2);
  u->stack_from = origin;
  // The sanitizer fiber stays with the descriptor while it is reused (TSan's
  // fibers cost far too much to create per spawn).
  arch::sanitizer_init_fiber(u->fiber, s.lo, s.size());
  return u;
}

[[gnu::noinline]] ult* new_descriptor(worker* w) {
  stack::stack_block s = w->stacks.take(w->rt->stacks);
  worker_stats::bump(w->stats.stacks_taken);
  ult* u = place_descriptor(s, stack_origin::pool);
  registry_add(w, u);
  return u;
}

}  // namespace

ult* allocate_slow(worker* w, std::size_t frame_bytes, void** frame) {
  if (w->stack_provider) [[unlikely]] return w->stack_provider->allocate(w, frame_bytes, frame);
  // Before anything is taken or copied: throws if the frame cannot fit.
  if (frame_bytes > w->stacks.frame_limit) [[unlikely]] check_frame(w, frame_bytes);
  if (ult* u = take_released(w)) return prepare(w, u, frame_bytes, frame);
  return prepare(w, new_descriptor(w), frame_bytes, frame);
}

ult* allocate(std::size_t frame_bytes, void** frame) {
  return allocate(current_worker(), frame_bytes, frame);
}

ult* allocate_on(stack::stack_block s, stack_origin origin, std::size_t frame_bytes,
                 void** frame) {
  worker* w = current_worker();
  ult* u = place_descriptor(s, origin);
  registry_add(w, u);
  return prepare(w, u, frame_bytes, frame);
}

namespace {

// The child of a help-first fork: the parent keeps running with the future,
// so it may detach or hand it on before the child ends, and the child must
// publish its end atomically; the child starts wherever a worker picks it.
void make_startable(ult* child) noexcept {
  child->id_was_public = true;
  child->unstarted.store(true, std::memory_order_relaxed);
  if (child->from_provider()) [[unlikely]] {
    // The provider left the top in sp and the child's split-stack limit in
    // the word there: the first switch to the context loads it.
    void* top = child->sp;
    child->sp = arch::make_context(top, &ult_main, child);
    arch::set_saved_split_limit(child->sp, *static_cast<void**>(top));
    return;
  }
  child->sp = arch::make_context(child->frame, &ult_main, child);
}

void adopt(worker* w, ult* child, void (*body)(void*), bool id_was_public) noexcept {
  ult* parent = w->current;  // null on the scheduler stack (a flow node's body)
  child->body = body;
  child->parent = parent;
  child->parent_resumes = parent ? parent->resumes : 0;
  child->id_was_public = id_was_public;
  worker_stats::bump(w->stats.spawns);
}

}  // namespace

void fork_near(ult* child, void (*body)(void*), const void* data) noexcept {
  extension* p = processes_extension();
  const int where = p ? p->placement(child, data) : extension::placement_none;
  if (where != extension::placement_none) child->near_its_data = true;
  if (where < 0) return fork(child, body, /*id_was_public=*/false);
  adopt(current_worker(), child, body, false);
  make_startable(child);
  p->send_new(child, where);
}

ult* make_detached(worker* w, void (*body)(void*), void* arg) {
  void* frame = nullptr;
  ult* u = allocate(w, sizeof arg, &frame);
  std::memcpy(frame, &arg, sizeof arg);
  join_word::start_detached(u);
  adopt(w, u, body, /*id_was_public=*/true);
  make_startable(u);
  return u;
}

namespace {

// start_child_first's start with ult_tls (switch_eh said so): the child's
// thread pointer, then the start, out of line as switch_context_extras. (No
// provider's stack: the split-stack policies refuse ult_tls.)
[[gnu::noinline]] void start_child_tls(worker* w, ult* parent, ult* child,
                                       arch::on_top_fn publish_parent) noexcept {
  ult_tls::arrive(w, child, nullptr);
  ito_context_start(&parent->sp, child->frame, child, publish_parent, parent, &ult_main);
}

// Child first: the child starts at once on its own stack; the parent is
// already in the deque (parent_pushed) or is pushed by the hook once its
// context is saved.
[[gnu::always_inline]] inline void start_child_first(worker* w, ult* parent, ult* child,
                                                     bool parent_pushed, bool traced) noexcept {
  w->current = child;
  ++child->resumes;
  if (traced) trace_switch(child);
  arch::on_top_fn publish_parent = parent_pushed ? nullptr : &hook_push_parent;
  arch::sanitizer_before_switch(parent->fiber, child->fiber, false);
  // Last (the child's thread pointer, with ult_tls); the child starts with none.
  if (switch_eh(w, parent->eh, no_eh_state)) [[unlikely]]
    return start_child_tls(w, parent, child, publish_parent);
  if (child->from_provider()) [[unlikely]] {
    // Its stack lies apart from its frame: the provider left the top in sp,
    // and the child's split-stack limit word in the word there.
    ito_context_start_split(&parent->sp, child->sp, child, publish_parent, parent, &ult_main);
  } else {
    ito_context_start(&parent->sp, child->frame, child, publish_parent, parent, &ult_main);
  }
  arch::sanitizer_after_switch(parent->fiber);
}

// fork() past its common case: help-first, tracing on, or a lone worker's
// deque that must grow.
[[gnu::noinline]] void fork_elsewhere(worker* w, ult* parent, ult* child) noexcept {
  // Help-first: a bound parent must not be stolen, and the scheduler stack has
  // no context to push.
  if (!parent || parent->bound) {
    make_startable(child);
    push_ready(w, child);
    return;
  }
  // A lone worker pushes the parent first: nobody else takes from its deque,
  // so nobody can resume it before it is saved.
  if (w->alone) w->deque.push(parent);
  start_child_first(w, parent, child, w->alone, /*traced=*/true);
}

}  // namespace

// Its common case calls nothing but the context start, so it saves no
// registers of its own.
void fork(ult* child, void (*body)(void*), bool id_was_public) noexcept {
  worker* w = current_worker();
  ult* parent = w->current;
  adopt(w, child, body, id_was_public);
  if (parent && !parent->bound && !trace::g_on.load(std::memory_order_relaxed)) [[likely]] {
    if (!w->alone) return start_child_first(w, parent, child, false, /*traced=*/false);
    if (w->deque.push_if_room(parent)) return start_child_first(w, parent, child, true, false);
  }
  fork_elsewhere(w, parent, child);
}

namespace {

// Switches away and registers as child's joiner; resumes when child has ended,
// or at once if the registration failed (the caller looks again).
// (No blocked_in here: those stores cost the join ~6 ns, measured on
// create-join from the main ULT; reports find a joiner through join_target.)
// tick: ++w->picks_since_poll (next_local).
void wait_as_joiner(worker* w, ult* self, ult* child, std::uint64_t tick) {
  self->join_target = child;
  switch_to(w, self, next_local(w, tick), &hook_register_joiner, self);
}

// ---- Joining a child that has not started: run it here, as a call ----------
//
// A child forked help-first (by the bound main ULT) waits in its worker's
// deque; when its joiner finds it still there, at the bottom of its own
// worker's deque, it runs the child's body on its own stack, below its
// frames, instead of switching to a stack of the child's: no context is
// built or switched to, no exit path runs (the work-first shortcut of
// Lazy Task Creation and Lace). The child stays a ULT of its own for
// everything a program can see: its id, ULT-locals, exception state and
// join word are its own while it runs, and it may block, yield or be
// stolen (it is not bound), running on its host's stack wherever it
// goes; the host waits for it as a registered joiner and resumes as the
// body returns, on its own worker.

// How far below the host's deepest frame a child joined inline may reach
// (room is left at the bottom for signal frames and libc); null: nowhere.
char* inline_floor(const ult* host) noexcept {
  constexpr std::size_t reserve = 64 * 1024;
  if (host->inline_host) return nullptr;  // itself on its joiner's stack
  const stack::stack_block& s = stack_of(host);
  return s && s.size() > 2 * reserve ? s.lo + reserve : nullptr;
}

// Non-split in the split-stack build, as ult_main: it catches what the body
// throws. The host's stack has room for the child's whole stack size.
__attribute__((no_split_stack, noinline)) void run_inline(worker* w, ult* self, ult* child) noexcept;
void run_inline(worker* w, ult* self, ult* child) noexcept {
  self->join_target = child;
  child->unstarted.store(false, std::memory_order_relaxed);
  child->inline_host = self;
  // Its records run on the host's stack meanwhile: the full test decides.
  const std::uintptr_t own_record_floor = std::exchange(child->record_floor, ult::unknown_record_floor);
  // Sanitizers see the host's stack (and TSan its fiber's call stack) until it ends.
  const arch::sanitizer_fiber own_fiber = child->fiber;
  child->fiber = self->fiber;
  ++child->resumes;
  // The child starts with none; with ult_tls, on the worker's own thread
  // pointer (a child with a block is never run inline: join_inline).
  if (switch_eh(w, self->eh, no_eh_state)) [[unlikely]] ult_tls::arrive(w, child, nullptr);
  // And with the default floating-point modes, as a context make_context
  // built (unless ULTs run with their worker's: options::fp_modes).
  const bool carry_modes = arch::fp_modes_carried();
  arch::fp_modes own_modes{};
  if (carry_modes) {
    own_modes = arch::save_fp_modes();
    arch::change_fp_modes(own_modes, arch::default_fp_modes);
  }
  w->current = child;
  trace_switch(child);
  run_body(child);
  if (carry_modes) arch::change_fp_modes(arch::save_fp_modes(), own_modes);
  w = current_worker();  // it may have been stolen, or woken elsewhere
  // The thread of a child forked from a runtime: it has no worker to return
  // to (as in ult_main).
  if (forked_child_thread(w, child)) [[unlikely]] end_forked_child_thread();
  worker_stats::bump(w->stats.finished);
  child->fiber = own_fiber;
  child->inline_host = nullptr;
  child->record_floor = own_record_floor;
  install_eh(w, self->eh, self);
  w->current = self;
  ++self->resumes;
  trace_switch(self);
  join_word::end_hosted(child, self);
  // A bound host (the main ULT) goes back to its worker.
  if (self->bound && self->bound != w) [[unlikely]]
    switch_to(w, self, next_local(w, ++w->picks_since_poll), &hook_push_ready, self);
}

// True when child ran (and ended) here, with self its registered joiner.
// Only a child on a pool stack (not a provider's, not the caller's memory of
// pthread_attr_setstack, not a dedicated or foreign one) and without the
// processes extension (a ULT that runs elsewhere may move): `local`, when the
// caller knows there is none.
[[gnu::always_inline]] inline bool join_inline(worker* w, ult* self, ult* child, bool local) noexcept {
  // Nor a child with a TLS block of its own (ult_tls), whose end frees it in
  // finish().
  if (child->stack_from != stack_origin::pool || (!local && processes_extension()) || child->tls) return false;
  const char* floor = inline_floor(self);
  if (!floor || reinterpret_cast<const char*>(__builtin_frame_address(0)) - floor <
                    static_cast<std::ptrdiff_t>(child->stack.size()))
    return false;
  ult* bottom = nullptr;
  if (!(w->alone ? w->deque.pop_unshared(bottom) : w->deque.pop(bottom))) return false;
  // Taken from our own deque: nobody else can run it now. It may have run
  // and been woken back onto this deque since we looked, though.
  if (bottom != child || !child->unstarted.load(std::memory_order_relaxed)) {
    push_ready(w, bottom);
    return false;
  }
  // A future has one holder, who joins now: a plain store registers us.
  // Otherwise (an id, a handle) another joiner or a detacher may race us:
  // the CAS every join makes decides, and a loser gives the child back.
  if (child->has_future) {
    join_word::host_inline(child, self);
  } else if (!join_word::register_joiner(child, self)) {
    push_ready(w, child);
    return false;
  }
  worker_stats::bump(w->stats.inline_joins);
  run_inline(w, self, child);
  return true;
}

// Joins child by running it here if it still waits in our deque, else by
// switching away as its joiner; the caller reads its join word again.
// Every 64th pick goes the long way, past timers and the inbox, as a switch
// would (next_local): a host joining children inline never switches.
[[gnu::always_inline]] inline void run_or_wait_for(worker* w, ult* self, ult* child, bool local = false) {
  const std::uint64_t tick = ++w->picks_since_poll;
  if (child->unstarted.load(std::memory_order_relaxed) && (tick & (poll_interval - 1)) != 0 &&
      join_inline(w, self, child, local))
    return;
  wait_as_joiner(w, self, child, tick);
}

// ---- A join that may be interrupted (the POSIX layer's) ---------------------
//
// pthread_join must run a signal's handler aimed at the joiner while it
// waits, and act on a cancellation there: interrupt() (sched/interrupt.hpp)
// withdraws the joiner (J → running) unless the child's end took it first.
// The record says an interrupt came; the registration, made after the
// joiner's context is saved, looks at it too, so that one that came before
// the joiner was registered is not lost.

struct join_interrupt_record : interruptible_wait {
  ult* joiner = nullptr;
  ult* child = nullptr;
  std::atomic<bool> asked{false};
};

void end_join_wait(interruptible_wait* i) noexcept {
  auto* r = static_cast<join_interrupt_record*>(i);
  r->asked.store(true, std::memory_order_seq_cst);
  if (join_word::withdraw_joiner(r->child, r->joiner)) make_ready(r->joiner);
}

void* hook_register_interruptible_joiner(void* p) noexcept {
  auto* r = static_cast<join_interrupt_record*>(p);
  ult* joiner = r->joiner;  // r dies once the joiner runs
  if (!join_word::register_joiner(r->child, joiner) ||
      (r->asked.load(std::memory_order_seq_cst) && join_word::withdraw_joiner(r->child, joiner)))
    push_ready(current_worker(), joiner);
  return nullptr;
}

// True when interrupted before the child ended. An unstarted child in the
// joiner's own deque runs inline, as run_or_wait_for's: that is no wait.
bool wait_as_interruptible_joiner(worker* w, ult* self, ult* child) {
  const std::uint64_t tick = ++w->picks_since_poll;
  if (child->unstarted.load(std::memory_order_relaxed) && (tick & (poll_interval - 1)) != 0 &&
      join_inline(w, self, child, false))
    return false;
  self->may_withdraw_joins = true;  // before it registers: its child's end reads it
  join_interrupt_record r;
  r.end = &end_join_wait;
  r.joiner = self;
  r.child = child;
  if (!publish_interruptible(self, &r)) return true;  // an interrupt came already
  self->join_target = child;
  switch_to(w, self, next_local(w, tick), &hook_register_interruptible_joiner, &r);
  unpublish_interruptible(self, &r);
  return r.asked.load(std::memory_order_acquire) && join_word::read(child) != ended_for(self);
}

}  // namespace

namespace {

// With a processes extension: the running ULT stays in this process while it
// joins (ult::must_stay). One load and a predicted branch without one.
struct joining_here {
  ult* self = nullptr;
  joining_here() noexcept {
    if (processes_extension()) [[unlikely]] {
      self = current_ult();
      ++self->must_stay;
    }
  }
  ~joining_here() {
    if (self) [[unlikely]] --self->must_stay;
  }
  joining_here(const joining_here&) = delete;
  joining_here& operator=(const joining_here&) = delete;
};

// wait_finished with the processes extension: the child may be, or go, in
// another process.
[[gnu::noinline]] void wait_finished_among_processes(ult* child) {
  const joining_here stay;
  if (is_foreign(child)) {
    if (processes_extension()->wait(child) != 0) fatal("a future's ULT is joined by someone else (distributed mode)");
    // Known here now, unless this ULT went to the child's process instead
    // (a result that stays there): then it waits as a local joiner.
    if (is_foreign(child)) return;
  }
  for (;;) {
    std::uintptr_t s = join_word::read(child);
    if (has_ended(s)) return;
    // It migrated (or did and came back) while we were about to wait.
    if (s == join_remote) {
      if (processes_extension()->wait(child) != 0) fatal("a future's ULT is joined by someone else (distributed mode)");
      continue;
    }
    worker* w = current_worker();
    run_or_wait_for(w, w->current, child);
  }
}

}  // namespace

void wait_finished(ult* child) {
  if (processes_extension()) [[unlikely]] return wait_finished_among_processes(child);
  // One process (the extension comes and goes only around a runtime).
  for (;;) {
    if (has_ended(join_word::read(child))) return;
    worker* w = current_worker();
    run_or_wait_for(w, w->current, child, true);
  }
}

int join_claim(ult* child, bool interruptible) {
  ult* self = current_ult();
  if (child == self) return EDEADLK;
  const joining_here stay;
  if (is_foreign(child)) [[unlikely]] {
    if (int e = processes_extension()->wait(child)) return e;
  }
  const std::uintptr_t mine = ended_for(self);
  std::uintptr_t s = join_word::read(child);
  for (;;) {
    if (s == mine) return 0;  // it ended while we were its joiner
    if (s == join_finished) {
      if (join_word::claim_finished(child, s)) return 0;
    } else if (s == join_running) {
      if (!interruptible) [[likely]] {
        run_or_wait_for(current_worker(), self, child);  // we may resume on another worker
      } else if (wait_as_interruptible_joiner(current_worker(), self, child)) {
        mark_interrupted(self);
        return EINTR;
      }
      s = join_word::read(child);
    } else if (s == join_remote) [[unlikely]] {
      if (int e = processes_extension()->wait(child)) return e;
      s = join_word::read(child);
    } else {
      return s == join_released ? ESRCH : EINVAL;
    }
  }
}

namespace {

// release() for a ULT whose stack is not the pool's: the runtime's stack
// provider's (which owns the descriptor too), a dedicated mapping or the
// caller's memory.
[[gnu::noinline]] void release_elsewhere(ult* u) {
  if (u->stack_from == stack_origin::foreign) return processes_extension()->release(u);
  if (u->from_provider())
    return g_runtime.load(std::memory_order_relaxed)->stack_provider->release(current_worker(), u);
  registry_remove(u);
#if ITO_ASAN
  // The caller may reuse its memory: clear the redzones our frames left.
  __asan_unpoison_memory_region(u->stack.lo, u->stack.size() - sizeof(std::uint64_t));
#endif
  arch::sanitizer_destroy_fiber(u->fiber);
  release_custom_stack(u->stack, u->stack_from);
}

}  // namespace

void release(ult* u, bool orphaned) {
  if (u->frame_cleanup) u->frame_cleanup(u->frame, orphaned ? u->id : 0);
  if (u->handle) [[unlikely]] handles::drop(u);
  // Reset what allocate() does not set, so that reuse is cheap.
  join_word::retire(u);
  u->frame_cleanup = nullptr;
  u->frame_catch = nullptr;
  u->frame_error_offset = 0;
  u->frame_result_local = false;
  u->exited = false;
  // Written only when set: a racing id-based join of a ULT no future owns
  // (two joins of one id, one wins) reads the flag while the winner releases.
  if (u->has_future) u->has_future = false;
  u->locals = nullptr;
  worker* w = current_worker();
  if (u->stack_from != stack_origin::pool) [[unlikely]] {
    // A provider's ULT released on one of its runtime's workers: straight to it.
    if (u->from_provider() && w && w->stack_provider) return w->stack_provider->release(w, u);
    return release_elsewhere(u);
  }
#if ITO_ASAN
  // Frames of a finished ULT never returned; clear their redzones for reuse.
  __asan_unpoison_memory_region(u->stack.lo, u->stack.size() - sizeof(std::uint64_t));
#endif
  runtime_state* rt = g_runtime.load(std::memory_order_relaxed);
  if (w && w->rt == rt && w->free_count < worker::max_free_ults) [[likely]] {
    u->next = w->free_ults;
    w->free_ults = u;
    ++w->free_count;
  } else if (w && w->rt == rt) {
    registry_remove(u);
    arch::sanitizer_destroy_fiber(u->fiber);
    w->stacks.give(rt->stacks, u->stack);
  } else {
    registry_remove(u);
    arch::sanitizer_destroy_fiber(u->fiber);
    rt->stacks.release(u->stack);
  }
}

int detach(ult* child) {
  if (is_foreign(child)) [[unlikely]] return processes_extension()->detach(child);
  std::uintptr_t s = join_word::read(child);
  for (;;) {
    if (s == join_remote) [[unlikely]] {
      if (int e = processes_extension()->detach(child); e != EAGAIN) return e;
      s = join_word::read(child);
      continue;
    }
    if (s == join_running) {
      if (join_word::detach_running(child, s)) return 0;
    } else if (s == join_finished) {
      if (join_word::claim_finished(child, s)) {
        release(child, true);
        return 0;
      }
    } else {
      return s == join_released ? ESRCH : EINVAL;
    }
  }
}

namespace {

// yield() past its common case; yields_since_scheduler already counts this one.
[[gnu::noinline]] void yield_elsewhere(worker* w, ult* self, bool push_to_head) {
  // Now and then pass through the scheduler loop, so timers and ULTs woken
  // from other threads are not starved by two ULTs yielding to each other.
  ult* next = nullptr;
  if (w->yields_since_scheduler < 64) next = pop_local(w);
  if (!next) {
    w->yields_since_scheduler = 0;
    switch_to(w, self, nullptr, &hook_push_yielded, self);
    return;
  }
  if (w->alone && !push_to_head) {
    // As in fork: on a lone worker nobody can resume self before it is saved.
    push_ready(w, self);
    return switch_to(w, self, next, nullptr, nullptr);
  }
  switch_to(w, self, next, push_to_head ? &hook_push_yielded : &hook_push_ready, self);
}

}  // namespace

void preempt_current(worker* w, ult* self) noexcept {
  w->yields_since_scheduler = 0;
  switch_to(w, self, nullptr, &hook_push_yielded, self);
}

// Its common case calls nothing but the switch, so it saves no registers of
// its own (the switch saves them).
void yield(bool push_to_head) {
  worker* w = current_worker();
  ult* self = w->current;
  ult* next;
  // A lone worker's: self takes the deque slot of the ULT it switches to.
  // Also a bound ULT (the main ULT): with nobody to steal it, the only
  // worker, the one it is bound to, is the one that takes it out.
  // Tracing takes the other path, so this one calls nothing but the switch.
  if (++w->yields_since_scheduler < 64 && w->alone && !push_to_head &&
      !trace::g_on.load(std::memory_order_relaxed) && w->deque.swap_bottom_unshared(self, next))
      [[likely]] {
    // Both are ULTs (ito::yield checked self; deques hold no nulls): let the
    // compiler drop switch_to's tests for the scheduler's context.
    if (!self || !next) __builtin_unreachable();
    return switch_to<false>(w, self, next, nullptr, nullptr);
  }
  yield_elsewhere(w, self, push_to_head);
}

void suspend(void (*after)(ult*, void*), void* arg, const char* blocked_in,
             const void* blocked_on) {
  worker* w = current_worker();
  ult* self = w->current;
  w->suspend_after = after;
  w->suspend_arg = arg;
  self->blocked_in = blocked_in;
  self->blocked_on = blocked_on;
  switch_to(w, self, next_local(w, ++w->picks_since_poll), &hook_suspend, self);
  self->blocked_in = nullptr;
}

void make_ready(ult* u) {
  worker* w = current_worker();
  runtime_state* rt = g_runtime.load(std::memory_order_acquire);
  if (w && w->rt == rt) {
    push_ready(w, u);
  } else {
    // Another OS thread. Once u is published it may run, end and be the
    // last ULT, and the runtime may be stopped while this thread still wakes
    // a worker: stop_runtime waits until no waker is left in here.
    rt->outside_wakers.fetch_add(1, std::memory_order_seq_cst);
    if (u->bound) {
      u->bound->inbox.push(u);
      wake_worker(u->bound);
    } else {
      rt->injector.push(u);
      notify_work(rt);
    }
    rt->outside_wakers.fetch_sub(1, std::memory_order_release);
  }
}

void sleep_until_ns(std::int64_t deadline_ns) {
  // The timer is armed while the ULT still runs, so that adding it (which
  // allocates) may fail with an exception to the caller rather than inside a
  // switch hook. It may then fire before the context is saved: the hook and
  // the timer each count an arrival, and the second makes the ULT runnable.
  struct sleeper : timer_entry {
    ult* self = nullptr;
    std::atomic<unsigned> arrivals{0};
    void arrive() {
      if (arrivals.fetch_add(1, std::memory_order_acq_rel) != 0) make_ready(self);
    }
  } s;
  s.deadline_ns = deadline_ns;
  s.self = current_ult();
  s.fire = [](timer_entry* t) { static_cast<sleeper*>(t)->arrive(); };
  runtime_state* rt = current_worker()->rt;
  rt->timers.add(&s);
  notify_work(rt);  // a parked worker must recompute how long it may sleep
  suspend([](ult*, void* arg) { static_cast<sleeper*>(arg)->arrive(); }, &s, "sleep");
}

void exit_current(void* value) { throw exit_unwind{value}; }

// The scheduler context of a worker whose OS stack belongs to the main ULT.
ito_exit_switch scheduler_entry(void* data) noexcept {
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
