/* SPDX-License-Identifier: Apache-2.0 */
/* A fixed thread pool: a task queue, workers that sleep on a condition
 * variable, a shutdown broadcast; the main thread waits for completion. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define WORKERS 6
#define TASKS 5000

struct task {
  int n;
  struct task* next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;
static struct task *first, *last;
static int shutting_down, finished;
static long results[TASKS];

static void* worker(void* arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&lock);
    while (!first && !shutting_down) pthread_cond_wait(&work, &lock);
    if (!first) {
      pthread_mutex_unlock(&lock);
      return NULL;
    }
    struct task* t = first;
    first = t->next;
    if (!first) last = NULL;
    pthread_mutex_unlock(&lock);
    long r = 0;
    for (int i = 0; i <= t->n; ++i) r += (long)i * i;
    results[t->n] = r;
    free(t);
    pthread_mutex_lock(&lock);
    if (++finished == TASKS) pthread_cond_signal(&done);
    pthread_mutex_unlock(&lock);
  }
}

int main(void) {
  pthread_t threads[WORKERS];
  for (int i = 0; i < WORKERS; ++i) pthread_create(&threads[i], NULL, worker, NULL);
  for (int i = 0; i < TASKS; ++i) {
    struct task* t = malloc(sizeof *t);
    t->n = i;
    t->next = NULL;
    pthread_mutex_lock(&lock);
    if (last) last->next = t;
    else first = t;
    last = t;
    pthread_cond_signal(&work);
    pthread_mutex_unlock(&lock);
  }
  pthread_mutex_lock(&lock);
  while (finished < TASKS) pthread_cond_wait(&done, &lock);
  shutting_down = 1;
  pthread_cond_broadcast(&work);
  pthread_mutex_unlock(&lock);
  for (int i = 0; i < WORKERS; ++i) pthread_join(threads[i], NULL);
  long check = 0;
  for (int i = 0; i < TASKS; ++i) check ^= results[i] * (i + 1);
  printf("pool: %d tasks, checksum %ld\n", TASKS, check);
  return 0;
}
