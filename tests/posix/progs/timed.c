/* SPDX-License-Identifier: Apache-2.0 */
/* Timed waits: cond_timedwait on CLOCK_REALTIME and CLOCK_MONOTONIC, a
 * timedlock that times out and one that succeeds, and a timed wait that a
 * signal ends before its deadline. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c_real = PTHREAD_COND_INITIALIZER;
static pthread_cond_t c_mono;
static int ready;

static struct timespec in_ms(clockid_t clock, long ms) {
  struct timespec t;
  clock_gettime(clock, &t);
  t.tv_sec += ms / 1000;
  t.tv_nsec += (ms % 1000) * 1000000L;
  if (t.tv_nsec >= 1000000000L) t.tv_sec++, t.tv_nsec -= 1000000000L;
  return t;
}
static long elapsed_ms(struct timespec a) {
  struct timespec b;
  clock_gettime(CLOCK_MONOTONIC, &b);
  return (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
}
static const char* name(int e) {
  return e == 0 ? "0" : e == ETIMEDOUT ? "ETIMEDOUT" : e == EINVAL ? "EINVAL" : "?";
}

static void* hold_then_release(void* arg) {
  (void)arg;
  pthread_mutex_lock(&m);
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (elapsed_ms(start) < 100) sched_yield();
  pthread_mutex_unlock(&m);
  return NULL;
}

static void* signaller(void* arg) {
  (void)arg;
  pthread_mutex_lock(&m);
  ready = 1;
  pthread_cond_signal(&c_mono);
  pthread_mutex_unlock(&m);
  return NULL;
}

int main(void) {
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  clockid_t got;
  pthread_condattr_getclock(&ca, &got);
  printf("condattr clock monotonic: %d\n", got == CLOCK_MONOTONIC);
  pthread_cond_init(&c_mono, &ca);
  pthread_condattr_destroy(&ca);

  struct timespec start, t;
  pthread_mutex_lock(&m);
  clock_gettime(CLOCK_MONOTONIC, &start);
  t = in_ms(CLOCK_REALTIME, 50);
  int e = pthread_cond_timedwait(&c_real, &m, &t);
  printf("realtime wait: %s, waited >= 45 ms: %d\n", name(e), elapsed_ms(start) >= 45);
  clock_gettime(CLOCK_MONOTONIC, &start);
  t = in_ms(CLOCK_MONOTONIC, 50);
  e = pthread_cond_timedwait(&c_mono, &m, &t);
  printf("monotonic wait: %s, waited >= 45 ms: %d\n", name(e), elapsed_ms(start) >= 45);
  t.tv_nsec = 1000000000L;
  printf("bad tv_nsec: %s\n", name(pthread_cond_timedwait(&c_mono, &m, &t)));
  t = in_ms(CLOCK_REALTIME, -1000);
  printf("past deadline: %s\n", name(pthread_cond_timedwait(&c_real, &m, &t)));

  pthread_t th;
  pthread_create(&th, NULL, signaller, NULL);
  t = in_ms(CLOCK_MONOTONIC, 10000);
  e = 0;
  while (!ready && e != ETIMEDOUT) e = pthread_cond_timedwait(&c_mono, &m, &t);
  printf("signalled before deadline: %s\n", name(ready ? 0 : e));
  pthread_mutex_unlock(&m);
  pthread_join(th, NULL);

  pthread_create(&th, NULL, hold_then_release, NULL);
  while (pthread_mutex_trylock(&m) == 0) { /* until the other thread holds it */
    pthread_mutex_unlock(&m);
    sched_yield();
  }
  t = in_ms(CLOCK_REALTIME, 20);
  printf("timedlock while held: %s\n", name(pthread_mutex_timedlock(&m, &t)));
  t = in_ms(CLOCK_REALTIME, 10000);
  printf("timedlock after release: %s\n", name(pthread_mutex_timedlock(&m, &t)));
  pthread_mutex_unlock(&m);
  pthread_join(th, NULL);
  return 0;
}
