/* SPDX-License-Identifier: Apache-2.0 */
/* A program that deadlocks: two threads take two mutexes in opposite orders
 * (each holds its first when it asks for its second), and the main thread
 * joins one of them. On NPTL it hangs. Under libito-preload.so with its
 * threads as ULTs, ITO_DEADLOCK reports it and ends it with status 4; with
 * OS threads nothing is said (posix_preload_test). */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t first = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t second = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both_hold;

static void* forward(void* arg) {
  (void)arg;
  pthread_mutex_lock(&first);
  pthread_barrier_wait(&both_hold);
  pthread_mutex_lock(&second);
  return NULL;
}

static void* backward(void* arg) {
  (void)arg;
  pthread_mutex_lock(&second);
  pthread_barrier_wait(&both_hold);
  pthread_mutex_lock(&first);
  return NULL;
}

int main(void) {
  pthread_t a, b;
  pthread_barrier_init(&both_hold, NULL, 2);
  printf("taking the mutexes\n");
  fflush(stdout);
  pthread_create(&a, NULL, forward, NULL);
  pthread_create(&b, NULL, backward, NULL);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  printf("never printed\n");
  return 0;
}
