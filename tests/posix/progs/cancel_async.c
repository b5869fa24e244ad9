/* SPDX-License-Identifier: Apache-2.0 */
/* Asynchronous cancellation of threads that compute and never reach a
 * cancellation point: under the preload (preemption on), the preemption
 * signal interrupts them at a safe point and they exit from there, running
 * their cleanup handlers. Several at once, one of them with cancellation
 * disabled until it enables it. Output compared with NPTL's. */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 3

static sem_t ready;
static volatile unsigned long spin[THREADS + 1];
static volatile int cleaned[THREADS + 1];
static volatile int enable_now;

static void cleanup(void* arg) { cleaned[(long)arg] = 1; }

static void* compute(void* arg) {
  long i = (long)arg;
  pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
  pthread_cleanup_push(cleanup, arg);
  sem_post(&ready);
  for (;;) spin[i] = spin[i] + 1;
  pthread_cleanup_pop(0);
  return NULL;
}

/* Disabled while cancelled, then enabled while asynchronous: acts in the
 * call that enables it. */
static void* compute_then_enable(void* arg) {
  long i = (long)arg;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
  pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
  pthread_cleanup_push(cleanup, arg);
  sem_post(&ready);
  while (!enable_now) spin[i] = spin[i] + 1;
  pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
  for (;;) spin[i] = spin[i] + 1;
  pthread_cleanup_pop(0);
  return NULL;
}

int main(void) {
  pthread_t t[THREADS + 1];
  sem_init(&ready, 0, 0);
  for (long i = 0; i < THREADS; ++i) pthread_create(&t[i], NULL, compute, (void*)i);
  pthread_create(&t[THREADS], NULL, compute_then_enable, (void*)(long)THREADS);
  for (int i = 0; i <= THREADS; ++i) sem_wait(&ready);
  for (int i = 0; i <= THREADS; ++i) pthread_cancel(t[i]);
  enable_now = 1;
  for (int i = 0; i <= THREADS; ++i) {
    void* r = NULL;
    pthread_join(t[i], &r);
    /* glibc 2.36 runs the handlers of a thread that enables a pending
     * asynchronous cancellation, but leaves its result as it was: the
     * last thread's result is not compared (ito's is PTHREAD_CANCELED). */
    if (i < THREADS)
      printf("thread %d: %s, ", i, r == PTHREAD_CANCELED ? "cancelled" : "NOT cancelled");
    else
      printf("thread %d: ", i);
    printf("cleanup %s\n", cleaned[i] ? "ran" : "did not run");
  }
  return 0;
}
