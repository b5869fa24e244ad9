// SPDX-License-Identifier: Apache-2.0
// pthread_once and thread-specific data. Keys are ito's ULT-local keys
// (per ULT, destructors for PTHREAD_DESTRUCTOR_ITERATIONS rounds when a ULT
// ends, pthread_exit included); pthread_once is ito::call_once on the
// once_flag that fits glibc's 4-byte pthread_once_t.
#include <climits>
#include <new>

#include "compat/posix_internal.hpp"
#include "ito/error.hpp"
#include "ito/pthread.h"
#include "ito/sync.hpp"
#include "sync/sync_access.hpp"

namespace {

static_assert(sizeof(pthread_key_t) == sizeof(ito::key));
static_assert(ito::max_keys <= PTHREAD_KEYS_MAX);
static_assert(ito::key_destructor_rounds == PTHREAD_DESTRUCTOR_ITERATIONS);

// pthread_once_t is an ito::once_flag (src/sync/once.cpp).
static_assert(sizeof(pthread_once_t) == sizeof(ito::once_flag));
static_assert(alignof(pthread_once_t) >= alignof(ito::once_flag));
static_assert(PTHREAD_ONCE_INIT == 0, "all-zero bytes: a once_flag not yet called");

ito::once_flag& as_flag(pthread_once_t* once) {
  return *std::launder(reinterpret_cast<ito::once_flag*>(once));
}

}  // namespace

extern "C" {

int ito_pthread_once(pthread_once_t* once, void (*fn)(void)) {
  if (!once || !fn) return EINVAL;
  ito::once_flag& flag = as_flag(once);
  if (ito::detail::sync_access::done(flag)) [[likely]] return 0;
  // No runtime needed: before the first thread nobody can be parked here (a
  // latecomer while a runtime runs is a ULT, or an OS thread on a futex).
  // A caller that waits for another's run may resume on another worker: it
  // keeps its own errno and locale. One that runs fn keeps what fn left, as
  // under NPTL (a lazy open's errno, for the caller's perror).
  ito::posix::errno_guard keep_errno;
  // pthread_exit (an unwind) inside fn: POSIX treats it as cancellation, and
  // call_once lets the next caller (or a parked one) run fn again.
  ito::call_once(flag, [&] {
    fn();
    keep_errno.keep_current();
  });
  return 0;
}

// Key values are per ULT, and the main ULT keeps its values where its OS
// thread does (sync/keys.cpp): a value the main thread sets before the first
// pthread_create is the main ULT's, so no key call needs the runtime.
int ito_pthread_key_create(pthread_key_t* key, void (*destructor)(void*)) {
  if (!key) return EINVAL;
  try {
    *key = ito::key_create(destructor);
    return 0;
  } catch (const ito::usage_error& e) {
    return e.code();  // EAGAIN: no key left
  } catch (const std::bad_alloc&) {
    return ENOMEM;
  }
}

int ito_pthread_key_delete(pthread_key_t key) {
  try {
    ito::key_delete(key);
    return 0;
  } catch (const ito::usage_error& e) {
    return e.code();  // EINVAL
  }
}

void* ito_pthread_getspecific(pthread_key_t key) { return ito::get_specific(key); }

int ito_pthread_setspecific(pthread_key_t key, const void* value) {
  try {
    ito::set_specific(key, value);
    return 0;
  } catch (const ito::usage_error& e) {
    return e.code();
  } catch (const std::bad_alloc&) {
    return ENOMEM;
  }
}

}  // extern "C"
