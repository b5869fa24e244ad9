// SPDX-License-Identifier: Apache-2.0
// pthread_create/join/detach/exit/self/yield and thread attributes, on the C
// API's ULTs. A pthread_t is an ito_ult_t handle (address + generation), so a
// stale one is ESRCH rather than a stranger's thread.
#define ITO_PTHREAD_NO_RENAME 1  // ::sched_yield below is glibc's
#include <dlfcn.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <new>

#include "compat/c_create.hpp"
#include "compat/posix_attr.hpp"
#include "compat/posix_internal.hpp"
#include "ito/ito.h"
#include "ito/pthread.h"
#include "sched/handles.hpp"
#include "sched/worker.hpp"

namespace {

static_assert(sizeof(pthread_t) == sizeof(ito_ult_t));

using ito::posix::as_attr;
using ito::posix::attr_flag_detached;
using ito::posix::attr_flag_stackaddr;
using ito::posix::glibc_attr;

// Read at start-up, so attr_init costs a plain load (no guard), as glibc's.
const std::size_t g_page_size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
std::size_t page_size() { return g_page_size; }

// The stack every ULT gets: the runtime's, or what it will be once started.
std::size_t ult_stack_size() {
  if (auto* rt = ito::sched::g_runtime.load(std::memory_order_acquire)) return rt->opts.stack_size;
  try {
    return ito::resolve_options(ito::options{}).stack_size;
  } catch (...) {
    return ito::options::default_stack_size;
  }
}

}  // namespace

extern "C" {

int ito_pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                       void* arg) {
  if (!thread || !start) return EINVAL;
  if (int e = ito::posix::ensure_runtime()) return e;
  bool detached = false;
  ito::compat::stack_request stack;
  if (attr) {
    const glibc_attr* a = as_attr(attr);
    detached = (a->flags & attr_flag_detached) != 0;
    if (a->flags & attr_flag_stackaddr) {
      // glibc keeps the stack's top (pthread_attr_setstack(base, size) stores
      // base + size). setstackaddr alone gives no size: nothing to run on.
      if (a->stacksize == 0) return EINVAL;
      stack.caller_base = static_cast<char*>(a->stackaddr) - a->stacksize;
    }
    // A size set: the ULT gets a stack mapped for it (sched/custom_stack.hpp).
    stack.bytes = a->stacksize;
  }
  // Inherited from the caller, or the attribute's (EINVAL, EPERM as NPTL).
  ito::posix::sched_choice sched;
  if (int e = ito::posix::sched_for_child(attr, &sched)) return e;
  // Child first: the caller is suspended and may resume on another worker.
  ito::posix::errno_guard keep_errno;
  ito_ult_t handle = ITO_ULT_NULL;
  try {
    if (int e = ito::compat::create_ult(&handle, start, arg, detached, stack, sched))
      return e == ENOMEM ? EAGAIN : e;
  } catch (const std::bad_alloc&) {
    return EAGAIN;  // no memory for a stack or a descriptor: POSIX's "lacked the resources"
  }
  // A detached thread's id may name a reaped ULT by the time it is read:
  // joining or detaching it then gives ESRCH, as POSIX allows.
  *thread = static_cast<pthread_t>(handle);
  return 0;
}

int ito_pthread_join(pthread_t thread, void** retval) {
  if (int e = ito::posix::ensure_runtime()) return e;
  ito::posix::errno_guard keep_errno;
  // A cancellation point, before it waits and while it waits: a
  // cancellation or a signal's handler interrupts the wait (ito_join gives
  // EINTR then, without the claim); the handler ran as the joiner was
  // switched in, and the join goes on.
  // ESRCH: joined already, or detached and ended; EINVAL: detached (POSIX's
  // "not joinable") or joined by another; EDEADLK: itself.
  for (;;) {
    const bool armed = ito::posix::begin_cancellable_wait();
    const int e = ito_join(static_cast<ito_ult_t>(thread), retval);
    ito::posix::end_cancellable_wait(armed);
    if (e != EINTR) return e;
    ito::posix::cancellation_point();
  }
}

int ito_pthread_detach(pthread_t thread) {
  if (int e = ito::posix::ensure_runtime()) return e;
  return ito_detach(static_cast<ito_ult_t>(thread));
}

pthread_t ito_pthread_self(void) {
  if (ito::sched::current_ult()) [[likely]] return static_cast<pthread_t>(ito_self());
  // The main thread before the first runtime: the handle its main ULT will
  // have, without starting the runtime only to name the caller.
  if (!ito::sched::g_runtime.load(std::memory_order_acquire)) {
    if (auto h = ito::sched::handles::before_start(ito::sched::os_thread_identity()))
      return static_cast<pthread_t>(h);
  }
  if (ito::posix::ensure_runtime() == 0) return static_cast<pthread_t>(ito_self());
  // An OS thread outside the runtime: glibc's pthread_self is its TCB address.
  return reinterpret_cast<pthread_t>(__builtin_thread_pointer());
}

int ito_pthread_equal(pthread_t a, pthread_t b) { return a == b; }

int ito_pthread_yield(void) {
  if (!ito::sched::current_ult()) {
    if (ito::posix::ensure_runtime() != 0) return ::sched_yield();
  }
  ito::posix::errno_guard keep_errno;
  ito::sched::yield(false);
  return 0;
}

int ito_sched_yield(void) { return ito_pthread_yield(); }

int ito_pthread_attr_init(pthread_attr_t* attr) {
  if (!attr) return EINVAL;
  std::memset(attr, 0, sizeof *attr);
  as_attr(attr)->guardsize = page_size();
  return 0;
}

int ito_pthread_attr_destroy(pthread_attr_t* attr) {
  if (!attr) return EINVAL;
  // Only glibc's own setters (affinity, signal mask) allocate an extension;
  // its destroy frees it. Without one there is nothing to free.
  if (as_attr(attr)->extension) {
    using destroy_fn = int (*)(pthread_attr_t*);
    static destroy_fn real =
        reinterpret_cast<destroy_fn>(dlsym(RTLD_NEXT, "pthread_attr_destroy"));
    if (real) return real(attr);
  }
  return 0;
}

int ito_pthread_attr_setdetachstate(pthread_attr_t* attr, int state) {
  static_assert(PTHREAD_CREATE_JOINABLE == 0 && PTHREAD_CREATE_DETACHED == attr_flag_detached);
  // One range check, then the state is the flag bit itself: no branch on it.
  if (!attr || static_cast<unsigned>(state) > PTHREAD_CREATE_DETACHED) return EINVAL;
  glibc_attr* a = as_attr(attr);
  a->flags = (a->flags & ~attr_flag_detached) | state;
  return 0;
}

int ito_pthread_attr_getdetachstate(const pthread_attr_t* attr, int* state) {
  if (!attr || !state) return EINVAL;
  *state = (as_attr(attr)->flags & attr_flag_detached) ? PTHREAD_CREATE_DETACHED
                                                       : PTHREAD_CREATE_JOINABLE;
  return 0;
}

int ito_pthread_attr_setstacksize(pthread_attr_t* attr, std::size_t size) {
  if (!attr || size < static_cast<std::size_t>(PTHREAD_STACK_MIN)) return EINVAL;
  as_attr(attr)->stacksize = size;
  return 0;
}

int ito_pthread_attr_getstacksize(const pthread_attr_t* attr, std::size_t* size) {
  if (!attr || !size) return EINVAL;
  const std::size_t set = as_attr(attr)->stacksize;
  *size = set ? set : ult_stack_size();  // unset: what a ULT actually gets
  return 0;
}

}  // extern "C"
