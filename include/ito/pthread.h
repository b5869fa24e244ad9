/* SPDX-License-Identifier: Apache-2.0 */
/* POSIX threads on ito's user-level threads (ULTs), source-compatible.
 *
 * Include this header (or compile with `-include ito/pthread.h`) and link
 * with ito: every pthread_* call named below is renamed to ito_pthread_*, so
 * an unmodified pthread program runs its threads as ULTs. The types stay
 * glibc's (pthread_t, pthread_mutex_t, ...): ito keeps its objects inside
 * their storage, and the static initialisers (PTHREAD_MUTEX_INITIALIZER,
 * PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP, PTHREAD_COND_INITIALIZER,
 * PTHREAD_RWLOCK_INITIALIZER, PTHREAD_ONCE_INIT) keep working.
 *
 * The runtime starts on the first call (ITO_WORKERS workers); the calling OS
 * thread becomes the main ULT, bound to worker 0. Return codes are POSIX's.
 * Stack attributes work: a caller-supplied stack (pthread_attr_setstack,
 * glibc's own setter) is used as given, and a stack size above the runtime's
 * (ITO_STACK_SIZE) gets a stack mapped for that thread. Cancellation is
 * per ULT (docs/POSIX.md, "Cancellation"). Unsupported: some process-shared
 * objects (process-shared and named semaphores stay glibc's).
 * See docs/POSIX.md for the limits (TLS, errno, blocking system calls).
 *
 * Define ITO_PTHREAD_NO_RENAME before including it to get the ito_pthread_*
 * declarations without the renaming (benchmarks compare both in one file). */
#ifndef ITO_PTHREAD_H
#define ITO_PTHREAD_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP, pthread_yield */
#endif
#include <fcntl.h>
#include <mqueue.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Threads */
int ito_pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                       void* arg);
__attribute__((__noreturn__)) void ito_pthread_exit(void* retval);
int ito_pthread_join(pthread_t thread, void** retval);
int ito_pthread_detach(pthread_t thread);
pthread_t ito_pthread_self(void);
int ito_pthread_equal(pthread_t a, pthread_t b);
int ito_pthread_yield(void);
int ito_sched_yield(void);
int ito_pthread_cancel(pthread_t thread);
int ito_pthread_setcancelstate(int state, int* oldstate);
int ito_pthread_setcanceltype(int type, int* oldtype);
void ito_pthread_testcancel(void);

/* Calls that take a thread (docs/POSIX.md says what a ULT does with each). */
int ito_pthread_getattr_np(pthread_t thread, pthread_attr_t* attr);
int ito_pthread_kill(pthread_t thread, int sig);
int ito_pthread_sigqueue(pthread_t thread, int sig, const union sigval value);
/* A thread's id as gettid(2) gives it (docs/POSIX.md, "Thread ids"): the
 * main thread's is its OS thread's; another thread's is a number above the
 * kernel's range of ids, distinct per live thread, which tgkill takes. */
pid_t ito_gettid(void);
int ito_tgkill(pid_t pid, pid_t tid, int sig);
/* Signal masks and waits (docs/POSIX.md, "Signals"): the main thread's mask
 * is its OS thread's; the other threads share one; waits are delegated. */
int ito_pthread_sigmask(int how, const sigset_t* set, sigset_t* old);
int ito_sigprocmask(int how, const sigset_t* set, sigset_t* old);
int ito_raise(int sig);
int ito_sigpending(sigset_t* set);
int ito_sigwait(const sigset_t* set, int* sig);
int ito_sigwaitinfo(const sigset_t* set, siginfo_t* info);
int ito_sigtimedwait(const sigset_t* set, siginfo_t* info, const struct timespec* timeout);
int ito_sigsuspend(const sigset_t* mask);
int ito_pthread_getschedparam(pthread_t thread, int* policy, struct sched_param* param);
int ito_pthread_setschedparam(pthread_t thread, int policy, const struct sched_param* param);
int ito_pthread_setschedprio(pthread_t thread, int priority);
int ito_pthread_setname_np(pthread_t thread, const char* name);
int ito_pthread_getname_np(pthread_t thread, char* buf, size_t size);
int ito_pthread_getcpuclockid(pthread_t thread, clockid_t* clock);
int ito_pthread_setaffinity_np(pthread_t thread, size_t size, const cpu_set_t* set);
int ito_pthread_getaffinity_np(pthread_t thread, size_t size, cpu_set_t* set);
int ito_pthread_tryjoin_np(pthread_t thread, void** retval);
int ito_pthread_timedjoin_np(pthread_t thread, void** retval, const struct timespec* abstime);
int ito_pthread_clockjoin_np(pthread_t thread, void** retval, clockid_t clock,
                             const struct timespec* abstime);

/* Cleanup handlers of glibc's plain-C pthread_cleanup_push/pop macros, kept
 * per ULT, and the old ABI's _pthread_cleanup_push/pop. */
void ito_pthread_register_cancel(__pthread_unwind_buf_t* buf);
void ito_pthread_unregister_cancel(__pthread_unwind_buf_t* buf);
void ito_pthread_register_cancel_defer(__pthread_unwind_buf_t* buf);
void ito_pthread_unregister_cancel_restore(__pthread_unwind_buf_t* buf);
__attribute__((__noreturn__)) void ito_pthread_unwind_next(__pthread_unwind_buf_t* buf);
void ito_pthread_cleanup_push_routine(struct _pthread_cleanup_buffer* buffer,
                                      void (*routine)(void*), void* arg);
void ito_pthread_cleanup_pop_routine(struct _pthread_cleanup_buffer* buffer, int execute);

int ito_pthread_attr_init(pthread_attr_t* attr);
int ito_pthread_attr_destroy(pthread_attr_t* attr);
int ito_pthread_attr_setdetachstate(pthread_attr_t* attr, int state);
int ito_pthread_attr_getdetachstate(const pthread_attr_t* attr, int* state);
int ito_pthread_attr_setstacksize(pthread_attr_t* attr, size_t size);
int ito_pthread_attr_getstacksize(const pthread_attr_t* attr, size_t* size);

int ito_pthread_once(pthread_once_t* once, void (*fn)(void));

/* Mutexes */
int ito_pthread_mutexattr_init(pthread_mutexattr_t* attr);
int ito_pthread_mutexattr_destroy(pthread_mutexattr_t* attr);
int ito_pthread_mutexattr_settype(pthread_mutexattr_t* attr, int type);
int ito_pthread_mutexattr_gettype(const pthread_mutexattr_t* attr, int* type);
int ito_pthread_mutex_init(pthread_mutex_t* mutex, const pthread_mutexattr_t* attr);
int ito_pthread_mutex_destroy(pthread_mutex_t* mutex);
int ito_pthread_mutex_lock(pthread_mutex_t* mutex);
int ito_pthread_mutex_trylock(pthread_mutex_t* mutex);
int ito_pthread_mutex_timedlock(pthread_mutex_t* mutex, const struct timespec* abstime);
int ito_pthread_mutex_unlock(pthread_mutex_t* mutex);
int ito_pthread_mutex_clocklock(pthread_mutex_t* mutex, clockid_t clock,
                                const struct timespec* abstime);
/* EINVAL: ito's mutexes are never robust. */
int ito_pthread_mutex_consistent(pthread_mutex_t* mutex);
/* A PTHREAD_PRIO_PROTECT mutex's ceiling, kept and reported, not acted on
 * (docs/POSIX.md, "Scheduling and priorities"); EINVAL for other mutexes. */
int ito_pthread_mutex_getprioceiling(const pthread_mutex_t* mutex, int* ceiling);
int ito_pthread_mutex_setprioceiling(pthread_mutex_t* mutex, int ceiling, int* old_ceiling);

/* Condition variables */
int ito_pthread_condattr_init(pthread_condattr_t* attr);
int ito_pthread_condattr_destroy(pthread_condattr_t* attr);
int ito_pthread_condattr_setclock(pthread_condattr_t* attr, clockid_t clock);
int ito_pthread_condattr_getclock(const pthread_condattr_t* attr, clockid_t* clock);
int ito_pthread_cond_init(pthread_cond_t* cond, const pthread_condattr_t* attr);
int ito_pthread_cond_destroy(pthread_cond_t* cond);
int ito_pthread_cond_wait(pthread_cond_t* cond, pthread_mutex_t* mutex);
int ito_pthread_cond_timedwait(pthread_cond_t* cond, pthread_mutex_t* mutex,
                               const struct timespec* abstime);
int ito_pthread_cond_clockwait(pthread_cond_t* cond, pthread_mutex_t* mutex, clockid_t clock,
                               const struct timespec* abstime);
int ito_pthread_cond_signal(pthread_cond_t* cond);
int ito_pthread_cond_broadcast(pthread_cond_t* cond);

/* Thread-specific data (per ULT) */
int ito_pthread_key_create(pthread_key_t* key, void (*destructor)(void*));
int ito_pthread_key_delete(pthread_key_t key);
void* ito_pthread_getspecific(pthread_key_t key);
int ito_pthread_setspecific(pthread_key_t key, const void* value);

/* Barriers, read-write locks, spinlocks */
int ito_pthread_barrier_init(pthread_barrier_t* barrier, const pthread_barrierattr_t* attr,
                             unsigned count);
int ito_pthread_barrier_destroy(pthread_barrier_t* barrier);
int ito_pthread_barrier_wait(pthread_barrier_t* barrier);
int ito_pthread_rwlock_init(pthread_rwlock_t* rwlock, const pthread_rwlockattr_t* attr);
int ito_pthread_rwlock_destroy(pthread_rwlock_t* rwlock);
int ito_pthread_rwlock_rdlock(pthread_rwlock_t* rwlock);
int ito_pthread_rwlock_tryrdlock(pthread_rwlock_t* rwlock);
int ito_pthread_rwlock_wrlock(pthread_rwlock_t* rwlock);
int ito_pthread_rwlock_trywrlock(pthread_rwlock_t* rwlock);
int ito_pthread_rwlock_unlock(pthread_rwlock_t* rwlock);
int ito_pthread_rwlock_timedrdlock(pthread_rwlock_t* rwlock, const struct timespec* abstime);
int ito_pthread_rwlock_timedwrlock(pthread_rwlock_t* rwlock, const struct timespec* abstime);
int ito_pthread_rwlock_clockrdlock(pthread_rwlock_t* rwlock, clockid_t clock,
                                   const struct timespec* abstime);
int ito_pthread_rwlock_clockwrlock(pthread_rwlock_t* rwlock, clockid_t clock,
                                   const struct timespec* abstime);
int ito_pthread_spin_init(pthread_spinlock_t* lock, int pshared);
int ito_pthread_spin_destroy(pthread_spinlock_t* lock);
int ito_pthread_spin_lock(pthread_spinlock_t* lock);
int ito_pthread_spin_trylock(pthread_spinlock_t* lock);
int ito_pthread_spin_unlock(pthread_spinlock_t* lock);

/* Unnamed semaphores (sem_t), ULT-aware: each is an ito::counting_semaphore,
 * so a waiter parks only its thread and posts reach waiters in arrival order.
 * Process-shared ones (pshared=1) and named ones (sem_open) stay glibc's.
 * Return -1 and set errno, as sem_*. */
int ito_posix_sem_init(sem_t* sem, int pshared, unsigned value);
int ito_posix_sem_destroy(sem_t* sem);
int ito_posix_sem_wait(sem_t* sem);
int ito_posix_sem_trywait(sem_t* sem);
int ito_posix_sem_timedwait(sem_t* sem, const struct timespec* abstime);
int ito_posix_sem_clockwait(sem_t* sem, clockid_t clock, const struct timespec* abstime);
int ito_posix_sem_post(sem_t* sem);
int ito_posix_sem_getvalue(sem_t* sem, int* value);

/* Blocking system calls (ito::io, docs/IO.md): from a thread (a ULT) they
 * park only that thread; outside a ULT they are the plain calls. */
ssize_t ito_read(int fd, void* buf, size_t count);
ssize_t ito_write(int fd, const void* buf, size_t count);
ssize_t ito_pread(int fd, void* buf, size_t count, off_t offset);
ssize_t ito_pwrite(int fd, const void* buf, size_t count, off_t offset);
int ito_open(const char* path, int flags, ...);
int ito_close(int fd);
int ito_fsync(int fd);
int ito_accept(int fd, struct sockaddr* addr, socklen_t* addrlen);
int ito_accept4(int fd, struct sockaddr* addr, socklen_t* addrlen, int flags);
int ito_connect(int fd, const struct sockaddr* addr, socklen_t addrlen);
ssize_t ito_recv(int fd, void* buf, size_t count, int flags);
ssize_t ito_send(int fd, const void* buf, size_t count, int flags);
int ito_poll(struct pollfd* fds, nfds_t nfds, int timeout_ms);
int ito_nanosleep(const struct timespec* request, struct timespec* remaining);
int ito_usleep(useconds_t usec);
unsigned ito_sleep(unsigned seconds);
/* Waits with no parking of their own: from a ULT the whole call is delegated
 * to a pool thread, so the worker runs other threads meanwhile. */
pid_t ito_waitpid(pid_t pid, int* status, int options);
pid_t ito_wait(int* status);
int ito_waitid(idtype_t idtype, id_t id, siginfo_t* info, int options);
int ito_select(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds,
               struct timeval* timeout);
int ito_pselect(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds,
                const struct timespec* timeout, const sigset_t* sigmask);
int ito_ppoll(struct pollfd* fds, nfds_t nfds, const struct timespec* timeout,
              const sigset_t* sigmask);
int ito_epoll_wait(int epfd, struct epoll_event* events, int maxevents, int timeout_ms);
int ito_epoll_pwait(int epfd, struct epoll_event* events, int maxevents, int timeout_ms,
                    const sigset_t* sigmask);
/* The rest (docs/POSIX.md, "Blocking calls"; src/compat/posix_blocking.cpp):
 * clock_nanosleep and thrd_sleep on the runtime's timers (CLOCK_MONOTONIC and
 * CLOCK_REALTIME; other clocks delegated), the vector, address and message
 * socket calls through ito::io, and the others delegated. */
struct rusage;
struct sembuf;
struct addrinfo;
int ito_clock_nanosleep(clockid_t clock, int flags, const struct timespec* request,
                        struct timespec* remaining);
int ito_thrd_sleep(const struct timespec* duration, struct timespec* remaining);
ssize_t ito_readv(int fd, const struct iovec* iov, int iovcnt);
ssize_t ito_writev(int fd, const struct iovec* iov, int iovcnt);
ssize_t ito_preadv(int fd, const struct iovec* iov, int iovcnt, off_t offset);
ssize_t ito_pwritev(int fd, const struct iovec* iov, int iovcnt, off_t offset);
ssize_t ito_preadv2(int fd, const struct iovec* iov, int iovcnt, off_t offset, int flags);
ssize_t ito_pwritev2(int fd, const struct iovec* iov, int iovcnt, off_t offset, int flags);
ssize_t ito_recvfrom(int fd, void* buf, size_t count, int flags, struct sockaddr* addr,
                     socklen_t* addrlen);
ssize_t ito_sendto(int fd, const void* buf, size_t count, int flags, const struct sockaddr* addr,
                   socklen_t addrlen);
ssize_t ito_recvmsg(int fd, struct msghdr* msg, int flags);
ssize_t ito_sendmsg(int fd, const struct msghdr* msg, int flags);
int ito_recvmmsg(int fd, struct mmsghdr* msgs, unsigned int vlen, int flags,
                 struct timespec* timeout);
int ito_sendmmsg(int fd, struct mmsghdr* msgs, unsigned int vlen, int flags);
int ito_openat(int dirfd, const char* path, int flags, ...);
int ito_open64(const char* path, int flags, ...);
int ito_creat(const char* path, mode_t mode);
pid_t ito_wait3(int* status, int options, struct rusage* usage);
pid_t ito_wait4(pid_t pid, int* status, int options, struct rusage* usage);
int ito_pause(void);
int ito_flock(int fd, int operation);
int ito_fcntl(int fd, int cmd, ...); /* only F_SETLKW and F_OFD_SETLKW are delegated */
int ito_lockf(int fd, int cmd, off_t len);
ssize_t ito_msgrcv(int id, void* msg, size_t size, long type, int flags);
int ito_msgsnd(int id, const void* msg, size_t size, int flags);
int ito_semop(int id, struct sembuf* ops, size_t n);
int ito_semtimedop(int id, struct sembuf* ops, size_t n, const struct timespec* timeout);
ssize_t ito_mq_receive(mqd_t q, char* msg, size_t size, unsigned int* prio);
int ito_mq_send(mqd_t q, const char* msg, size_t size, unsigned int prio);
ssize_t ito_mq_timedreceive(mqd_t q, char* msg, size_t size, unsigned int* prio,
                            const struct timespec* abstime);
int ito_mq_timedsend(mqd_t q, const char* msg, size_t size, unsigned int prio,
                     const struct timespec* abstime);
int ito_epoll_pwait2(int epfd, struct epoll_event* events, int maxevents,
                     const struct timespec* timeout, const sigset_t* sigmask);
int ito_getaddrinfo(const char* node, const char* service, const struct addrinfo* hints,
                    struct addrinfo** res);
/* glibc's _FORTIFY_SOURCE entry points (__read_chk, ...): the check, then ito. */
ssize_t ito_read_chk(int fd, void* buf, size_t count, size_t buflen);
ssize_t ito_pread_chk(int fd, void* buf, size_t count, off_t offset, size_t buflen);
ssize_t ito_recv_chk(int fd, void* buf, size_t count, size_t buflen, int flags);
ssize_t ito_recvfrom_chk(int fd, void* buf, size_t count, size_t buflen, int flags,
                         struct sockaddr* addr, socklen_t* addrlen);
int ito_poll_chk(struct pollfd* fds, nfds_t nfds, int timeout_ms, size_t fdslen);
int ito_ppoll_chk(struct pollfd* fds, nfds_t nfds, const struct timespec* timeout,
                  const sigset_t* sigmask, size_t fdslen);

#ifdef __cplusplus
}
#endif

#if !defined(ITO_PTHREAD_NO_RENAME) && !defined(ITO_PTHREAD_NO_IO)
/* The system calls are renamed at the symbol level (asm labels), not with
 * macros: names like read and close are also members of C++ classes and C
 * structs. Limits: with _FORTIFY_SOURCE, glibc's inline read, pread, recv and
 * poll wrappers call glibc by their own alias when the buffer's size is
 * unknown, and bypass this (libito-preload.so catches those); with
 * _FILE_OFFSET_BITS=64 glibc has already renamed open, openat, creat, pread,
 * pwrite, preadv, pwritev, lockf and fcntl to their *64 names, and those stay
 * glibc's (see docs/POSIX.md, "Blocking calls"). Define ITO_PTHREAD_NO_IO to
 * keep the plain calls. */
/* glibc declares some of them __THROW: C++ needs the same exception
 * specification, which goes before the label there. */
#ifdef __cplusplus
#define ITO_NOTHROW_ASM(name) noexcept(true) __asm__(name)
#else
#define ITO_NOTHROW_ASM(name) __asm__(name)
#endif
#ifdef __cplusplus
extern "C" {
#endif
extern ssize_t read(int, void*, size_t) __asm__("ito_read");
extern ssize_t write(int, const void*, size_t) __asm__("ito_write");
#ifndef __USE_FILE_OFFSET64 /* else glibc renamed them (pread64...) first */
extern ssize_t pread(int, void*, size_t, off_t) __asm__("ito_pread");
extern ssize_t pwrite(int, const void*, size_t, off_t) __asm__("ito_pwrite");
extern int open(const char*, int, ...) __asm__("ito_open");
extern int openat(int, const char*, int, ...) __asm__("ito_openat");
extern int creat(const char*, mode_t) __asm__("ito_creat");
extern ssize_t preadv(int, const struct iovec*, int, off_t) __asm__("ito_preadv");
extern ssize_t pwritev(int, const struct iovec*, int, off_t) __asm__("ito_pwritev");
extern ssize_t preadv2(int, const struct iovec*, int, off_t, int) __asm__("ito_preadv2");
extern ssize_t pwritev2(int, const struct iovec*, int, off_t, int) __asm__("ito_pwritev2");
extern int lockf(int, int, off_t) __asm__("ito_lockf");
extern int fcntl(int, int, ...) __asm__("ito_fcntl");
#endif
extern int open64(const char*, int, ...) __asm__("ito_open64");
extern int clock_nanosleep(clockid_t, int, const struct timespec*, struct timespec*)
    __asm__("ito_clock_nanosleep");
extern int thrd_sleep(const struct timespec*, struct timespec*) __asm__("ito_thrd_sleep");
extern ssize_t readv(int, const struct iovec*, int) __asm__("ito_readv");
extern ssize_t writev(int, const struct iovec*, int) __asm__("ito_writev");
extern ssize_t recvfrom(int, void*, size_t, int, struct sockaddr*, socklen_t*)
    __asm__("ito_recvfrom");
extern ssize_t sendto(int, const void*, size_t, int, const struct sockaddr*, socklen_t)
    __asm__("ito_sendto");
extern ssize_t recvmsg(int, struct msghdr*, int) __asm__("ito_recvmsg");
extern ssize_t sendmsg(int, const struct msghdr*, int) __asm__("ito_sendmsg");
extern int recvmmsg(int, struct mmsghdr*, unsigned int, int, struct timespec*)
    __asm__("ito_recvmmsg");
extern int sendmmsg(int, struct mmsghdr*, unsigned int, int) __asm__("ito_sendmmsg");
extern pid_t wait3(int*, int, struct rusage*) ITO_NOTHROW_ASM("ito_wait3");
extern pid_t wait4(pid_t, int*, int, struct rusage*) ITO_NOTHROW_ASM("ito_wait4");
extern int pause(void) __asm__("ito_pause");
extern int flock(int, int) ITO_NOTHROW_ASM("ito_flock");
extern ssize_t msgrcv(int, void*, size_t, long, int) __asm__("ito_msgrcv");
extern int msgsnd(int, const void*, size_t, int) __asm__("ito_msgsnd");
extern int semop(int, struct sembuf*, size_t) ITO_NOTHROW_ASM("ito_semop");
extern int semtimedop(int, struct sembuf*, size_t, const struct timespec*)
    ITO_NOTHROW_ASM("ito_semtimedop");
extern ssize_t mq_receive(mqd_t, char*, size_t, unsigned int*) __asm__("ito_mq_receive");
extern int mq_send(mqd_t, const char*, size_t, unsigned int) __asm__("ito_mq_send");
extern ssize_t mq_timedreceive(mqd_t, char*, size_t, unsigned int*, const struct timespec*)
    __asm__("ito_mq_timedreceive");
extern int mq_timedsend(mqd_t, const char*, size_t, unsigned int, const struct timespec*)
    __asm__("ito_mq_timedsend");
extern int epoll_pwait2(int, struct epoll_event*, int, const struct timespec*, const sigset_t*)
    __asm__("ito_epoll_pwait2");
extern int getaddrinfo(const char*, const char*, const struct addrinfo*, struct addrinfo**)
    __asm__("ito_getaddrinfo");
extern ssize_t __read_chk(int, void*, size_t, size_t) __asm__("ito_read_chk");
extern ssize_t __pread_chk(int, void*, size_t, off_t, size_t) __asm__("ito_pread_chk");
extern ssize_t __recv_chk(int, void*, size_t, size_t, int) __asm__("ito_recv_chk");
extern ssize_t __recvfrom_chk(int, void*, size_t, size_t, int, struct sockaddr*, socklen_t*)
    __asm__("ito_recvfrom_chk");
extern int __poll_chk(struct pollfd*, nfds_t, int, size_t) __asm__("ito_poll_chk");
extern int __ppoll_chk(struct pollfd*, nfds_t, const struct timespec*, const sigset_t*, size_t)
    __asm__("ito_ppoll_chk");
extern int close(int) __asm__("ito_close");
extern int fsync(int) __asm__("ito_fsync");
extern int accept(int, struct sockaddr*, socklen_t*) __asm__("ito_accept");
extern int accept4(int, struct sockaddr*, socklen_t*, int) __asm__("ito_accept4");
extern int connect(int, const struct sockaddr*, socklen_t) __asm__("ito_connect");
extern ssize_t recv(int, void*, size_t, int) __asm__("ito_recv");
extern ssize_t send(int, const void*, size_t, int) __asm__("ito_send");
extern int poll(struct pollfd*, nfds_t, int) __asm__("ito_poll");
extern int nanosleep(const struct timespec*, struct timespec*) __asm__("ito_nanosleep");
extern int usleep(useconds_t) __asm__("ito_usleep");
extern unsigned sleep(unsigned) __asm__("ito_sleep");
extern int sigprocmask(int, const sigset_t*, sigset_t*) __asm__("ito_sigprocmask");
extern int raise(int) __asm__("ito_raise");
extern int sigpending(sigset_t*) __asm__("ito_sigpending");
extern int sigwait(const sigset_t*, int*) __asm__("ito_sigwait");
extern int sigwaitinfo(const sigset_t*, siginfo_t*) __asm__("ito_sigwaitinfo");
extern int sigtimedwait(const sigset_t*, siginfo_t*, const struct timespec*)
    __asm__("ito_sigtimedwait");
extern int sigsuspend(const sigset_t*) __asm__("ito_sigsuspend");
extern pid_t waitpid(pid_t, int*, int) __asm__("ito_waitpid");
extern pid_t wait(int*) __asm__("ito_wait");
extern int waitid(idtype_t, id_t, siginfo_t*, int) __asm__("ito_waitid");
extern int select(int, fd_set*, fd_set*, fd_set*, struct timeval*) __asm__("ito_select");
extern int pselect(int, fd_set*, fd_set*, fd_set*, const struct timespec*,
                   const sigset_t*) __asm__("ito_pselect");
extern int ppoll(struct pollfd*, nfds_t, const struct timespec*, const sigset_t*)
    __asm__("ito_ppoll");
extern int epoll_wait(int, struct epoll_event*, int, int) __asm__("ito_epoll_wait");
extern int epoll_pwait(int, struct epoll_event*, int, int, const sigset_t*)
    __asm__("ito_epoll_pwait");
#ifdef __cplusplus
}
#endif
#endif

#ifndef ITO_PTHREAD_NO_RENAME
/* Semaphores are renamed at the symbol level, as the system calls are. */
#ifdef __cplusplus
extern "C" {
#endif
extern int sem_init(sem_t*, int, unsigned) __asm__("ito_posix_sem_init");
extern int sem_destroy(sem_t*) __asm__("ito_posix_sem_destroy");
extern int sem_wait(sem_t*) __asm__("ito_posix_sem_wait");
extern int sem_trywait(sem_t*) __asm__("ito_posix_sem_trywait");
extern int sem_timedwait(sem_t*, const struct timespec*) __asm__("ito_posix_sem_timedwait");
extern int sem_clockwait(sem_t*, clockid_t, const struct timespec*) __asm__("ito_posix_sem_clockwait");
extern int sem_post(sem_t*) __asm__("ito_posix_sem_post");
extern int sem_getvalue(sem_t*, int*) __asm__("ito_posix_sem_getvalue");
#ifdef __cplusplus
}
#endif

/* After <pthread.h>: its declarations keep glibc's names, every call below
 * reaches ito. */
#define pthread_create ito_pthread_create
#define pthread_exit ito_pthread_exit
#define pthread_join ito_pthread_join
#define pthread_detach ito_pthread_detach
#define pthread_self ito_pthread_self
#define pthread_equal ito_pthread_equal
#define pthread_yield ito_pthread_yield
#define sched_yield ito_sched_yield
#define pthread_cancel ito_pthread_cancel
#define pthread_setcancelstate ito_pthread_setcancelstate
#define pthread_setcanceltype ito_pthread_setcanceltype
#define pthread_testcancel ito_pthread_testcancel
#define pthread_getattr_np ito_pthread_getattr_np
#define pthread_kill ito_pthread_kill
#define pthread_sigqueue ito_pthread_sigqueue
#define gettid ito_gettid
#define tgkill ito_tgkill
#define pthread_sigmask ito_pthread_sigmask
#define pthread_getschedparam ito_pthread_getschedparam
#define pthread_setschedparam ito_pthread_setschedparam
#define pthread_setschedprio ito_pthread_setschedprio
#define pthread_setname_np ito_pthread_setname_np
#define pthread_getname_np ito_pthread_getname_np
#define pthread_getcpuclockid ito_pthread_getcpuclockid
#define pthread_setaffinity_np ito_pthread_setaffinity_np
#define pthread_getaffinity_np ito_pthread_getaffinity_np
#define pthread_tryjoin_np ito_pthread_tryjoin_np
#define pthread_timedjoin_np ito_pthread_timedjoin_np
#define pthread_clockjoin_np ito_pthread_clockjoin_np
/* Used by glibc's plain-C pthread_cleanup_push/pop macros, expanded here. */
#define __pthread_register_cancel ito_pthread_register_cancel
#define __pthread_unregister_cancel ito_pthread_unregister_cancel
#define __pthread_register_cancel_defer ito_pthread_register_cancel_defer
#define __pthread_unregister_cancel_restore ito_pthread_unregister_cancel_restore
#define __pthread_unwind_next ito_pthread_unwind_next
#define pthread_attr_init ito_pthread_attr_init
#define pthread_attr_destroy ito_pthread_attr_destroy
#define pthread_attr_setdetachstate ito_pthread_attr_setdetachstate
#define pthread_attr_getdetachstate ito_pthread_attr_getdetachstate
#define pthread_attr_setstacksize ito_pthread_attr_setstacksize
#define pthread_attr_getstacksize ito_pthread_attr_getstacksize
#define pthread_once ito_pthread_once
#define pthread_mutexattr_init ito_pthread_mutexattr_init
#define pthread_mutexattr_destroy ito_pthread_mutexattr_destroy
#define pthread_mutexattr_settype ito_pthread_mutexattr_settype
#define pthread_mutexattr_gettype ito_pthread_mutexattr_gettype
#define pthread_mutex_init ito_pthread_mutex_init
#define pthread_mutex_destroy ito_pthread_mutex_destroy
#define pthread_mutex_lock ito_pthread_mutex_lock
#define pthread_mutex_trylock ito_pthread_mutex_trylock
#define pthread_mutex_timedlock ito_pthread_mutex_timedlock
#define pthread_mutex_unlock ito_pthread_mutex_unlock
#define pthread_mutex_clocklock ito_pthread_mutex_clocklock
#define pthread_mutex_consistent ito_pthread_mutex_consistent
#define pthread_mutex_consistent_np ito_pthread_mutex_consistent
#define pthread_mutex_getprioceiling ito_pthread_mutex_getprioceiling
#define pthread_mutex_setprioceiling ito_pthread_mutex_setprioceiling
#define pthread_condattr_init ito_pthread_condattr_init
#define pthread_condattr_destroy ito_pthread_condattr_destroy
#define pthread_condattr_setclock ito_pthread_condattr_setclock
#define pthread_condattr_getclock ito_pthread_condattr_getclock
#define pthread_cond_init ito_pthread_cond_init
#define pthread_cond_destroy ito_pthread_cond_destroy
#define pthread_cond_wait ito_pthread_cond_wait
#define pthread_cond_timedwait ito_pthread_cond_timedwait
#define pthread_cond_clockwait ito_pthread_cond_clockwait
#define pthread_cond_signal ito_pthread_cond_signal
#define pthread_cond_broadcast ito_pthread_cond_broadcast
#define pthread_key_create ito_pthread_key_create
#define pthread_key_delete ito_pthread_key_delete
#define pthread_getspecific ito_pthread_getspecific
#define pthread_setspecific ito_pthread_setspecific
#define pthread_barrier_init ito_pthread_barrier_init
#define pthread_barrier_destroy ito_pthread_barrier_destroy
#define pthread_barrier_wait ito_pthread_barrier_wait
#define pthread_rwlock_init ito_pthread_rwlock_init
#define pthread_rwlock_destroy ito_pthread_rwlock_destroy
#define pthread_rwlock_rdlock ito_pthread_rwlock_rdlock
#define pthread_rwlock_tryrdlock ito_pthread_rwlock_tryrdlock
#define pthread_rwlock_wrlock ito_pthread_rwlock_wrlock
#define pthread_rwlock_trywrlock ito_pthread_rwlock_trywrlock
#define pthread_rwlock_unlock ito_pthread_rwlock_unlock
#define pthread_rwlock_timedrdlock ito_pthread_rwlock_timedrdlock
#define pthread_rwlock_timedwrlock ito_pthread_rwlock_timedwrlock
#define pthread_rwlock_clockrdlock ito_pthread_rwlock_clockrdlock
#define pthread_rwlock_clockwrlock ito_pthread_rwlock_clockwrlock
#define pthread_spin_init ito_pthread_spin_init
#define pthread_spin_destroy ito_pthread_spin_destroy
#define pthread_spin_lock ito_pthread_spin_lock
#define pthread_spin_trylock ito_pthread_spin_trylock
#define pthread_spin_unlock ito_pthread_spin_unlock
#endif

#endif /* ITO_PTHREAD_H */
