/* SPDX-License-Identifier: Apache-2.0 */
/* A program with thread-local variables of its own: each thread writes its
 * number into a __thread variable, all meet at a barrier, then each reads its
 * variable back. On OS threads every thread keeps its own value; ULTs sharing
 * one worker would all read the last writer's. The preload library must see
 * this program's TLS and leave its threads OS threads (posix_preload_test). */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#define THREADS 4

static __thread int mine;
static pthread_barrier_t met;
static int kept[THREADS];

static void* run(void* arg) {
  const int id = (int)(long)arg;
  mine = id + 1;
  pthread_barrier_wait(&met);
  for (int i = 0; i < 10; ++i) sched_yield();
  kept[id] = mine == id + 1;
  return NULL;
}

int main(void) {
  pthread_t t[THREADS];
  pthread_barrier_init(&met, NULL, THREADS);
  for (long i = 0; i < THREADS; ++i) pthread_create(&t[i], NULL, run, (void*)i);
  int count = 0;
  for (int i = 0; i < THREADS; ++i) {
    pthread_join(t[i], NULL);
    count += kept[i];
  }
  printf("%d threads, %d kept their own value\n", THREADS, count);
  return 0;
}
