/* SPDX-License-Identifier: Apache-2.0 */
/* Unnamed semaphores: four threads pass a token around a ring of
 * semaphores (with one worker, a semaphore that blocks the worker in the
 * kernel never lets the others run), plus the error cases. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <time.h>

#define THREADS 4
#define ROUNDS 2000

static sem_t ring[THREADS];
static sem_t done;
static long passes;

static void* pass_on(void* arg) {
  long i = (long)arg;
  for (int r = 0; r < ROUNDS; ++r) {
    while (sem_wait(&ring[i]) != 0) {
    }
    ++passes; /* the token serialises this */
    sem_post(&ring[(i + 1) % THREADS]);
  }
  sem_post(&done);
  return NULL;
}

static struct timespec in_ms(clockid_t clock, long ms) {
  struct timespec t;
  clock_gettime(clock, &t);
  t.tv_nsec += ms * 1000000L;
  while (t.tv_nsec >= 1000000000L) t.tv_sec++, t.tv_nsec -= 1000000000L;
  return t;
}

static const char* err(int rc) {
  if (rc == 0) return "0";
  switch (errno) {
    case EAGAIN: return "EAGAIN";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EINVAL: return "EINVAL";
    case EOVERFLOW: return "EOVERFLOW";
    default: return "?";
  }
}

static sem_t handoff;
static void* post_later(void* arg) {
  (void)arg;
  struct timespec d = {0, 20000000L};
  nanosleep(&d, NULL);
  sem_post(&handoff);
  return NULL;
}

int main(void) {
  for (int i = 0; i < THREADS; ++i) sem_init(&ring[i], 0, 0);
  sem_init(&done, 0, 0);
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; ++i) pthread_create(&t[i], NULL, pass_on, (void*)i);
  sem_post(&ring[0]);
  for (int i = 0; i < THREADS; ++i) sem_wait(&done);
  for (int i = 0; i < THREADS; ++i) pthread_join(t[i], NULL);
  printf("passes %ld\n", passes);

  sem_t s;
  int v = -1;
  printf("init %s\n", err(sem_init(&s, 0, 1)));
  printf("trywait %s\n", err(sem_trywait(&s)));
  printf("trywait again %s\n", err(sem_trywait(&s)));
  struct timespec soon = in_ms(CLOCK_REALTIME, 30);
  printf("timedwait %s\n", err(sem_timedwait(&s, &soon)));
  soon = in_ms(CLOCK_MONOTONIC, 30);
  printf("clockwait %s\n", err(sem_clockwait(&s, CLOCK_MONOTONIC, &soon)));
  struct timespec bad = {0, 2000000000L};
  printf("timedwait bad tv_nsec %s\n", err(sem_timedwait(&s, &bad)));
  sem_post(&s);
  sem_post(&s);
  sem_getvalue(&s, &v);
  printf("value %d\n", v);
  printf("destroy %s\n", err(sem_destroy(&s)));

  printf("init too large %s\n", err(sem_init(&s, 0, (unsigned)SEM_VALUE_MAX + 1u)));
  printf("init max %s\n", err(sem_init(&s, 0, SEM_VALUE_MAX)));
  printf("post past max %s\n", err(sem_post(&s)));
  sem_getvalue(&s, &v);
  printf("value %s\n", v == SEM_VALUE_MAX ? "SEM_VALUE_MAX" : "?");

  /* A waiter woken by a post from another thread, before its deadline. */
  sem_init(&handoff, 0, 0);
  pthread_t poster;
  pthread_create(&poster, NULL, post_later, NULL);
  struct timespec later = in_ms(CLOCK_REALTIME, 5000);
  printf("timedwait woken %s\n", err(sem_timedwait(&handoff, &later)));
  pthread_join(poster, NULL);

  /* Process-shared: glibc's own semantics (see docs/POSIX.md). */
  sem_t shared;
  printf("pshared init %s\n", err(sem_init(&shared, 1, 1)));
  printf("pshared wait %s\n", err(sem_wait(&shared)));
  printf("pshared trywait %s\n", err(sem_trywait(&shared)));
  printf("pshared post %s\n", err(sem_post(&shared)));
  sem_getvalue(&shared, &v);
  printf("pshared value %d\n", v);
  sem_destroy(&shared);
  return 0;
}
