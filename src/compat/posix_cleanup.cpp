// SPDX-License-Identifier: Apache-2.0
// pthread_cleanup_push/pop handlers on ULTs, and pthread_exit, which runs
// them.
//
// glibc's macros come in three forms. C++ (an object whose destructor runs)
// and C with -fexceptions (a cleanup attribute) run their handlers as the
// stack unwinds, and ito_exit unwinds the ULT's stack with an exception: they
// need nothing here. Plain C records a jump buffer with
// __pthread_register_cancel, in the OS thread's descriptor, and glibc's
// pthread_exit longjmps into each recorded frame, which runs its handler and
// calls __pthread_unwind_next. A ULT moves between OS threads, so ito keeps
// that chain per ULT (in a ULT-local key) and does the same jumps itself.
// The old _pthread_cleanup_push ABI (a routine and argument in a buffer) gets
// a per-ULT chain too, run as glibc runs it: each when the jumps pass its
// frame.
#define ITO_PTHREAD_NO_RENAME 1
#include <setjmp.h>

#include "compat/posix_internal.hpp"
#include "ito/ito.h"
#include "ito/pthread.h"
#include "ito/sync.hpp"

namespace ito::posix {
namespace {

// ULT-local heads of the two chains; no destructor (the buffers live in the
// ULT's own frames).
ito::key jump_chain_key() {
  static const ito::key k = ito::key_create(nullptr);
  return k;
}
ito::key routine_chain_key() {
  static const ito::key k = ito::key_create(nullptr);
  return k;
}

// glibc's private words of __pthread_unwind_buf_t: ito links the chain
// through the first (glibc's `prev` too) and carries pthread_exit's value
// in the last while the handlers run.
__pthread_unwind_buf_t*& prev_of(__pthread_unwind_buf_t* b) {
  return reinterpret_cast<__pthread_unwind_buf_t*&>(b->__pad[0]);
}
void*& exit_value_of(__pthread_unwind_buf_t* b) { return b->__pad[3]; }

__pthread_unwind_buf_t* jump_chain() {
  return static_cast<__pthread_unwind_buf_t*>(ito::get_specific(jump_chain_key()));
}
_pthread_cleanup_buffer* routine_chain() {
  return static_cast<_pthread_cleanup_buffer*>(ito::get_specific(routine_chain_key()));
}

// Runs (and pops) the routine-chain handlers in frames deeper than `frame`
// (all of them when null): a deeper frame has a lower address.
void run_routines_below(const void* frame) {
  while (_pthread_cleanup_buffer* b = routine_chain()) {
    if (frame && static_cast<const void*>(b) >= frame) break;
    ito::set_specific(routine_chain_key(), b->__prev);
    if (b->__routine) b->__routine(b->__arg);
  }
}

[[noreturn]] void finish_exit(void* value) {
  run_routines_below(nullptr);
  if (sched::current_ult()->bound) wait_for_others_then_exit();
  ito_exit(value);  // unwinds: the C++ and -fexceptions handlers run now
}

// Jumps into the innermost frame that registered a handler; it runs it and
// calls __pthread_unwind_next, which comes back here. When none is left,
// the thread ends.
[[noreturn]] void unwind_from(void* value) {
  __pthread_unwind_buf_t* b = jump_chain();
  if (!b) finish_exit(value);
  run_routines_below(b);
  ito::set_specific(jump_chain_key(), prev_of(b));  // popped before it runs, as glibc
  exit_value_of(b) = value;
  // Saved by the macro with __sigsetjmp(buf, 0): glibc's jmp_buf layout
  // without a signal mask, which siglongjmp does not read then.
  siglongjmp(reinterpret_cast<__jmp_buf_tag*>(b->__cancel_jmp_buf), 1);
}

}  // namespace
}  // namespace ito::posix

extern "C" {

void ito_pthread_exit(void* retval) {
  // A worker's own context: a signal handler ran there while no ULT did.
  if (!ito::sched::current_ult()) {
    if (ito::sched::worker* w = ito::sched::current_worker()) ito::posix::exit_outside_any_ult(w);
  }
  if (ito::posix::ensure_runtime() == 0) ito::posix::unwind_from(retval);
  ito_exit(retval);  // not a ULT: ito_exit says so
}

void ito_pthread_register_cancel(__pthread_unwind_buf_t* buf) {
  ito::posix::prev_of(buf) = ito::posix::jump_chain();
  ito::set_specific(ito::posix::jump_chain_key(), buf);
}

void ito_pthread_unregister_cancel(__pthread_unwind_buf_t* buf) {
  ito::set_specific(ito::posix::jump_chain_key(), ito::posix::prev_of(buf));
}

// The _defer/_restore forms also switch the cancellation type: ito never
// cancels, so they are the plain ones.
void ito_pthread_register_cancel_defer(__pthread_unwind_buf_t* buf) {
  ito_pthread_register_cancel(buf);
}
void ito_pthread_unregister_cancel_restore(__pthread_unwind_buf_t* buf) {
  ito_pthread_unregister_cancel(buf);
}

void ito_pthread_unwind_next(__pthread_unwind_buf_t* buf) {
  ito::posix::unwind_from(ito::posix::exit_value_of(buf));
}

void ito_pthread_cleanup_push_routine(struct _pthread_cleanup_buffer* buffer,
                                      void (*routine)(void*), void* arg) {
  buffer->__routine = routine;
  buffer->__arg = arg;
  buffer->__canceltype = 0;
  buffer->__prev = ito::posix::routine_chain();
  ito::set_specific(ito::posix::routine_chain_key(), buffer);
}

void ito_pthread_cleanup_pop_routine(struct _pthread_cleanup_buffer* buffer, int execute) {
  ito::set_specific(ito::posix::routine_chain_key(), buffer->__prev);
  if (execute && buffer->__routine) buffer->__routine(buffer->__arg);
}

}  // extern "C"
