/* SPDX-License-Identifier: Apache-2.0 */
/* ito's C synchronisation API: mutexes, condition variables, barriers,
 * semaphores, once and ULT-local keys that park the calling ULT (its worker
 * runs other ULTs) instead of blocking an OS thread. Plain OS threads may use
 * them too: they sleep on a futex. See docs/SYNC.md.
 *
 * Every call returns 0 or a POSIX error code (never errno, never -1) and lets
 * no C++ exception out (ito_once's fn excepted: see there):
 *   EINVAL   a null pointer, or a bad count, key or timeout
 *   EPERM    unlocking a mutex, or waiting with one, that the caller does not
 *            hold; unlocking a rwlock that nobody holds for reading and the
 *            caller does not hold for writing
 *   EDEADLK  locking a mutex the caller already holds (mutexes are not
 *            recursive); locking a rwlock the caller holds for writing
 *   EBUSY    trylock on a locked mutex or rwlock; destroying an object in use
 *   EAGAIN   trywait with no permit; no key left
 *   EOVERFLOW posting a semaphore already at ITO_SEM_VALUE_MAX
 *   ETIMEDOUT a timed wait's deadline passed
 *   ENOMEM   out of memory (setspecific)
 * Objects are opaque and may live anywhere (stack, heap, static); the mutex,
 * rwlock, condition variable and once also have static initialisers. */
#ifndef ITO_SYNC_H
#define ITO_SYNC_H

#include <time.h> /* struct timespec (C11, or POSIX) */

#ifdef __cplusplus
extern "C" {
#endif

/* Declared here too, so the header also compiles in strict C99 modes whose
 * <time.h> lacks it. */
struct timespec;

/* --- Mutex: not recursive. Contended, a running locker may barge past the
 * woken waiter; a waiter kept over a millisecond turns on direct FIFO hand-off
 * until the queue drains, so no waiter starves. --------------------------- */
typedef struct ito_mutex { unsigned long long opaque_[6]; } ito_mutex_t;
#define ITO_MUTEX_INITIALIZER {{0}}

int ito_mutex_init(ito_mutex_t* mutex);
/* EBUSY while it is locked. */
int ito_mutex_destroy(ito_mutex_t* mutex);
/* EDEADLK if the caller already holds it. */
int ito_mutex_lock(ito_mutex_t* mutex);
/* EBUSY if it is locked (by anyone, the caller included). */
int ito_mutex_trylock(ito_mutex_t* mutex);
/* EPERM if the caller does not hold it. */
int ito_mutex_unlock(ito_mutex_t* mutex);

/* --- Reader-writer lock: readers share, a writer excludes. Writers are not
 * starved by readers: once anyone waits, newcomers queue behind, and waiters
 * get the lock in arrival order (a run of readers together). So a reader that
 * re-locks for reading while a writer waits waits too. -------------------- */
typedef struct ito_rwlock { unsigned long long opaque_[5]; } ito_rwlock_t;
#define ITO_RWLOCK_INITIALIZER {{0}}

int ito_rwlock_init(ito_rwlock_t* rwlock);
/* EBUSY while it is held or waited for. */
int ito_rwlock_destroy(ito_rwlock_t* rwlock);
/* EDEADLK if the caller holds it for writing. */
int ito_rwlock_rdlock(ito_rwlock_t* rwlock);
/* EBUSY if a writer holds it or anyone waits; EDEADLK as rdlock. */
int ito_rwlock_tryrdlock(ito_rwlock_t* rwlock);
/* EDEADLK if the caller holds it for writing. */
int ito_rwlock_wrlock(ito_rwlock_t* rwlock);
/* EBUSY if anyone holds it; EDEADLK as wrlock. */
int ito_rwlock_trywrlock(ito_rwlock_t* rwlock);
/* Releases the caller's write hold, else one read hold. EPERM if neither. */
int ito_rwlock_unlock(ito_rwlock_t* rwlock);

/* --- Condition variable ---------------------------------------------------- */
typedef struct ito_cond { unsigned long long opaque_[6]; } ito_cond_t;
#define ITO_COND_INITIALIZER {{0}}

int ito_cond_init(ito_cond_t* cond);
/* EBUSY while someone waits on it. */
int ito_cond_destroy(ito_cond_t* cond);
/* EPERM if the caller does not hold mutex. */
int ito_cond_wait(ito_cond_t* cond, ito_mutex_t* mutex);
/* abstime is an absolute CLOCK_MONOTONIC time. ETIMEDOUT once it has passed
 * (the mutex is held again either way; a deadline already past still releases
 * and re-takes it, letting others run, as pthread_cond_timedwait does); EINVAL
 * if tv_nsec is out of range; ENOMEM if its timer cannot be armed. */
int ito_cond_timedwait(ito_cond_t* cond, ito_mutex_t* mutex, const struct timespec* abstime);
int ito_cond_signal(ito_cond_t* cond);
int ito_cond_broadcast(ito_cond_t* cond);

/* --- Barrier: reusable; one caller per phase gets ITO_BARRIER_SERIAL_THREAD - */
typedef struct ito_barrier { unsigned long long opaque_[5]; } ito_barrier_t;
#define ITO_BARRIER_SERIAL_THREAD (-1)

/* EINVAL if count is 0. */
int ito_barrier_init(ito_barrier_t* barrier, unsigned count);
/* EBUSY while someone waits on it. */
int ito_barrier_destroy(ito_barrier_t* barrier);
/* Returns ITO_BARRIER_SERIAL_THREAD to the last arriver of each phase, 0 to
 * the others. */
int ito_barrier_wait(ito_barrier_t* barrier);

/* --- Counting semaphore: FIFO hand-off of posted permits ------------------- */
typedef struct ito_sem { unsigned long long opaque_[6]; } ito_sem_t;
/* The largest value a semaphore holds (glibc's SEM_VALUE_MAX). */
#define ITO_SEM_VALUE_MAX 2147483647

/* EINVAL if value exceeds ITO_SEM_VALUE_MAX. */
int ito_sem_init(ito_sem_t* sem, unsigned value);
/* EBUSY while someone waits on it. */
int ito_sem_destroy(ito_sem_t* sem);
int ito_sem_wait(ito_sem_t* sem);
/* EAGAIN if no permit is available. */
int ito_sem_trywait(ito_sem_t* sem);
/* EOVERFLOW if the value is already ITO_SEM_VALUE_MAX (it is left unchanged). */
int ito_sem_post(ito_sem_t* sem);

/* --- Once ------------------------------------------------------------------ */
typedef struct ito_once { unsigned long long opaque_[4]; } ito_once_t;
#define ITO_ONCE_INIT {{0}}

/* Runs fn once for all callers of once; callers arriving meanwhile park until
 * it has returned. If fn ends by unwinding (ito_exit, or a C++ exception),
 * the unwinding goes on through ito_once and the next caller runs fn again. */
int ito_once(ito_once_t* once, void (*fn)(void));

/* --- ULT-local keys (pthread_key semantics, per ULT) ----------------------- */
typedef unsigned ito_key_t;
#define ITO_KEYS_MAX 1024
#define ITO_DESTRUCTOR_ITERATIONS 4

/* EAGAIN when ITO_KEYS_MAX keys exist. destructor may be NULL. When a ULT ends,
 * each of its non-NULL values whose key has a destructor is set to NULL and
 * passed to it, for up to ITO_DESTRUCTOR_ITERATIONS rounds. */
int ito_key_create(ito_key_t* key, void (*destructor)(void*));
/* EINVAL for a key that does not exist. Values still set are not destroyed. */
int ito_key_delete(ito_key_t key);
/* The caller's value, or NULL. */
void* ito_key_getspecific(ito_key_t key);
/* EINVAL for a key that does not exist; ENOMEM. */
int ito_key_setspecific(ito_key_t key, const void* value);

/* The former names of the two above, kept for one release. */
__attribute__((deprecated("use ito_key_getspecific"))) void* ito_getspecific(ito_key_t key);
__attribute__((deprecated("use ito_key_setspecific"))) int ito_setspecific(ito_key_t key,
                                                                           const void* value);

#ifdef __cplusplus
}
#endif

#endif /* ITO_SYNC_H */
