/* SPDX-License-Identifier: Apache-2.0 */
/* The clock-taking and timed lock calls glibc added beside the classic ones
 * (what libstdc++'s timed waits call): pthread_cond_clockwait,
 * pthread_mutex_clocklock, pthread_rwlock_{timed,clock}{rd,wr}lock. Each
 * times out while another thread holds the object, and succeeds when it is
 * released before the deadline. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static int flag;

static struct timespec in_ms(clockid_t clock, long ms) {
  struct timespec t;
  clock_gettime(clock, &t);
  t.tv_sec += ms / 1000;
  t.tv_nsec += (ms % 1000) * 1000000L;
  if (t.tv_nsec >= 1000000000L) t.tv_sec++, t.tv_nsec -= 1000000000L;
  return t;
}
static const char* name(int e) {
  return e == 0 ? "0" : e == ETIMEDOUT ? "ETIMEDOUT" : e == EINVAL ? "EINVAL" :
         e == EBUSY ? "EBUSY" : e == EDEADLK ? "EDEADLK" : "?";
}
static void pause_ms(long ms) {
  struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&d, NULL);
}

/* Tries every timed form against the lock as the main thread holds it. */
static void* try_rw_held_for_writing(void* arg) {
  (void)arg;
  struct timespec t = in_ms(CLOCK_REALTIME, 30);
  printf("timedrdlock vs writer: %s\n", name(pthread_rwlock_timedrdlock(&rw, &t)));
  t = in_ms(CLOCK_REALTIME, 30);
  printf("timedwrlock vs writer: %s\n", name(pthread_rwlock_timedwrlock(&rw, &t)));
  t = in_ms(CLOCK_MONOTONIC, 30);
  printf("clockrdlock vs writer: %s\n", name(pthread_rwlock_clockrdlock(&rw, CLOCK_MONOTONIC, &t)));
  t = in_ms(CLOCK_MONOTONIC, 30);
  printf("clockwrlock vs writer: %s\n", name(pthread_rwlock_clockwrlock(&rw, CLOCK_MONOTONIC, &t)));
  /* The writer lets go within 50 ms: this one gets it. */
  t = in_ms(CLOCK_MONOTONIC, 5000);
  printf("clockrdlock, writer leaves: %s\n",
         name(pthread_rwlock_clockrdlock(&rw, CLOCK_MONOTONIC, &t)));
  pthread_rwlock_unlock(&rw);
  return NULL;
}

static void* try_mutex_held(void* arg) {
  (void)arg;
  struct timespec t = in_ms(CLOCK_MONOTONIC, 30);
  printf("clocklock vs holder: %s\n", name(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &t)));
  t = in_ms(CLOCK_REALTIME, 5000);
  printf("clocklock, holder leaves: %s\n", name(pthread_mutex_clocklock(&m, CLOCK_REALTIME, &t)));
  pthread_mutex_unlock(&m);
  return NULL;
}

static void* set_flag_later(void* arg) {
  (void)arg;
  pause_ms(20);
  pthread_mutex_lock(&m);
  flag = 1;
  pthread_cond_signal(&c);
  pthread_mutex_unlock(&m);
  return NULL;
}

int main(void) {
  pthread_t t;

  pthread_rwlock_wrlock(&rw);
  pthread_create(&t, NULL, try_rw_held_for_writing, NULL);
  pause_ms(200);
  pthread_rwlock_unlock(&rw);
  pthread_join(t, NULL);

  struct timespec bad = {0, -1};
  printf("timedwrlock bad tv_nsec: %s\n", name(pthread_rwlock_timedwrlock(&rw, &bad)));
  struct timespec now = in_ms(CLOCK_REALTIME, 0);
  printf("timedwrlock free: %s\n", name(pthread_rwlock_timedwrlock(&rw, &now)));
  printf("timedwrlock again: %s\n", name(pthread_rwlock_timedwrlock(&rw, &now)));
  pthread_rwlock_unlock(&rw);

  pthread_mutex_lock(&m);
  pthread_create(&t, NULL, try_mutex_held, NULL);
  pause_ms(100);
  pthread_mutex_unlock(&m);
  pthread_join(t, NULL);
  now = in_ms(CLOCK_MONOTONIC, 0);
  printf("clocklock bad clock: %s\n", name(pthread_mutex_clocklock(&m, 12345, &now)));

  pthread_mutex_lock(&m);
  struct timespec soon = in_ms(CLOCK_MONOTONIC, 30);
  printf("cond_clockwait mono: %s\n", name(pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &soon)));
  soon = in_ms(CLOCK_REALTIME, 30);
  printf("cond_clockwait real: %s\n", name(pthread_cond_clockwait(&c, &m, CLOCK_REALTIME, &soon)));
  printf("cond_clockwait bad clock: %s\n",
         name(pthread_cond_clockwait(&c, &m, CLOCK_PROCESS_CPUTIME_ID, &soon)));
  pthread_create(&t, NULL, set_flag_later, NULL);
  struct timespec later = in_ms(CLOCK_MONOTONIC, 5000);
  int rc = 0;
  while (!flag && rc == 0) rc = pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &later);
  printf("cond_clockwait signalled: %s flag %d\n", name(rc), flag);
  pthread_mutex_unlock(&m);
  pthread_join(t, NULL);
  return 0;
}
