/* SPDX-License-Identifier: Apache-2.0 */
/* PTHREAD_PROCESS_SHARED mutexes and condition variables in MAP_SHARED
 * memory, used by threads of a parent and of its forked child, as a
 * pre-fork server or a database keeps them:
 * - lock contention: two parent threads and two child threads add to one
 *   counter under one mutex, each yielding while it holds it (at one worker
 *   a waiter that blocked its worker in the kernel would never let the
 *   holder run again);
 * - condition waits signalled from the other process, both ways;
 * - a timed wait that times out, holding the mutex again afterwards;
 * - trylock against the other process's hold (EBUSY), an errorcheck mutex
 *   relocked by its holder (EDEADLK) and unlocked by the other process
 *   (EPERM), destroy of a held mutex (EBUSY).
 * An alarm ends a run that hangs. Exits 0 with the same output as NPTL. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 2000

struct shared {
  pthread_mutex_t m;
  pthread_mutex_t check; /* errorcheck */
  pthread_cond_t c;
  pthread_cond_t never; /* nobody signals it */
  long counter;
  int inside; /* threads in the critical section: must stay 0 or 1 */
  int overlap;
  int phase;
};
static struct shared* s;

static const char* name(int rc) {
  switch (rc) {
    case 0: return "0";
    case EBUSY: return "EBUSY";
    case EDEADLK: return "EDEADLK";
    case EPERM: return "EPERM";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EINVAL: return "EINVAL";
    default: return "other";
  }
}

static void* add(void* arg) {
  (void)arg;
  for (int i = 0; i < ROUNDS; ++i) {
    if (pthread_mutex_lock(&s->m) != 0) abort();
    if (s->inside++ != 0) s->overlap = 1;
    long v = s->counter;
    if (i % 8 == 0) sched_yield(); /* hold it across a switch */
    s->counter = v + 1;
    s->inside--;
    if (pthread_mutex_unlock(&s->m) != 0) abort();
  }
  return NULL;
}

/* Waits until phase reaches `want`, on the shared condition. */
static void wait_phase(int want) {
  pthread_mutex_lock(&s->m);
  while (s->phase < want) pthread_cond_wait(&s->c, &s->m);
  pthread_mutex_unlock(&s->m);
}

static void set_phase(int p) {
  pthread_mutex_lock(&s->m);
  s->phase = p;
  pthread_cond_broadcast(&s->c);
  pthread_mutex_unlock(&s->m);
}

static int child(void) {
  alarm(60);
  pthread_t t;
  if (pthread_create(&t, NULL, add, NULL) != 0) return 10;
  add(NULL);
  if (pthread_join(t, NULL) != 0) return 11;
  wait_phase(1); /* signalled by the parent */
  /* The parent holds `check` now (phase 1 says so). */
  if (pthread_mutex_trylock(&s->check) != EBUSY) return 12;
  if (pthread_mutex_unlock(&s->check) != EPERM) return 13;
  set_phase(2); /* the parent waits for it */
  wait_phase(3);
  /* A timed wait that times out, on the condition nobody signals. */
  struct timespec at; /* `never` waits on CLOCK_MONOTONIC */
  clock_gettime(CLOCK_MONOTONIC, &at);
  at.tv_nsec += 30 * 1000000L;
  if (at.tv_nsec >= 1000000000L) at.tv_sec++, at.tv_nsec -= 1000000000L;
  pthread_mutex_lock(&s->m);
  int rc = pthread_cond_timedwait(&s->never, &s->m, &at);
  int rc2 = pthread_mutex_unlock(&s->m); /* held again after the time-out */
  if (rc != ETIMEDOUT || rc2 != 0) return 14;
  return 0;
}

int main(void) {
  alarm(60);
  s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (s == MAP_FAILED) return 2;
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
  int shared = 0;
  pthread_mutexattr_getpshared(&ma, &shared);
  printf("mutexattr pshared: %d\n", shared == PTHREAD_PROCESS_SHARED);
  if (pthread_mutex_init(&s->m, &ma) != 0) return 3;
  pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK);
  if (pthread_mutex_init(&s->check, &ma) != 0) return 3;
  pthread_mutexattr_destroy(&ma);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
  if (pthread_cond_init(&s->c, &ca) != 0) return 4;
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  if (pthread_cond_init(&s->never, &ca) != 0) return 4;
  pthread_condattr_destroy(&ca);

  /* Both processes add at once. */
  pid_t pid = fork();
  if (pid < 0) return 5;
  if (pid == 0) _exit(child());
  pthread_t t[2];
  for (int i = 0; i < 2; ++i)
    if (pthread_create(&t[i], NULL, add, NULL) != 0) return 6;
  for (int i = 0; i < 2; ++i) pthread_join(t[i], NULL);

  /* Conditions both ways, with the errorcheck mutex held meanwhile. */
  printf("lock check: %s\n", name(pthread_mutex_lock(&s->check)));
  printf("relock by its holder: %s\n", name(pthread_mutex_lock(&s->check)));
  printf("destroy while held: %s\n", name(pthread_mutex_destroy(&s->check)));
  set_phase(1);
  wait_phase(2); /* set by the child, after its checks of `check` */
  printf("unlock check: %s\n", name(pthread_mutex_unlock(&s->check)));
  set_phase(3);

  /* A timed wait that times out here too. */
  struct timespec at;
  clock_gettime(CLOCK_MONOTONIC, &at);
  at.tv_nsec += 20 * 1000000L;
  if (at.tv_nsec >= 1000000000L) at.tv_sec++, at.tv_nsec -= 1000000000L;
  pthread_mutex_lock(&s->m);
  printf("timed wait: %s\n", name(pthread_cond_timedwait(&s->never, &s->m, &at)));
  printf("unlock after it: %s\n", name(pthread_mutex_unlock(&s->m)));

  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return 7;
  printf("child: %s %d\n", WIFEXITED(status) ? "exit" : "signal",
         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  pthread_mutex_lock(&s->m);
  printf("counter: %ld (expected %d), overlapping holders: %d\n", s->counter, 4 * ROUNDS,
         s->overlap);
  pthread_mutex_unlock(&s->m);
  printf("destroy: %s %s %s %s\n", name(pthread_mutex_destroy(&s->m)),
         name(pthread_mutex_destroy(&s->check)), name(pthread_cond_destroy(&s->c)),
         name(pthread_cond_destroy(&s->never)));
  return s->counter == 4 * ROUNDS && !s->overlap && WIFEXITED(status) && WEXITSTATUS(status) == 0
             ? 0
             : 1;
}
