/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE 1
/* Scheduling attributes, priority-protect mutexes and a normal mutex's
 * relock, as NPTL gives them (docs/POSIX.md, "Scheduling"):
 * - pthread_setschedparam/setschedprio/getschedparam of the caller: SCHED_FIFO
 *   and SCHED_RR kept and reported (or EPERM where the process may not take a
 *   real-time priority: both follow the kernel's rule), EINVAL for a priority
 *   out of the policy's range or an unknown policy;
 * - a thread created with an explicit policy has it, one created with the
 *   default (inherit) has its creator's, an out-of-range one is EINVAL;
 * - a PTHREAD_PRIO_PROTECT mutex reports its ceiling, setprioceiling gives
 *   the old one back, EINVAL out of range and for a mutex of another protocol;
 * - a normal (and default) mutex relocked by its holder waits: a timed relock
 *   ends with ETIMEDOUT (errorcheck: EDEADLK), and a thread that relocks with
 *   pthread_mutex_lock is still blocked when the process exits.
 * The priority-protect mutex is never locked: NPTL would raise the holder's
 * real priority, which ito does not. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char* code(int e) {
  switch (e) {
    case 0: return "0";
    case EINVAL: return "EINVAL";
    case EPERM: return "EPERM";
    case EDEADLK: return "EDEADLK";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EBUSY: return "EBUSY";
    case ENOTSUP: return "ENOTSUP";
    default: return "other";
  }
}

static void show_self(const char* who) {
  int policy = -1;
  struct sched_param p;
  memset(&p, 0, sizeof p);
  int e = pthread_getschedparam(pthread_self(), &policy, &p);
  printf("%s: %s policy %d priority %d\n", who, code(e), policy, p.sched_priority);
}

static void* report(void* arg) {
  show_self((const char*)arg);
  return NULL;
}

static void create_with(pthread_attr_t* a, const char* who) {
  pthread_t t;
  int e = pthread_create(&t, a, report, (void*)who);
  if (e == 0) pthread_join(t, NULL);
  else printf("%s: create %s\n", who, code(e));
}

static void scheduling(void) {
  struct sched_param p = {.sched_priority = 10};
  show_self("main");
  int e = pthread_setschedparam(pthread_self(), SCHED_FIFO, &p);
  printf("set FIFO 10: %s\n", code(e));
  const int realtime = e == 0;
  if (realtime) show_self("main");
  printf("setschedprio 200: %s\n", code(pthread_setschedprio(pthread_self(), 200)));
  if (realtime) {
    printf("setschedprio 20: %s\n", code(pthread_setschedprio(pthread_self(), 20)));
    show_self("main");
    create_with(NULL, "inheriting child");
  }
  p.sched_priority = sched_get_priority_max(SCHED_RR) + 1;
  printf("set RR max+1: %s\n", code(pthread_setschedparam(pthread_self(), SCHED_RR, &p)));
  p.sched_priority = 0;
  printf("set OTHER 0: %s\n", code(pthread_setschedparam(pthread_self(), SCHED_OTHER, &p)));
  p.sched_priority = 5;
  printf("set OTHER 5: %s\n", code(pthread_setschedparam(pthread_self(), SCHED_OTHER, &p)));
  printf("set policy 77: %s\n", code(pthread_setschedparam(pthread_self(), 77, &p)));
  printf("setschedprio 1 under OTHER: %s\n", code(pthread_setschedprio(pthread_self(), 1)));
  show_self("main");

  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
  pthread_attr_setschedpolicy(&a, SCHED_RR);
  p.sched_priority = 7;
  pthread_attr_setschedparam(&a, &p);
  create_with(&a, "explicit RR 7 child");
  pthread_attr_setschedpolicy(&a, SCHED_OTHER);  /* the attribute's priority 7 stays */
  create_with(&a, "explicit OTHER 7 child");
  pthread_attr_setinheritsched(&a, PTHREAD_INHERIT_SCHED);
  create_with(&a, "inheriting child");
  pthread_attr_destroy(&a);
}

static void ceilings(void) {
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_PROTECT);
  pthread_mutex_t m;
  pthread_mutex_init(&m, &ma);
  int c = -1, old = -1;
  int e = pthread_mutex_getprioceiling(&m, &c);
  printf("default ceiling: %s %d\n", code(e), c);
  pthread_mutex_destroy(&m);
  pthread_mutexattr_setprioceiling(&ma, 30);
  pthread_mutex_init(&m, &ma);
  e = pthread_mutex_getprioceiling(&m, &c);
  printf("ceiling: %s %d\n", code(e), c);
  e = pthread_mutex_setprioceiling(&m, 40, &old);
  printf("set 40: %s old %d\n", code(e), old);
  e = pthread_mutex_getprioceiling(&m, &c);
  printf("ceiling: %s %d\n", code(e), c);
  printf("set 400: %s\n", code(pthread_mutex_setprioceiling(&m, 400, &old)));
  printf("destroy: %s\n", code(pthread_mutex_destroy(&m)));
  pthread_mutexattr_destroy(&ma);
  pthread_mutex_t plain = PTHREAD_MUTEX_INITIALIZER;
  printf("plain get: %s\n", code(pthread_mutex_getprioceiling(&plain, &c)));
  printf("plain set: %s\n", code(pthread_mutex_setprioceiling(&plain, 3, &old)));
}

static struct timespec in_ms(int ms) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_nsec += ms * 1000000L;
  t.tv_sec += t.tv_nsec / 1000000000L;
  t.tv_nsec %= 1000000000L;
  return t;
}

static pthread_mutex_t stuck;
static sem_t about_to_relock;

static void* relock_forever(void* arg) {
  (void)arg;
  pthread_mutex_lock(&stuck);
  sem_post(&about_to_relock);
  int e = pthread_mutex_lock(&stuck); /* deadlocks */
  printf("relock returned %s\n", code(e));
  return NULL;
}

static void relocks(void) {
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  const int kinds[] = {PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_DEFAULT, PTHREAD_MUTEX_ERRORCHECK};
  const char* names[] = {"normal", "default", "errorcheck"};
  for (int pshared = 0; pshared < 2; ++pshared) {
    pthread_mutexattr_setpshared(&ma, pshared ? PTHREAD_PROCESS_SHARED : PTHREAD_PROCESS_PRIVATE);
    for (int k = 0; k < 3; ++k) {
      pthread_mutex_t m;
      pthread_mutexattr_settype(&ma, kinds[k]);
      pthread_mutex_init(&m, &ma);
      pthread_mutex_lock(&m);
      struct timespec soon = in_ms(20);
      printf("%s%s timed relock: %s, trylock %s\n", pshared ? "shared " : "", names[k],
             code(pthread_mutex_timedlock(&m, &soon)), code(pthread_mutex_trylock(&m)));
      pthread_mutex_unlock(&m);
      pthread_mutex_destroy(&m);
    }
  }
  pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_NORMAL);
  pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_PRIVATE);
  pthread_mutex_init(&stuck, &ma);
  pthread_mutexattr_destroy(&ma);
  sem_init(&about_to_relock, 0, 0);
  pthread_t t;
  pthread_create(&t, NULL, relock_forever, NULL);
  sem_wait(&about_to_relock);
  /* Blocked for good: it has not ended after any number of looks. */
  for (int i = 0; i < 5; ++i) {
    usleep(10000);
    if (pthread_tryjoin_np(t, NULL) != EBUSY) {
      printf("the relocking thread ended\n");
      return;
    }
  }
  printf("the relocking thread is still blocked\n");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  scheduling();
  ceilings();
  relocks();
  fflush(stdout);
  _exit(0); /* the relocking thread is still blocked */
}
