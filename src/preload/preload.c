/* SPDX-License-Identifier: Apache-2.0 */
/* libito-preload.so: defines the real pthread_* names and forwards them to
 * ito's POSIX layer (src/compat/posix_*.cpp), so that an unmodified program
 * run with LD_PRELOAD=libito-preload.so runs its threads as ULTs.
 *
 * The runtime's own code lives in this library too, and it needs the real
 * thing: its workers are OS threads (pthread_create/join), its internal
 * std::mutex calls pthread_mutex_lock. Its references to these names are
 * renamed __wrap_NAME when the library is linked (-Wl,--wrap, see
 * CMakeLists.txt), and __wrap_NAME goes to glibc (dlsym(RTLD_NEXT)).
 *
 * An earlier version told the runtime's calls apart by their return address
 * (inside this library: glibc). Tail calls defeat that both ways: an
 * optimised `m.unlock()` ending a runtime function jumps here with its
 * caller's address (glibc's fork handlers: coreutils timeout hung), and a
 * program's key destructor ending in pthread_setspecific, called by the
 * runtime, arrives with an address inside. */
#define _GNU_SOURCE 1
#define ITO_PTHREAD_NO_RENAME 1
#include <dlfcn.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <threads.h>

#include "ito/pthread.h"

/* Tells the POSIX layer it is preloaded: the runtime starts on first use only
 * once the constructor below has run (libc and the program's libstdc++ lock
 * mutexes while they initialise, before it: too early to start one). */
__attribute__((visibility("default"))) int ito_posix_preload_marker = 1;
void ito_posix_preload_ready(void);
void ito_posix_check_environment(void);
int ito_preload_threads_as_ults(void); /* thread_mode.c */
/* syscall(SYS_futex) from a ULT parks it (src/compat/posix_futex.cpp). */
long ito_preload_futex(uint32_t* word, int op, uint32_t val, const struct timespec* timeout,
                       uint32_t* word2, uint32_t val3);

/* Set once, in the constructor, when the program's threads are to stay OS
 * threads (thread_mode.c): every entry point then goes to glibc. */
static int g_step_aside;

/* glibc's function `name`, looked up at its first use, or by the
 * constructor below: every use site's entry lies in one section, so the
 * constructor can look them all up before the program runs. Looked up
 * later, dlsym would take the loader's lock, which a thread in a
 * dl_iterate_phdr callback or a constructor under dlopen may hold while it
 * makes the call: the other lock order, and a hang (progs/dlopen_threads.c). */
struct glibc_function {
  const char* name;
  void* address;
};

static void* real(struct glibc_function* f) {
  void* a = __atomic_load_n(&f->address, __ATOMIC_ACQUIRE);
  if (!a) {
    a = dlsym(RTLD_NEXT, f->name);
    __atomic_store_n(&f->address, a, __ATOMIC_RELEASE);
  }
  return a;
}

extern struct glibc_function __start_ito_glibc_functions[], __stop_ito_glibc_functions[];

static void look_up_every_glibc_function(void) {
  for (struct glibc_function* f = __start_ito_glibc_functions; f < __stop_ito_glibc_functions; ++f)
    real(f);
}

/* glibc's `name`, as a pointer of type `type`. */
#define GLIBC(type, name)                                                     \
  ({                                                                          \
    static struct glibc_function f                                            \
        __attribute__((section("ito_glibc_functions"), used)) = {#name, 0};  \
    (type) real(&f);                                                          \
  })

/* __wrap_NAME: where the runtime's own calls of NAME go, and every call
 * once the program's threads stay OS threads. */
#define ITO_TO_GLIBC(ret, name, params, args)                                 \
  __attribute__((visibility("hidden"))) ret __wrap_##name params {            \
    return GLIBC(ret(*) params, name) args;                                   \
  }

#define ITO_FORWARD(ret, name, params, args)                                  \
  ITO_TO_GLIBC(ret, name, params, args)                                       \
  __attribute__((visibility("default"))) ret name params {                    \
    if (g_step_aside) return __wrap_##name args;                              \
    return ito_##name args;                                                 \
  }

/* The same, for a call whose ito version is named otherwise. */
#define ITO_FORWARD_TO(ret, name, target, params, args)                       \
  ITO_TO_GLIBC(ret, name, params, args)                                       \
  __attribute__((visibility("default"))) ret name params {                    \
    if (g_step_aside) return __wrap_##name args;                              \
    return target args;                                                       \
  }

ITO_FORWARD(int, pthread_create,
            (pthread_t * t, const pthread_attr_t* a, void* (*f)(void*), void* arg),
            (t, a, f, arg))
ITO_FORWARD(int, pthread_join, (pthread_t t, void** r), (t, r))
ITO_FORWARD(int, pthread_detach, (pthread_t t), (t))
ITO_FORWARD(pthread_t, pthread_self, (void), ())
ITO_FORWARD(int, pthread_equal, (pthread_t a, pthread_t b), (a, b))
ITO_FORWARD(int, sched_yield, (void), ())
ITO_FORWARD(int, pthread_cancel, (pthread_t t), (t))
ITO_FORWARD(int, pthread_setcancelstate, (int s, int* o), (s, o))
ITO_FORWARD(int, pthread_setcanceltype, (int t, int* o), (t, o))
/* ITO_FORWARD's shape, for a call that returns nothing. */
__attribute__((visibility("hidden"))) void __wrap_pthread_testcancel(void) {
  GLIBC(void (*)(void), pthread_testcancel)();
}
__attribute__((visibility("default"))) void pthread_testcancel(void) {
  if (g_step_aside) __wrap_pthread_testcancel();
  else ito_pthread_testcancel();
}
ITO_FORWARD(int, pthread_getattr_np, (pthread_t t, pthread_attr_t* a), (t, a))
ITO_FORWARD(int, pthread_kill, (pthread_t t, int s), (t, s))
ITO_FORWARD(pid_t, gettid, (void), ())
ITO_FORWARD(int, tgkill, (pid_t p, pid_t t, int s), (p, t, s))
ITO_FORWARD(int, pthread_sigqueue, (pthread_t t, int s, const union sigval v), (t, s, v))
ITO_FORWARD(int, pthread_sigmask, (int h, const sigset_t* s, sigset_t* o), (h, s, o))
ITO_FORWARD(int, sigprocmask, (int h, const sigset_t* s, sigset_t* o), (h, s, o))
ITO_FORWARD(int, raise, (int s), (s))
ITO_FORWARD(int, sigpending, (sigset_t* s), (s))
ITO_FORWARD(int, sigwait, (const sigset_t* s, int* g), (s, g))
ITO_FORWARD(int, sigwaitinfo, (const sigset_t* s, siginfo_t* i), (s, i))
ITO_FORWARD(int, sigtimedwait, (const sigset_t* s, siginfo_t* i, const struct timespec* t), (s, i, t))
ITO_FORWARD(int, sigsuspend, (const sigset_t* m), (m))
ITO_FORWARD(int, pthread_getschedparam, (pthread_t t, int* p, struct sched_param* s), (t, p, s))
ITO_FORWARD(int, pthread_setschedparam, (pthread_t t, int p, const struct sched_param* s),
            (t, p, s))
ITO_FORWARD(int, pthread_setschedprio, (pthread_t t, int p), (t, p))
ITO_FORWARD(int, pthread_setname_np, (pthread_t t, const char* n), (t, n))
ITO_FORWARD(int, pthread_getname_np, (pthread_t t, char* b, size_t n), (t, b, n))
ITO_FORWARD(int, pthread_getcpuclockid, (pthread_t t, clockid_t* c), (t, c))
ITO_FORWARD(int, pthread_setaffinity_np, (pthread_t t, size_t n, const cpu_set_t* s), (t, n, s))
ITO_FORWARD(int, pthread_getaffinity_np, (pthread_t t, size_t n, cpu_set_t* s), (t, n, s))
ITO_FORWARD(int, pthread_tryjoin_np, (pthread_t t, void** r), (t, r))
ITO_FORWARD(int, pthread_timedjoin_np, (pthread_t t, void** r, const struct timespec* a),
            (t, r, a))
ITO_FORWARD(int, pthread_clockjoin_np,
            (pthread_t t, void** r, clockid_t c, const struct timespec* a), (t, r, c, a))
ITO_FORWARD(int, pthread_attr_init, (pthread_attr_t * a), (a))
ITO_FORWARD(int, pthread_attr_destroy, (pthread_attr_t * a), (a))
ITO_FORWARD(int, pthread_attr_setdetachstate, (pthread_attr_t * a, int s), (a, s))
ITO_FORWARD(int, pthread_attr_getdetachstate, (const pthread_attr_t* a, int* s), (a, s))
ITO_FORWARD(int, pthread_attr_setstacksize, (pthread_attr_t * a, size_t s), (a, s))
ITO_FORWARD(int, pthread_attr_getstacksize, (const pthread_attr_t* a, size_t* s), (a, s))
ITO_FORWARD(int, pthread_once, (pthread_once_t * o, void (*f)(void)), (o, f))
ITO_FORWARD(int, pthread_mutexattr_init, (pthread_mutexattr_t * a), (a))
ITO_FORWARD(int, pthread_mutexattr_destroy, (pthread_mutexattr_t * a), (a))
ITO_FORWARD(int, pthread_mutexattr_settype, (pthread_mutexattr_t * a, int t), (a, t))
ITO_FORWARD(int, pthread_mutexattr_gettype, (const pthread_mutexattr_t* a, int* t), (a, t))
ITO_FORWARD(int, pthread_mutex_init, (pthread_mutex_t * m, const pthread_mutexattr_t* a), (m, a))
ITO_FORWARD(int, pthread_mutex_destroy, (pthread_mutex_t * m), (m))
ITO_FORWARD(int, pthread_mutex_lock, (pthread_mutex_t * m), (m))
ITO_FORWARD(int, pthread_mutex_trylock, (pthread_mutex_t * m), (m))
ITO_FORWARD(int, pthread_mutex_timedlock, (pthread_mutex_t * m, const struct timespec* t), (m, t))
ITO_FORWARD(int, pthread_mutex_unlock, (pthread_mutex_t * m), (m))
ITO_FORWARD(int, pthread_mutex_clocklock,
            (pthread_mutex_t * m, clockid_t c, const struct timespec* t), (m, c, t))
ITO_FORWARD(int, pthread_mutex_consistent, (pthread_mutex_t * m), (m))
ITO_FORWARD(int, pthread_mutex_getprioceiling, (const pthread_mutex_t* m, int* c), (m, c))
ITO_FORWARD(int, pthread_mutex_setprioceiling, (pthread_mutex_t * m, int c, int* o), (m, c, o))
ITO_FORWARD(int, pthread_condattr_init, (pthread_condattr_t * a), (a))
ITO_FORWARD(int, pthread_condattr_destroy, (pthread_condattr_t * a), (a))
ITO_FORWARD(int, pthread_condattr_setclock, (pthread_condattr_t * a, clockid_t c), (a, c))
ITO_FORWARD(int, pthread_condattr_getclock, (const pthread_condattr_t* a, clockid_t* c), (a, c))
ITO_FORWARD(int, pthread_cond_init, (pthread_cond_t * c, const pthread_condattr_t* a), (c, a))
ITO_FORWARD(int, pthread_cond_destroy, (pthread_cond_t * c), (c))
ITO_FORWARD(int, pthread_cond_wait, (pthread_cond_t * c, pthread_mutex_t* m), (c, m))
ITO_FORWARD(int, pthread_cond_timedwait,
            (pthread_cond_t * c, pthread_mutex_t* m, const struct timespec* t), (c, m, t))
ITO_FORWARD(int, pthread_cond_clockwait,
            (pthread_cond_t * c, pthread_mutex_t* m, clockid_t k, const struct timespec* t),
            (c, m, k, t))
ITO_FORWARD(int, pthread_cond_signal, (pthread_cond_t * c), (c))
ITO_FORWARD(int, pthread_cond_broadcast, (pthread_cond_t * c), (c))
ITO_FORWARD(int, pthread_key_create, (pthread_key_t * k, void (*d)(void*)), (k, d))
ITO_FORWARD(int, pthread_key_delete, (pthread_key_t k), (k))
ITO_FORWARD(void*, pthread_getspecific, (pthread_key_t k), (k))
/* glibc declares the value access(none): gcc 12 at -O3 takes handing it on
 * to ito_pthread_setspecific for a read of memory never written. */
ITO_TO_GLIBC(int, pthread_setspecific, (pthread_key_t k, const void* v), (k, v))
__attribute__((visibility("default"))) int pthread_setspecific(pthread_key_t k, const void* v) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
  if (g_step_aside) return __wrap_pthread_setspecific(k, v);
  return ito_pthread_setspecific(k, v);
#pragma GCC diagnostic pop
}
ITO_FORWARD(int, pthread_barrier_init,
            (pthread_barrier_t * b, const pthread_barrierattr_t* a, unsigned n), (b, a, n))
ITO_FORWARD(int, pthread_barrier_destroy, (pthread_barrier_t * b), (b))
ITO_FORWARD(int, pthread_barrier_wait, (pthread_barrier_t * b), (b))
ITO_FORWARD(int, pthread_rwlock_init, (pthread_rwlock_t * l, const pthread_rwlockattr_t* a), (l, a))
ITO_FORWARD(int, pthread_rwlock_destroy, (pthread_rwlock_t * l), (l))
ITO_FORWARD(int, pthread_rwlock_rdlock, (pthread_rwlock_t * l), (l))
ITO_FORWARD(int, pthread_rwlock_tryrdlock, (pthread_rwlock_t * l), (l))
ITO_FORWARD(int, pthread_rwlock_wrlock, (pthread_rwlock_t * l), (l))
ITO_FORWARD(int, pthread_rwlock_trywrlock, (pthread_rwlock_t * l), (l))
ITO_FORWARD(int, pthread_rwlock_unlock, (pthread_rwlock_t * l), (l))
ITO_FORWARD(int, pthread_rwlock_timedrdlock, (pthread_rwlock_t * l, const struct timespec* t),
            (l, t))
ITO_FORWARD(int, pthread_rwlock_timedwrlock, (pthread_rwlock_t * l, const struct timespec* t),
            (l, t))
ITO_FORWARD(int, pthread_rwlock_clockrdlock,
            (pthread_rwlock_t * l, clockid_t c, const struct timespec* t), (l, c, t))
ITO_FORWARD(int, pthread_rwlock_clockwrlock,
            (pthread_rwlock_t * l, clockid_t c, const struct timespec* t), (l, c, t))
ITO_FORWARD(int, pthread_spin_init, (pthread_spinlock_t * l, int s), (l, s))
ITO_FORWARD(int, pthread_spin_destroy, (pthread_spinlock_t * l), (l))
ITO_FORWARD(int, pthread_spin_lock, (pthread_spinlock_t * l), (l))
ITO_FORWARD(int, pthread_spin_trylock, (pthread_spinlock_t * l), (l))
ITO_FORWARD(int, pthread_spin_unlock, (pthread_spinlock_t * l), (l))

/* Unnamed semaphores: ito's, in glibc's sem_t (process-shared and named
 * ones are handed to glibc by ito itself: src/compat/posix_sem.cpp). */
ITO_FORWARD_TO(int, sem_init, ito_posix_sem_init, (sem_t * s, int p, unsigned v),
               (s, p, v))
ITO_FORWARD_TO(int, sem_destroy, ito_posix_sem_destroy, (sem_t * s), (s))
ITO_FORWARD_TO(int, sem_wait, ito_posix_sem_wait, (sem_t * s), (s))
ITO_FORWARD_TO(int, sem_trywait, ito_posix_sem_trywait, (sem_t * s), (s))
ITO_FORWARD_TO(int, sem_timedwait, ito_posix_sem_timedwait,
               (sem_t * s, const struct timespec* t), (s, t))
ITO_FORWARD_TO(int, sem_clockwait, ito_posix_sem_clockwait,
               (sem_t * s, clockid_t c, const struct timespec* t), (s, c, t))
ITO_FORWARD_TO(int, sem_post, ito_posix_sem_post, (sem_t * s), (s))
ITO_FORWARD_TO(int, sem_getvalue, ito_posix_sem_getvalue, (sem_t * s, int* v), (s, v))

/* Cleanup handlers of glibc's plain-C macros, kept per ULT
 * (src/compat/posix_cleanup.cpp). */
#define ITO_CLEANUP(name, target)                                             \
  __attribute__((visibility("default"))) void name(__pthread_unwind_buf_t* b) { \
    if (g_step_aside)                                                         \
      GLIBC(void (*)(__pthread_unwind_buf_t*), name)(b);                      \
    else                                                                      \
      target(b);                                                              \
  }
ITO_CLEANUP(__pthread_register_cancel, ito_pthread_register_cancel)
ITO_CLEANUP(__pthread_unregister_cancel, ito_pthread_unregister_cancel)
ITO_CLEANUP(__pthread_register_cancel_defer, ito_pthread_register_cancel_defer)
ITO_CLEANUP(__pthread_unregister_cancel_restore, ito_pthread_unregister_cancel_restore)
__attribute__((visibility("default"), noreturn)) void __pthread_unwind_next(
    __pthread_unwind_buf_t* b) {
  if (g_step_aside) GLIBC(void (*)(__pthread_unwind_buf_t*), __pthread_unwind_next)(b);
  ito_pthread_unwind_next(b);
}
/* The old ABI (binaries built against glibc before 2.3.3). */
#define ITO_OLD_CLEANUP(name, body, params, args)                             \
  __attribute__((visibility("default"))) void name params {                   \
    if (g_step_aside)                                                         \
      GLIBC(void(*) params, name) args;                                       \
    else                                                                      \
      body;                                                                   \
  }
ITO_OLD_CLEANUP(_pthread_cleanup_push, ito_pthread_cleanup_push_routine(b, f, a),
                (struct _pthread_cleanup_buffer * b, void (*f)(void*), void* a), (b, f, a))
ITO_OLD_CLEANUP(_pthread_cleanup_pop, ito_pthread_cleanup_pop_routine(b, e),
                (struct _pthread_cleanup_buffer * b, int e), (b, e))
ITO_OLD_CLEANUP(_pthread_cleanup_push_defer, ito_pthread_cleanup_push_routine(b, f, a),
                (struct _pthread_cleanup_buffer * b, void (*f)(void*), void* a), (b, f, a))
ITO_OLD_CLEANUP(_pthread_cleanup_pop_restore, ito_pthread_cleanup_pop_routine(b, e),
                (struct _pthread_cleanup_buffer * b, int e), (b, e))

/* glibc's exported internal names of the same calls (GLIBC_2.2.5), which
 * older binaries and libraries may still reach. True aliases: a wrapper that
 * called the public name would be the library's own call, which goes to
 * glibc, on an ito object (it did so in unoptimised builds). */
#define ITO_ALIAS(ret, other, target, params)                                  \
  __attribute__((visibility("default"), alias(#target), copy(target))) ret other params;
ITO_ALIAS(int, __pthread_mutex_init, pthread_mutex_init,
          (pthread_mutex_t * m, const pthread_mutexattr_t* a))
ITO_ALIAS(int, __pthread_mutex_destroy, pthread_mutex_destroy, (pthread_mutex_t * m))
ITO_ALIAS(int, __pthread_mutex_lock, pthread_mutex_lock, (pthread_mutex_t * m))
ITO_ALIAS(int, __pthread_mutex_trylock, pthread_mutex_trylock, (pthread_mutex_t * m))
ITO_ALIAS(int, __pthread_mutex_unlock, pthread_mutex_unlock, (pthread_mutex_t * m))
ITO_ALIAS(int, __pthread_rwlock_init, pthread_rwlock_init,
          (pthread_rwlock_t * l, const pthread_rwlockattr_t* a))
ITO_ALIAS(int, __pthread_rwlock_destroy, pthread_rwlock_destroy, (pthread_rwlock_t * l))
ITO_ALIAS(int, __pthread_rwlock_rdlock, pthread_rwlock_rdlock, (pthread_rwlock_t * l))
ITO_ALIAS(int, __pthread_rwlock_tryrdlock, pthread_rwlock_tryrdlock, (pthread_rwlock_t * l))
ITO_ALIAS(int, __pthread_rwlock_wrlock, pthread_rwlock_wrlock, (pthread_rwlock_t * l))
ITO_ALIAS(int, __pthread_rwlock_trywrlock, pthread_rwlock_trywrlock, (pthread_rwlock_t * l))
ITO_ALIAS(int, __pthread_rwlock_unlock, pthread_rwlock_unlock, (pthread_rwlock_t * l))
ITO_ALIAS(int, __pthread_key_create, pthread_key_create, (pthread_key_t * k, void (*d)(void*)))
ITO_ALIAS(void*, __pthread_getspecific, pthread_getspecific, (pthread_key_t k))
ITO_ALIAS(int, __pthread_once, pthread_once, (pthread_once_t * o, void (*f)(void)))
ITO_ALIAS(int, __pthread_setspecific, pthread_setspecific, (pthread_key_t k, const void* v))

/* Blocking system calls: from a thread (a ULT) through ito::io, so that it
 * parks alone instead of stalling its worker (src/compat/posix_io.cpp). */
ITO_FORWARD(ssize_t, read, (int fd, void* b, size_t n), (fd, b, n))
ITO_FORWARD(ssize_t, write, (int fd, const void* b, size_t n), (fd, b, n))
ITO_FORWARD(ssize_t, pread, (int fd, void* b, size_t n, off_t o), (fd, b, n, o))
ITO_FORWARD(ssize_t, pwrite, (int fd, const void* b, size_t n, off_t o), (fd, b, n, o))
ITO_FORWARD(int, close, (int fd), (fd))
ITO_FORWARD(int, fsync, (int fd), (fd))
ITO_FORWARD(int, accept, (int fd, struct sockaddr* a, socklen_t* l), (fd, a, l))
ITO_FORWARD(int, accept4, (int fd, struct sockaddr* a, socklen_t* l, int f), (fd, a, l, f))
ITO_FORWARD(int, connect, (int fd, const struct sockaddr* a, socklen_t l), (fd, a, l))
ITO_FORWARD(ssize_t, recv, (int fd, void* b, size_t n, int f), (fd, b, n, f))
ITO_FORWARD(ssize_t, send, (int fd, const void* b, size_t n, int f), (fd, b, n, f))
ITO_FORWARD(int, poll, (struct pollfd * p, nfds_t n, int t), (p, n, t))
ITO_FORWARD(int, nanosleep, (const struct timespec* r, struct timespec* m), (r, m))
ITO_FORWARD(int, usleep, (useconds_t u), (u))
ITO_FORWARD(unsigned, sleep, (unsigned s), (s))
ITO_FORWARD(pid_t, waitpid, (pid_t p, int* s, int o), (p, s, o))
ITO_FORWARD(pid_t, wait, (int* s), (s))
ITO_FORWARD(int, waitid, (idtype_t t, id_t i, siginfo_t* s, int o), (t, i, s, o))
ITO_FORWARD(int, select, (int n, fd_set* r, fd_set* w, fd_set* e, struct timeval* t),
            (n, r, w, e, t))
ITO_FORWARD(int, pselect,
            (int n, fd_set* r, fd_set* w, fd_set* e, const struct timespec* t, const sigset_t* m),
            (n, r, w, e, t, m))
ITO_FORWARD(int, ppoll, (struct pollfd * p, nfds_t n, const struct timespec* t, const sigset_t* m),
            (p, n, t, m))
ITO_FORWARD(int, epoll_wait, (int f, struct epoll_event* e, int n, int t), (f, e, n, t))
ITO_FORWARD(int, epoll_pwait, (int f, struct epoll_event* e, int n, int t, const sigset_t* m),
            (f, e, n, t, m))

/* open is variadic: the mode exists only with O_CREAT or O_TMPFILE. */
static mode_t open_mode(int flags, va_list ap) {
  return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}
__attribute__((visibility("hidden"))) int __wrap_open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = open_mode(flags, ap);
  va_end(ap);
  return GLIBC(int (*)(const char*, int, ...), open)(path, flags, mode);
}
__attribute__((visibility("default"))) int open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = open_mode(flags, ap);
  va_end(ap);
  return g_step_aside ? __wrap_open(path, flags, mode) : ito_open(path, flags, mode);
}

/* The rest of the blocking calls (src/compat/posix_blocking.cpp;
 * docs/POSIX.md, "Blocking calls"), with the *64 names of the same calls
 * (off_t is 64 bits: the same functions) that programs built with
 * _FILE_OFFSET_BITS=64 call, and _FORTIFY_SOURCE's checking entry points,
 * whose glibc versions reach glibc's read (or recv, poll...) without the PLT. */
ITO_FORWARD(int, clock_nanosleep, (clockid_t c, int f, const struct timespec* r, struct timespec* m),
            (c, f, r, m))
ITO_FORWARD(int, thrd_sleep, (const struct timespec* r, struct timespec* m), (r, m))
ITO_FORWARD(ssize_t, readv, (int fd, const struct iovec* v, int n), (fd, v, n))
ITO_FORWARD(ssize_t, writev, (int fd, const struct iovec* v, int n), (fd, v, n))
ITO_FORWARD(ssize_t, preadv, (int fd, const struct iovec* v, int n, off_t o), (fd, v, n, o))
ITO_FORWARD(ssize_t, pwritev, (int fd, const struct iovec* v, int n, off_t o), (fd, v, n, o))
ITO_FORWARD(ssize_t, preadv2, (int fd, const struct iovec* v, int n, off_t o, int f),
            (fd, v, n, o, f))
ITO_FORWARD(ssize_t, pwritev2, (int fd, const struct iovec* v, int n, off_t o, int f),
            (fd, v, n, o, f))
ITO_FORWARD_TO(ssize_t, pread64, ito_pread, (int fd, void* b, size_t n, off_t o), (fd, b, n, o))
ITO_FORWARD_TO(ssize_t, pwrite64, ito_pwrite, (int fd, const void* b, size_t n, off_t o),
               (fd, b, n, o))
ITO_FORWARD_TO(ssize_t, preadv64, ito_preadv, (int fd, const struct iovec* v, int n, off_t o),
               (fd, v, n, o))
ITO_FORWARD_TO(ssize_t, pwritev64, ito_pwritev, (int fd, const struct iovec* v, int n, off_t o),
               (fd, v, n, o))
ITO_FORWARD_TO(ssize_t, preadv64v2, ito_preadv2,
               (int fd, const struct iovec* v, int n, off_t o, int f), (fd, v, n, o, f))
ITO_FORWARD_TO(ssize_t, pwritev64v2, ito_pwritev2,
               (int fd, const struct iovec* v, int n, off_t o, int f), (fd, v, n, o, f))
ITO_FORWARD(ssize_t, recvfrom,
            (int fd, void* b, size_t n, int f, struct sockaddr* a, socklen_t* l),
            (fd, b, n, f, a, l))
ITO_FORWARD(ssize_t, sendto,
            (int fd, const void* b, size_t n, int f, const struct sockaddr* a, socklen_t l),
            (fd, b, n, f, a, l))
ITO_FORWARD(ssize_t, recvmsg, (int fd, struct msghdr* m, int f), (fd, m, f))
ITO_FORWARD(ssize_t, sendmsg, (int fd, const struct msghdr* m, int f), (fd, m, f))
ITO_FORWARD(int, recvmmsg, (int fd, struct mmsghdr* m, unsigned int n, int f, struct timespec* t),
            (fd, m, n, f, t))
ITO_FORWARD(int, sendmmsg, (int fd, struct mmsghdr* m, unsigned int n, int f), (fd, m, n, f))
ITO_FORWARD(int, creat, (const char* p, mode_t m), (p, m))
ITO_FORWARD_TO(int, creat64, ito_creat, (const char* p, mode_t m), (p, m))
ITO_FORWARD(pid_t, wait3, (int* s, int o, struct rusage* u), (s, o, u))
ITO_FORWARD(pid_t, wait4, (pid_t p, int* s, int o, struct rusage* u), (p, s, o, u))
ITO_FORWARD(int, pause, (void), ())
ITO_FORWARD(int, flock, (int fd, int op), (fd, op))
ITO_FORWARD(int, lockf, (int fd, int c, off_t n), (fd, c, n))
ITO_FORWARD_TO(int, lockf64, ito_lockf, (int fd, int c, off_t n), (fd, c, n))
ITO_FORWARD(ssize_t, msgrcv, (int q, void* m, size_t n, long t, int f), (q, m, n, t, f))
ITO_FORWARD(int, msgsnd, (int q, const void* m, size_t n, int f), (q, m, n, f))
ITO_FORWARD(int, semop, (int id, struct sembuf* o, size_t n), (id, o, n))
ITO_FORWARD(int, semtimedop, (int id, struct sembuf* o, size_t n, const struct timespec* t),
            (id, o, n, t))
ITO_FORWARD(ssize_t, mq_receive, (mqd_t q, char* m, size_t n, unsigned int* p), (q, m, n, p))
ITO_FORWARD(int, mq_send, (mqd_t q, const char* m, size_t n, unsigned int p), (q, m, n, p))
ITO_FORWARD(ssize_t, mq_timedreceive,
            (mqd_t q, char* m, size_t n, unsigned int* p, const struct timespec* t),
            (q, m, n, p, t))
ITO_FORWARD(int, mq_timedsend,
            (mqd_t q, const char* m, size_t n, unsigned int p, const struct timespec* t),
            (q, m, n, p, t))
ITO_FORWARD(int, epoll_pwait2,
            (int f, struct epoll_event* e, int n, const struct timespec* t, const sigset_t* m),
            (f, e, n, t, m))
ITO_FORWARD(int, getaddrinfo,
            (const char* n, const char* s, const struct addrinfo* h, struct addrinfo** r),
            (n, s, h, r))
ITO_FORWARD_TO(ssize_t, __read_chk, ito_read_chk, (int fd, void* b, size_t n, size_t l),
               (fd, b, n, l))
ITO_FORWARD_TO(ssize_t, __pread_chk, ito_pread_chk, (int fd, void* b, size_t n, off_t o, size_t l),
               (fd, b, n, o, l))
ITO_FORWARD_TO(ssize_t, __pread64_chk, ito_pread_chk,
               (int fd, void* b, size_t n, off_t o, size_t l), (fd, b, n, o, l))
ITO_FORWARD_TO(ssize_t, __recv_chk, ito_recv_chk, (int fd, void* b, size_t n, size_t l, int f),
               (fd, b, n, l, f))
ITO_FORWARD_TO(ssize_t, __recvfrom_chk, ito_recvfrom_chk,
               (int fd, void* b, size_t n, size_t l, int f, struct sockaddr* a, socklen_t* al),
               (fd, b, n, l, f, a, al))
ITO_FORWARD_TO(int, __poll_chk, ito_poll_chk, (struct pollfd * p, nfds_t n, int t, size_t l),
               (p, n, t, l))
ITO_FORWARD_TO(int, __ppoll_chk, ito_ppoll_chk,
               (struct pollfd * p, nfds_t n, const struct timespec* t, const sigset_t* m,
                size_t l),
               (p, n, t, m, l))

/* The open family with a mode argument (present only with O_CREAT or
 * O_TMPFILE), and fcntl, whose one argument glibc reads as a pointer. */
#define ITO_FORWARD_OPEN(ret, name, target, params, args)                     \
  __attribute__((visibility("hidden"))) ret __wrap_##name params {            \
    va_list ap;                                                               \
    va_start(ap, flags);                                                      \
    const mode_t mode = open_mode(flags, ap);                                 \
    va_end(ap);                                                               \
    return GLIBC(ret(*) params, name) args;                                   \
  }                                                                           \
  __attribute__((visibility("default"))) ret name params {                    \
    va_list ap;                                                               \
    va_start(ap, flags);                                                      \
    const mode_t mode = open_mode(flags, ap);                                 \
    va_end(ap);                                                               \
    return g_step_aside ? __wrap_##name args : target args;                   \
  }
ITO_FORWARD_OPEN(int, open64, ito_open64, (const char* path, int flags, ...), (path, flags, mode))
ITO_FORWARD_OPEN(int, openat, ito_openat, (int dir, const char* path, int flags, ...),
                 (dir, path, flags, mode))
ITO_FORWARD_OPEN(int, openat64, ito_openat, (int dir, const char* path, int flags, ...),
                 (dir, path, flags, mode))
#define ITO_FORWARD_FCNTL(ret, name)                                          \
  __attribute__((visibility("hidden"))) ret __wrap_##name(int fd, int cmd, ...) { \
    va_list ap;                                                               \
    va_start(ap, cmd);                                                        \
    void* arg = va_arg(ap, void*);                                            \
    va_end(ap);                                                               \
    return GLIBC(ret(*)(int, int, ...), name)(fd, cmd, arg);                  \
  }                                                                           \
  __attribute__((visibility("default"))) ret name(int fd, int cmd, ...) {     \
    va_list ap;                                                               \
    va_start(ap, cmd);                                                        \
    void* arg = va_arg(ap, void*);                                            \
    va_end(ap);                                                               \
    return g_step_aside ? __wrap_##name(fd, cmd, arg) : ito_fcntl(fd, cmd, arg); \
  }
ITO_FORWARD_FCNTL(int, fcntl)
ITO_FORWARD_FCNTL(int, fcntl64)
/* _FORTIFY_SOURCE's open without a mode: one that needs a mode is glibc's
 * to report (it aborts). */
static int needs_mode(int flags) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}
static int ito_open_2(const char* path, int flags) {
  if (needs_mode(flags)) return GLIBC(int (*)(const char*, int), __open_2)(path, flags);
  return ito_open(path, flags);
}
static int ito_open64_2(const char* path, int flags) {
  if (needs_mode(flags)) return GLIBC(int (*)(const char*, int), __open64_2)(path, flags);
  return ito_open64(path, flags);
}
static int ito_openat_2(int dir, const char* path, int flags) {
  if (needs_mode(flags)) return GLIBC(int (*)(int, const char*, int), __openat_2)(dir, path, flags);
  return ito_openat(dir, path, flags);
}
static int ito_openat64_2(int dir, const char* path, int flags) {
  if (needs_mode(flags))
    return GLIBC(int (*)(int, const char*, int), __openat64_2)(dir, path, flags);
  return ito_openat(dir, path, flags);
}
ITO_FORWARD_TO(int, __open_2, ito_open_2, (const char* p, int f), (p, f))
ITO_FORWARD_TO(int, __open64_2, ito_open64_2, (const char* p, int f), (p, f))
ITO_FORWARD_TO(int, __openat_2, ito_openat_2, (int d, const char* p, int f), (d, p, f))
ITO_FORWARD_TO(int, __openat64_2, ito_openat64_2, (int d, const char* p, int f), (d, p, f))

/* syscall(SYS_gettid) is how CPython (threading.get_native_id) and much C
 * code ask for a thread's id, syscall(SYS_tgkill) how they signal one, and
 * syscall(SYS_futex) how Rust's std waits: those reach ito
 * (src/compat/posix_thread_ids.cpp, posix_futex.cpp); every other number goes
 * to glibc as it came. glibc's syscall reads six arguments whatever the
 * number, and so does this. */
#define ITO_SYSCALL_ARGS(ap, a)                                               \
  do {                                                                        \
    va_start(ap, n);                                                          \
    for (int i = 0; i < 6; ++i) a[i] = va_arg(ap, long);                      \
    va_end(ap);                                                               \
  } while (0)
__attribute__((visibility("hidden"))) long __wrap_syscall(long n, ...) {
  va_list ap;
  long a[6];
  ITO_SYSCALL_ARGS(ap, a);
  return GLIBC(long (*)(long, ...), syscall)(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}
__attribute__((visibility("default"))) long syscall(long n, ...) {
  va_list ap;
  long a[6];
  ITO_SYSCALL_ARGS(ap, a);
  if (!g_step_aside) {
    if (n == SYS_gettid) return ito_gettid();
    if (n == SYS_tgkill) return ito_tgkill((pid_t)a[0], (pid_t)a[1], (int)a[2]);
    if (n == SYS_tkill) return ito_tgkill(getpid(), (pid_t)a[0], (int)a[1]);
    if (n == SYS_futex)
      return ito_preload_futex((uint32_t*)a[0], (int)a[1], (uint32_t)a[2],
                               (const struct timespec*)a[3], (uint32_t*)a[4], (uint32_t)a[5]);
  }
  return GLIBC(long (*)(long, ...), syscall)(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* glibc's <pthread.h> maps pthread_yield to sched_yield by asm label, so
 * programs built against it call sched_yield; older binaries still name it. */
__attribute__((visibility("default"))) int ito_preload_pthread_yield(void) __asm__("pthread_yield");
int ito_preload_pthread_yield(void) {
  return g_step_aside ? __wrap_sched_yield() : ito_pthread_yield();
}

/* glibc's header maps this one to pthread_mutex_consistent by asm label. */
__attribute__((visibility("default"))) int ito_preload_mutex_consistent_np(pthread_mutex_t* m)
    __asm__("pthread_mutex_consistent_np");
int ito_preload_mutex_consistent_np(pthread_mutex_t* m) {
  return g_step_aside ? __wrap_pthread_mutex_consistent(m) : ito_pthread_mutex_consistent(m);
}

/* Written out: it must not return (the runtime never calls it). */
__attribute__((visibility("default"), noreturn)) void pthread_exit(void* value) {
  if (g_step_aside) GLIBC(void (*)(void*), pthread_exit)(value);
  ito_pthread_exit(value);
}

/* After the other libraries have initialised (a preloaded object comes
 * early in the search order, so it is initialised late), before the
 * program's own constructors: from here the runtime starts at the first call
 * that needs it, and the main thread becomes the main ULT then, unless the
 * program's threads are to stay OS threads (thread_mode.c). A process that
 * never makes a thread nor waits starts none, however many locks it takes.
 * A bad ITO_* variable ends the program here, with the usual message and
 * exit status 2 (ito_posix_check_environment). */
__attribute__((constructor)) static void ito_preload_start(void) {
  look_up_every_glibc_function();
  if (ito_preload_threads_as_ults()) {
    ito_posix_preload_ready();
  } else {
    ito_posix_check_environment();
    g_step_aside = 1;
  }
}
