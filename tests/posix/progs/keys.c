/* SPDX-License-Identifier: Apache-2.0 */
/* Thread-specific data: per-thread values, destructors run at thread exit
 * (pthread_exit included), a destructor that sets a new value is called
 * again (PTHREAD_DESTRUCTOR_ITERATIONS rounds at most). */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 8

static pthread_key_t key, sticky, counted, resetting;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long destroyed_sum;
static int sticky_calls;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int once_runs;

static void make_keys(void) {
  ++once_runs;
  pthread_key_create(&key, free);
  pthread_key_create(&sticky, NULL);
}

static void destroy(void* p) {
  pthread_mutex_lock(&lock);
  destroyed_sum += *(long*)p;
  pthread_mutex_unlock(&lock);
  free(p);
}

static void stick(void* p) {
  /* Sets itself again: called once per round until the rounds run out. */
  pthread_mutex_lock(&lock);
  ++sticky_calls;
  pthread_mutex_unlock(&lock);
  pthread_setspecific(resetting, p);
}



static void* run(void* arg) {
  long id = (long)arg;
  pthread_once(&once, make_keys);
  long* mine = malloc(sizeof *mine);
  *mine = id;
  pthread_setspecific(counted, mine);
  pthread_setspecific(resetting, (void*)1);
  for (int i = 0; i < 100; ++i) {
    sched_yield();
    if (*(long*)pthread_getspecific(counted) != id) return (void*)1;
  }
  if (id % 2) pthread_exit(NULL); /* destructors run on pthread_exit too */
  return NULL;
}

int main(void) {
  pthread_key_create(&counted, destroy);
  pthread_key_create(&resetting, stick);
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; ++i) pthread_create(&t[i], NULL, run, (void*)i);
  int bad = 0;
  for (int i = 0; i < THREADS; ++i) {
    void* r;
    pthread_join(t[i], &r);
    bad += r != NULL;
  }
  printf("once ran %d time(s); values private: %d\n", once_runs, bad == 0);
  printf("destructor sum %ld (expected %d)\n", destroyed_sum, THREADS * (THREADS - 1) / 2);
  printf("re-setting destructor calls per thread: %d (PTHREAD_DESTRUCTOR_ITERATIONS %d)\n",
         sticky_calls / THREADS, PTHREAD_DESTRUCTOR_ITERATIONS);
  printf("main's value: %p\n", pthread_getspecific(counted));
  printf("delete: %d, delete again: %d\n", pthread_key_delete(counted) == 0,
         pthread_key_delete(sticky) == 0);
  return 0;
}
