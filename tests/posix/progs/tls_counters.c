/* SPDX-License-Identifier: Apache-2.0 */
/* Thread-local variables per thread (issue 42, ITO_ULT_TLS=1): each thread
 * keeps __thread counters (one zero-initialised, one with an initial value,
 * a name buffer) and its errno across sched_yield, usleep and mutex waits,
 * which on ULTs switch and, at two workers, may resume it on the other
 * worker's OS thread. On NPTL every thread has its own variables and its own
 * errno at one address for its whole life; ULTs sharing their worker's TLS
 * would count into each other's variables and see errno move. Each thread's
 * return value must come back through pthread_join. Run from
 * source and under the preload, at 1 and 2 workers (tests/posix/CMakeLists.txt). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define THREADS 8
#define ROUNDS 300

static __thread long counter;        /* .tbss: starts at 0 in every thread */
static __thread long seeded = 1000;  /* .tdata: starts at 1000 in every thread */
static __thread char name[16];

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t all_alive;
static long shared;

struct result {
  long counter, seeded;
  int name_kept, errno_kept, errno_stayed;
  const void* counter_at;
  const void* errno_at;
};
static struct result results[THREADS];

static void* run(void* arg) {
  const int id = (int)(long)arg;
  struct result* r = &results[id];
  snprintf(name, sizeof name, "thread-%d", id);
  int* const my_errno = &errno;
  r->errno_kept = r->errno_stayed = r->name_kept = 1;
  errno = 100 + id;
  /* Every thread is alive here: their addresses must all differ. */
  pthread_barrier_wait(&all_alive);
  r->counter_at = &counter;
  r->errno_at = &errno;
  for (int i = 0; i < ROUNDS; ++i) {
    ++counter;
    seeded += id;
    switch (i % 3) {
      case 0: sched_yield(); break;
      case 1: usleep(20); break;
      default:
        pthread_mutex_lock(&lock);
        ++shared;
        sched_yield(); /* hold it across a switch: others wait */
        pthread_mutex_unlock(&lock);
    }
    if (errno != 100 + id) r->errno_kept = 0;
    if (&errno != my_errno) r->errno_stayed = 0;
    char want[16];
    snprintf(want, sizeof want, "thread-%d", id);
    if (strcmp(name, want) != 0) r->name_kept = 0;
    errno = 100 + id;
  }
  r->counter = counter;
  r->seeded = seeded;
  return r; /* joined back: pthread_join must give it */
}

static int distinct(const void* const* p, int n) {
  int count = 0;
  for (int i = 0; i < n; ++i) {
    int seen = 0;
    for (int j = 0; j < i; ++j) seen |= p[j] == p[i];
    count += !seen;
  }
  return count;
}

int main(void) {
  pthread_t t[THREADS];
  errno = 7;
  counter = -1;
  pthread_barrier_init(&all_alive, NULL, THREADS);
  for (long i = 0; i < THREADS; ++i) pthread_create(&t[i], NULL, run, (void*)i);
  int returned = 0;
  for (int i = 0; i < THREADS; ++i) {
    void* value = NULL;
    pthread_join(t[i], &value);
    returned += value == &results[i];
  }
  const int main_errno = errno; /* before stdio, which may set it */
  const void* counters[THREADS];
  const void* errnos[THREADS];
  for (int i = 0; i < THREADS; ++i) {
    const struct result* r = &results[i];
    printf("thread %d: counter %ld, seeded %ld, name %s, errno %s, errno's address %s\n", i,
           r->counter, r->seeded, r->name_kept ? "kept" : "LOST", r->errno_kept ? "kept" : "LOST",
           r->errno_stayed ? "stayed" : "MOVED");
    counters[i] = r->counter_at;
    errnos[i] = r->errno_at;
  }
  printf("distinct counter addresses: %d of %d\n", distinct(counters, THREADS), THREADS);
  printf("distinct errno addresses: %d of %d\n", distinct(errnos, THREADS), THREADS);
  printf("shared %ld\n", shared);
  printf("threads whose join gave their return value: %d of %d\n", returned, THREADS);
  printf("main: counter %ld, seeded %ld, errno %d\n", counter, seeded, main_errno);
  return 0;
}
