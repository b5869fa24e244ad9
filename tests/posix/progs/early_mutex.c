/* SPDX-License-Identifier: Apache-2.0 */
/* Mutexes of each kind, pthread_once and pthread_self used before the first
 * pthread_create, which under ito need no runtime yet: the main thread must
 * hold the same locks, with the same recursion counts, and have the same
 * pthread_t once threads exist; another thread must see them held by main. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t normal = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t errorcheck = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_mutex_t recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t initialised; /* errorcheck, by pthread_mutex_init */
static pthread_t main_self;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int once_runs;
static sem_t waiting;

static const char* name(int e) {
  switch (e) {
    case 0: return "0";
    case EPERM: return "EPERM";
    case EBUSY: return "EBUSY";
    case EDEADLK: return "EDEADLK";
    case ETIMEDOUT: return "ETIMEDOUT";
    default: return "other";
  }
}

static void count_once(void) { ++once_runs; }

static void* other(void* arg) {
  (void)arg;
  printf("other: is main %d\n", pthread_equal(pthread_self(), main_self) != 0);
  printf("other: unlock errorcheck %s\n", name(pthread_mutex_unlock(&errorcheck)));
  printf("other: unlock initialised %s\n", name(pthread_mutex_unlock(&initialised)));
  printf("other: unlock recursive %s\n", name(pthread_mutex_unlock(&recursive)));
  printf("other: trylock normal %s\n", name(pthread_mutex_trylock(&normal)));
  printf("other: trylock errorcheck %s\n", name(pthread_mutex_trylock(&errorcheck)));
  printf("other: trylock recursive %s\n", name(pthread_mutex_trylock(&recursive)));
  struct timespec past = {0, 0};
  printf("other: timedlock errorcheck %s\n", name(pthread_mutex_timedlock(&errorcheck, &past)));
  return NULL;
}

/* Waits on main's pre-start lock until main lets it go. */
static void* waiter(void* arg) {
  (void)arg;
  sem_post(&waiting);
  int e = pthread_mutex_lock(&normal);
  printf("waiter: lock normal %s\n", name(e));
  printf("waiter: unlock normal %s\n", name(pthread_mutex_unlock(&normal)));
  return NULL;
}

int main(void) {
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
  pthread_mutex_init(&initialised, &attr);
  pthread_mutexattr_destroy(&attr);

  main_self = pthread_self();
  printf("lock normal %s\n", name(pthread_mutex_lock(&normal)));
  printf("lock errorcheck %s\n", name(pthread_mutex_lock(&errorcheck)));
  printf("trylock errorcheck %s\n", name(pthread_mutex_trylock(&errorcheck)));
  printf("lock initialised %s\n", name(pthread_mutex_lock(&initialised)));
  printf("lock recursive %s\n", name(pthread_mutex_lock(&recursive)));
  printf("lock recursive %s\n", name(pthread_mutex_lock(&recursive)));
  printf("trylock recursive %s\n", name(pthread_mutex_trylock(&recursive)));
  pthread_once(&once, count_once);
  printf("self is self %d\n", pthread_equal(pthread_self(), main_self) != 0);
  /* Names main's thread as such (under ito: the main ULT, started for it). */
  printf("kill self 0 %d\n", pthread_kill(main_self, 0));

  pthread_t t;
  int created = pthread_create(&t, NULL, other, NULL);
  int joined = pthread_join(t, NULL); /* after the other's lines, as in NPTL */
  printf("create %d\n", created);
  printf("join %d\n", joined);

  printf("self is still self %d\n", pthread_equal(pthread_self(), main_self) != 0);
  printf("relock errorcheck %s\n", name(pthread_mutex_lock(&errorcheck)));
  printf("unlock errorcheck %s\n", name(pthread_mutex_unlock(&errorcheck)));
  printf("unlock errorcheck again %s\n", name(pthread_mutex_unlock(&errorcheck)));
  printf("unlock initialised %s\n", name(pthread_mutex_unlock(&initialised)));
  for (int i = 0; i < 4; ++i)
    printf("unlock recursive %s\n", name(pthread_mutex_unlock(&recursive)));
  pthread_once(&once, count_once);
  printf("once ran %d\n", once_runs);

  /* A thread waits on the lock main took before any thread existed. */
  sem_init(&waiting, 0, 0);
  created = pthread_create(&t, NULL, waiter, NULL);
  sem_wait(&waiting);
  int unlocked = pthread_mutex_unlock(&normal);
  joined = pthread_join(t, NULL);
  printf("create waiter %d\n", created);
  printf("unlock normal %s\n", name(unlocked));
  printf("join waiter %d\n", joined);
  printf("relock normal %s\n", name(pthread_mutex_lock(&normal)));
  printf("unlock normal %s\n", name(pthread_mutex_unlock(&normal)));
  return 0;
}
