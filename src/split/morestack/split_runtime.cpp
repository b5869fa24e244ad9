// SPDX-License-Identifier: Apache-2.0
// The C++ half of ito's split-stack runtime, linked into programs built with
// -fsplit-stack (CMake: ito::split_stack). Built WITHOUT -fsplit-stack. With
// morestack_x86_64.S it defines every libgcc split-stack symbol such programs
// can reference, so libgcc's generic-morestack.o (which blocks signals on each
// segment change, ~1 µs) is never pulled in.
#include <pthread.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>

#include "arch/context.hpp"
#include "split/split_stack.hpp"

// Tells libito that lazy and fair_use can run in this program.
extern "C" const int ito_split_stack_runtime = 1;

extern "C" {

// alloca / variable-length arrays that do not fit below the limit.
void* __morestack_allocate_stack_space(std::size_t bytes) { return ito_split_alloca(bytes); }

// gcc links split-stack programs with --wrap=pthread_create. glibc reuses thread
// control blocks without clearing the limit word: a new thread starts with none
// (split-stack code then runs on its whole OS stack, as before the split).
int __real_pthread_create(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

namespace {
struct thread_start {
  void* (*fn)(void*);
  void* arg;
};
void* start_without_limit(void* p) {
  ito::arch::set_split_limit(nullptr);
  thread_start s = *static_cast<thread_start*>(p);
  std::free(p);
  return s.fn(s.arg);
}
}  // namespace

int __wrap_pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*fn)(void*),
                          void* arg) {
  auto* s = static_cast<thread_start*>(std::malloc(sizeof(thread_start)));
  if (!s) return EAGAIN;
  s->fn = fn;
  s->arg = arg;
  int err = __real_pthread_create(thread, attr, &start_without_limit, s);
  if (err != 0) std::free(s);
  return err;
}

// ito never blocks signals around segment changes: handlers must run on a
// sigaltstack (SA_ONSTACK) and be built without -fsplit-stack.
void __morestack_block_signals() {}
void __morestack_unblock_signals() {}
void __splitstack_block_signals(int* next, int* old) {
  if (old) *old = 0;
  (void)next;
}

// Coroutine libraries save and restore the split-stack context around their
// own switches; for ito that context is the limit word alone.
void __splitstack_getcontext(void* context[10]) { context[0] = ito::arch::split_limit(); }
void __splitstack_setcontext(void* context[10]) { ito::arch::set_split_limit(context[0]); }
void __splitstack_resetcontext(void* context[10]) { context[0] = nullptr; }
void __splitstack_releasecontext(void* context[10]) { context[0] = nullptr; }

}  // extern "C"
