/* SPDX-License-Identifier: Apache-2.0 */
/* fork() while threads wait on a mutex, a semaphore, a condition variable and
 * a reader-writer lock: the child has copies of those objects but not of the
 * waiting threads. Nothing there may be handed to, or count on, a waiter the
 * child does not have: an atfork child handler's unlock, then the child's
 * lock (and a thread of its own that waits for it); a sem_post then a
 * sem_wait; a signal to a thread of the child's own; a write unlock. A
 * parent's waiter woken in the child would run there as a ghost (_exit(42)).
 * Each child bounds itself with alarm(): a hang shows as a signal. Prints the
 * same lines under NPTL and ito. */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static sem_t sem;
static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready, go;  /* under cm */
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static volatile int unlock_m_in_child;

static void check(int ok, const char* what) {
  if (!ok) {
    perror(what);
    exit(1);
  }
}

/* Threads get their creator's pid: one of the parent's threads that runs in
 * the child (woken there) ends it. */
#define CREATOR ((void*)(intptr_t)getpid())
static void not_a_ghost(void* creator) {
  if ((pid_t)(intptr_t)creator != getpid()) _exit(42);
}

static void settle(void) { usleep(50 * 1000); }  /* lets a thread block (not required) */

static void child_unlocks_m(void) {
  if (unlock_m_in_child && pthread_mutex_unlock(&m) != 0) _exit(4);
}

static void wait_child(const char* what, pid_t pid) {
  int status = 0;
  check(waitpid(pid, &status, 0) == pid, "waitpid");
  if (WIFEXITED(status)) printf("%s: child exited with %d\n", what, WEXITSTATUS(status));
  else printf("%s: child killed by signal %d\n", what, WTERMSIG(status));
}

static pid_t fork_checked(void) {
  fflush(stdout);
  pid_t pid = fork();
  check(pid >= 0, "fork");
  if (pid == 0) alarm(5);
  return pid;
}

/* --- mutex --- */

static void* lock_m(void* arg) {
  check(pthread_mutex_lock(&m) == 0, "lock");
  check(pthread_mutex_unlock(&m) == 0, "unlock");
  not_a_ghost(arg);
  return NULL;
}

static void mutex_case(void) {
  pthread_t w, c;
  check(pthread_mutex_lock(&m) == 0, "lock");
  check(pthread_create(&w, NULL, lock_m, CREATOR) == 0, "create");
  settle();
  /* Woken, the waiter finds m taken again after a long wait: ito hands m to
   * it at the next unlock (its starvation mode). */
  check(pthread_mutex_unlock(&m) == 0 && pthread_mutex_lock(&m) == 0, "relock");
  settle();
  unlock_m_in_child = 1;
  pid_t pid = fork_checked();
  if (pid == 0) {  /* the atfork handler has unlocked m */
    check(pthread_mutex_lock(&m) == 0, "lock in child");
    check(pthread_create(&c, NULL, lock_m, CREATOR) == 0, "create in child");
    settle();
    check(pthread_mutex_unlock(&m) == 0, "unlock in child");
    check(pthread_join(c, NULL) == 0, "join in child");
    _exit(0);
  }
  unlock_m_in_child = 0;
  check(pthread_mutex_unlock(&m) == 0, "unlock");
  check(pthread_join(w, NULL) == 0, "join");
  wait_child("mutex", pid);
}

/* --- semaphore --- */

static void* wait_sem(void* arg) {
  while (sem_wait(&sem) != 0) {}
  not_a_ghost(arg);
  return NULL;
}

static void semaphore_case(void) {
  pthread_t w;
  check(sem_init(&sem, 0, 0) == 0, "sem_init");
  check(pthread_create(&w, NULL, wait_sem, CREATOR) == 0, "create");
  settle();
  pid_t pid = fork_checked();
  if (pid == 0) {
    int value = -1;
    check(sem_post(&sem) == 0, "sem_post in child");
    while (sem_wait(&sem) != 0) {}
    check(sem_getvalue(&sem, &value) == 0, "sem_getvalue in child");
    _exit(value == 0 ? 0 : 3);
  }
  check(sem_post(&sem) == 0, "sem_post");
  check(pthread_join(w, NULL) == 0, "join");
  wait_child("semaphore", pid);
}

/* --- condition variable --- */

/* Waits for `go` after saying it is ready: once the caller holds cm and sees
 * `ready`, the thread is in pthread_cond_wait. */
static void* wait_cv(void* arg) {
  check(pthread_mutex_lock(&cm) == 0, "lock");
  ready = 1;
  while (!go) check(pthread_cond_wait(&cv, &cm) == 0, "cond_wait");
  check(pthread_mutex_unlock(&cm) == 0, "unlock");
  not_a_ghost(arg);
  return NULL;
}

/* Starts wait_cv and returns holding cm with the thread waiting. */
static pthread_t start_cv_waiter(void) {
  pthread_t w;
  ready = go = 0;
  check(pthread_create(&w, NULL, wait_cv, CREATOR) == 0, "create");
  for (;;) {
    check(pthread_mutex_lock(&cm) == 0, "lock");
    if (ready) return w;
    check(pthread_mutex_unlock(&cm) == 0, "unlock");
    usleep(1000);
  }
}

static void signal_cv_waiter(pthread_t w) {  /* cm held */
  go = 1;
  check(pthread_cond_signal(&cv) == 0, "cond_signal");
  check(pthread_mutex_unlock(&cm) == 0, "unlock");
  check(pthread_join(w, NULL) == 0, "join");
}

static void cond_case(void) {
  pthread_t w = start_cv_waiter();
  pid_t pid = fork_checked();
  if (pid == 0) {
    check(pthread_mutex_unlock(&cm) == 0, "unlock in child");
    signal_cv_waiter(start_cv_waiter());  /* one signal, for the child's waiter */
    _exit(0);
  }
  signal_cv_waiter(w);
  wait_child("condition variable", pid);
}

/* --- reader-writer lock --- */

static void* write_rw(void* arg) {
  check(pthread_rwlock_wrlock(&rw) == 0, "wrlock");
  check(pthread_rwlock_unlock(&rw) == 0, "unlock");
  not_a_ghost(arg);
  return NULL;
}

static void rwlock_case(void) {
  pthread_t w;
  check(pthread_rwlock_wrlock(&rw) == 0, "wrlock");
  check(pthread_create(&w, NULL, write_rw, CREATOR) == 0, "create");
  settle();
  pid_t pid = fork_checked();
  if (pid == 0) {
    /* The unlock alone: glibc hands the lock to the waiting writer, which its
     * child does not have, so the child's next lock would hang there; ito's
     * child may lock again, but the outputs must match. */
    check(pthread_rwlock_unlock(&rw) == 0, "unlock in child");
    _exit(0);
  }
  check(pthread_rwlock_unlock(&rw) == 0, "unlock");
  check(pthread_join(w, NULL) == 0, "join");
  wait_child("rwlock", pid);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  alarm(30);
  check(pthread_atfork(NULL, NULL, child_unlocks_m) == 0, "pthread_atfork");
  mutex_case();
  semaphore_case();
  cond_case();
  rwlock_case();
  return 0;
}
