// SPDX-License-Identifier: Apache-2.0
// pthread_once and thread-specific data. Keys are ito's ULT-local keys
// (per ULT, destructors for PTHREAD_DESTRUCTOR_ITERATIONS rounds when a ULT
// ends, pthread_exit included); once lives in glibc's 4-byte pthread_once_t.
#include <climits>

#include "compat/posix_internal.hpp"
#include "ito/error.hpp"
#include "ito/pthread.h"

namespace {

static_assert(sizeof(pthread_key_t) == sizeof(ito::key));
static_assert(ito::max_keys <= PTHREAD_KEYS_MAX);
static_assert(ito::key_destructor_rounds == PTHREAD_DESTRUCTOR_ITERATIONS);

// pthread_once_t states; PTHREAD_ONCE_INIT is 0.
constexpr int once_idle = 0;
constexpr int once_running = 1;
constexpr int once_done = 2;
static_assert(PTHREAD_ONCE_INIT == once_idle);

std::atomic_ref<int> once_word(pthread_once_t* once) { return std::atomic_ref<int>(*once); }

}  // namespace

extern "C" {

int ito_pthread_once(pthread_once_t* once, void (*fn)(void)) {
  if (!once || !fn) return EINVAL;
  std::atomic_ref<int> word = once_word(once);
  if (word.load(std::memory_order_acquire) == once_done) return 0;
  if (int e = ito::posix::enter()) return e;  // a latecomer waits by yielding: as a ULT
  // Four bytes leave no room for a queue: latecomers yield until it is done
  // (init routines are short; a long one costs them polling, not a worker).
  ito::posix::errno_guard keep_errno;
  for (unsigned round = 0;; ++round) {
    int s = once_idle;
    if (word.compare_exchange_strong(s, once_running, std::memory_order_acquire)) break;
    if (s == once_done) return 0;
    ito::posix::backoff(round);
  }
  try {
    fn();
  } catch (...) {
    // pthread_exit (an unwind) inside fn: POSIX treats it as cancellation,
    // and the next caller runs fn again.
    word.store(once_idle, std::memory_order_release);
    throw;
  }
  word.store(once_done, std::memory_order_release);
  return 0;
}

// Key values are per ULT: every key call first makes the caller one
// (posix::enter), or a value set by the main thread before the first
// pthread_create would belong to the OS thread, not to the main ULT.
int ito_pthread_key_create(pthread_key_t* key, void (*destructor)(void*)) {
  if (!key) return EINVAL;
  if (int e = ito::posix::enter()) return e;
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

void* ito_pthread_getspecific(pthread_key_t key) {
  if (ito::posix::enter() != 0) return nullptr;
  return ito::get_specific(key);
}

int ito_pthread_setspecific(pthread_key_t key, const void* value) {
  if (int e = ito::posix::enter()) return e;
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
