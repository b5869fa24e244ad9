// SPDX-License-Identifier: Apache-2.0
// The C synchronisation API (include/ito/sync.h) on the C++ classes. Each C
// object's storage holds the C++ object; the static initialisers rely on the
// all-zero bytes of mutex, condition_variable and once_flag being their
// initial state. Errors come back as the usage_error codes.
#include "ito/sync.h"

#include <cerrno>
#include <cstdint>
#include <limits>
#include <new>
#include <type_traits>

#include "ito/error.hpp"
#include "ito/sync.hpp"
#include "sync/shared_mutex_access.hpp"
#include "sync/sync_access.hpp"


namespace {

template <class Cpp, class C>
constexpr bool fits() {
  return sizeof(Cpp) <= sizeof(C) && alignof(Cpp) <= alignof(C);
}
static_assert(fits<ito::mutex, ito_mutex_t>());
static_assert(fits<ito::condition_variable, ito_cond_t>());
static_assert(fits<ito::barrier, ito_barrier_t>());
static_assert(fits<ito::shared_mutex, ito_rwlock_t>());
static_assert(fits<ito::counting_semaphore, ito_sem_t>());
static_assert(fits<ito::once_flag, ito_once_t>());
static_assert(std::is_same_v<ito_key_t, ito::key>);
static_assert(ITO_KEYS_MAX == ito::max_keys && ITO_DESTRUCTOR_ITERATIONS == ito::key_destructor_rounds);

template <class Cpp, class C>
Cpp& as(C* c) noexcept {
  return *std::launder(reinterpret_cast<Cpp*>(c));
}

// Runs f, turning the C++ API's errors into return codes.
template <class F>
int status_of(F&& f) noexcept {
  try {
    f();
    return 0;
  } catch (const ito::usage_error& e) {
    return e.code();
  } catch (const std::bad_alloc&) {
    return ENOMEM;
  }
}

// Waits with a mutex the caller claims to hold, without letting the
// unique_lock unlock it on the way out (the C caller owns the lock state).
template <class Wait>
int wait_with(ito_mutex_t* m, Wait&& wait) noexcept {
  std::unique_lock<ito::mutex> lock(as<ito::mutex>(m), std::adopt_lock);
  int rc = status_of([&] { wait(lock); });
  lock.release();
  return rc;
}

}  // namespace

extern "C" {

int ito_mutex_init(ito_mutex_t* m) {
  if (!m) return EINVAL;
  ::new (static_cast<void*>(m)) ito::mutex();
  return 0;
}

int ito_mutex_destroy(ito_mutex_t* m) {
  if (!m) return EINVAL;
  if (ito::detail::sync_access::busy(as<ito::mutex>(m))) return EBUSY;
  as<ito::mutex>(m).~mutex();
  return 0;
}

int ito_mutex_lock(ito_mutex_t* m) {
  if (!m) return EINVAL;
  return status_of([&] { as<ito::mutex>(m).lock(); });
}

int ito_mutex_trylock(ito_mutex_t* m) {
  if (!m) return EINVAL;
  return as<ito::mutex>(m).try_lock() ? 0 : EBUSY;
}

int ito_mutex_unlock(ito_mutex_t* m) {
  if (!m) return EINVAL;
  return status_of([&] { as<ito::mutex>(m).unlock(); });
}

int ito_rwlock_init(ito_rwlock_t* l) {
  if (!l) return EINVAL;
  ::new (static_cast<void*>(l)) ito::shared_mutex();
  return 0;
}

int ito_rwlock_destroy(ito_rwlock_t* l) {
  if (!l) return EINVAL;
  if (ito::detail::shared_mutex_access::busy(as<ito::shared_mutex>(l))) return EBUSY;
  as<ito::shared_mutex>(l).~shared_mutex();
  return 0;
}

int ito_rwlock_rdlock(ito_rwlock_t* l) {
  if (!l) return EINVAL;
  constexpr auto never = ito::detail::shared_mutex_access::never;
  return ito::detail::shared_mutex_access::lock(as<ito::shared_mutex>(l), false, never);
}

int ito_rwlock_tryrdlock(ito_rwlock_t* l) {
  if (!l) return EINVAL;
  return ito::detail::shared_mutex_access::try_lock(as<ito::shared_mutex>(l), false);
}

int ito_rwlock_wrlock(ito_rwlock_t* l) {
  if (!l) return EINVAL;
  constexpr auto never = ito::detail::shared_mutex_access::never;
  return ito::detail::shared_mutex_access::lock(as<ito::shared_mutex>(l), true, never);
}

int ito_rwlock_trywrlock(ito_rwlock_t* l) {
  if (!l) return EINVAL;
  return ito::detail::shared_mutex_access::try_lock(as<ito::shared_mutex>(l), true);
}

int ito_rwlock_unlock(ito_rwlock_t* l) {
  if (!l) return EINVAL;
  return ito::detail::shared_mutex_access::unlock(as<ito::shared_mutex>(l));
}

int ito_cond_init(ito_cond_t* c) {
  if (!c) return EINVAL;
  ::new (static_cast<void*>(c)) ito::condition_variable();
  return 0;
}

int ito_cond_destroy(ito_cond_t* c) {
  if (!c) return EINVAL;
  if (ito::detail::sync_access::busy(as<ito::condition_variable>(c))) return EBUSY;
  as<ito::condition_variable>(c).~condition_variable();
  return 0;
}

int ito_cond_wait(ito_cond_t* c, ito_mutex_t* m) {
  if (!c || !m) return EINVAL;
  return wait_with(m, [&](std::unique_lock<ito::mutex>& lock) {
    as<ito::condition_variable>(c).wait(lock);
  });
}

int ito_cond_timedwait(ito_cond_t* c, ito_mutex_t* m, const struct timespec* abstime) {
  if (!c || !m || !abstime || abstime->tv_nsec < 0 || abstime->tv_nsec >= 1'000'000'000)
    return EINVAL;
  constexpr std::int64_t forever = std::numeric_limits<std::int64_t>::max();
  std::int64_t deadline;
  if (abstime->tv_sec < 0) deadline = 0;
  else if (abstime->tv_sec >= forever / 1'000'000'000 - 1) deadline = forever;
  else deadline = std::int64_t{abstime->tv_sec} * 1'000'000'000 + abstime->tv_nsec;
  bool timed_out = false;
  int rc = wait_with(m, [&](std::unique_lock<ito::mutex>& lock) {
    timed_out = as<ito::condition_variable>(c).wait_until_ns(lock, deadline);
  });
  return rc != 0 ? rc : timed_out ? ETIMEDOUT : 0;
}

int ito_cond_signal(ito_cond_t* c) {
  if (!c) return EINVAL;
  as<ito::condition_variable>(c).notify_one();
  return 0;
}

int ito_cond_broadcast(ito_cond_t* c) {
  if (!c) return EINVAL;
  as<ito::condition_variable>(c).notify_all();
  return 0;
}

int ito_barrier_init(ito_barrier_t* b, unsigned count) {
  if (!b) return EINVAL;
  return status_of([&] { ::new (static_cast<void*>(b)) ito::barrier(count); });
}

int ito_barrier_destroy(ito_barrier_t* b) {
  if (!b) return EINVAL;
  if (ito::detail::sync_access::busy(as<ito::barrier>(b))) return EBUSY;
  as<ito::barrier>(b).~barrier();
  return 0;
}

int ito_barrier_wait(ito_barrier_t* b) {
  if (!b) return EINVAL;
  return as<ito::barrier>(b).arrive_and_wait() ? ITO_BARRIER_SERIAL_THREAD : 0;
}

int ito_sem_init(ito_sem_t* s, unsigned value) {
  if (!s || value > ITO_SEM_VALUE_MAX) return EINVAL;
  ::new (static_cast<void*>(s)) ito::counting_semaphore(static_cast<std::ptrdiff_t>(value));
  return 0;
}

int ito_sem_destroy(ito_sem_t* s) {
  if (!s) return EINVAL;
  if (ito::detail::sync_access::busy(as<ito::counting_semaphore>(s))) return EBUSY;
  as<ito::counting_semaphore>(s).~counting_semaphore();
  return 0;
}

int ito_sem_wait(ito_sem_t* s) {
  if (!s) return EINVAL;
  as<ito::counting_semaphore>(s).acquire();
  return 0;
}

int ito_sem_trywait(ito_sem_t* s) {
  if (!s) return EINVAL;
  return as<ito::counting_semaphore>(s).try_acquire() ? 0 : EAGAIN;
}

int ito_sem_post(ito_sem_t* s) {
  if (!s) return EINVAL;
  return ito::detail::sync_access::post(as<ito::counting_semaphore>(s)) ? 0 : EOVERFLOW;
}

int ito_once(ito_once_t* once, void (*fn)(void)) {
  if (!once || !fn) return EINVAL;
  // Not through status_of: fn's unwinding must reach the ULT's entry.
  ito::call_once(as<ito::once_flag>(once), fn);
  return 0;
}

int ito_key_create(ito_key_t* key, void (*destructor)(void*)) {
  if (!key) return EINVAL;
  return status_of([&] { *key = ito::key_create(destructor); });
}

int ito_key_delete(ito_key_t key) {
  return status_of([&] { ito::key_delete(key); });
}

void* ito_key_getspecific(ito_key_t key) { return ito::get_specific(key); }

int ito_key_setspecific(ito_key_t key, const void* value) {
  return status_of([&] { ito::set_specific(key, value); });
}

// The deprecated names: the same calls, still exported.
void* ito_getspecific(ito_key_t key) { return ito::get_specific(key); }

int ito_setspecific(ito_key_t key, const void* value) {
  return status_of([&] { ito::set_specific(key, value); });
}

}  // extern "C"
