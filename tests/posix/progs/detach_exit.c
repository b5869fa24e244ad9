/* SPDX-License-Identifier: Apache-2.0 */
/* Detached threads, pthread_exit from deep in a call chain (its value is what
 * join returns), and a main thread that ends with pthread_exit: the process
 * lives until the last thread ends, then exits with status 0. */
#include <pthread.h>
#include <stdio.h>

#define DETACHED 50

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go_cond = PTHREAD_COND_INITIALIZER;
static int finished, go;

static void* detached(void* arg) {
  (void)arg;
  pthread_mutex_lock(&lock);
  while (!go) pthread_cond_wait(&go_cond, &lock); /* main prints first */
  pthread_mutex_unlock(&lock);
  for (int i = 0; i < 20; ++i) sched_yield();
  pthread_mutex_lock(&lock);
  if (++finished == DETACHED) printf("last detached thread done (%d)\n", finished);
  pthread_mutex_unlock(&lock);
  return NULL;
}

/* GCC 12 takes the noreturn pthread_exit at depth 0 for an endless recursion. */
#pragma GCC diagnostic ignored "-Winfinite-recursion"
static void deep(int depth, long value) {
  if (depth > 0) {
    deep(depth - 1, value + 1);
    printf("not reached\n");
    return;
  }
  pthread_exit((void*)value);
}

static void* exits_deep(void* arg) {
  deep(30, (long)arg);
  return NULL;
}

int main(void) {
  pthread_attr_t a;
  pthread_attr_init(&a);
  int state;
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_attr_getdetachstate(&a, &state);
  printf("attr detached: %d\n", state == PTHREAD_CREATE_DETACHED);
  for (int i = 0; i < DETACHED / 2; ++i) {
    pthread_t t;
    pthread_create(&t, &a, detached, NULL);
  }
  pthread_attr_destroy(&a);
  for (int i = 0; i < DETACHED / 2; ++i) {
    pthread_t t;
    pthread_create(&t, NULL, detached, NULL);
    pthread_detach(t);
  }
  pthread_t j;
  pthread_create(&j, NULL, exits_deep, (void*)100);
  void* v;
  pthread_join(j, &v);
  printf("pthread_exit value from depth 30: %ld\n", (long)v);
  printf("self equal: %d\n", pthread_equal(pthread_self(), pthread_self()));
  fflush(stdout);
  pthread_mutex_lock(&lock);
  go = 1;
  pthread_cond_broadcast(&go_cond);
  pthread_mutex_unlock(&lock);
  pthread_exit(NULL);
}
