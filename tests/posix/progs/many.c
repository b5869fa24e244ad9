/* SPDX-License-Identifier: Apache-2.0 */
/* 10,000 threads alive at once (argv[1] overrides the count): each blocks on
 * a condition variable until all exist, then returns its index. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go = PTHREAD_COND_INITIALIZER;
static int started, released;

static void* run(void* arg) {
  pthread_mutex_lock(&lock);
  ++started;
  while (!released) pthread_cond_wait(&go, &lock);
  pthread_mutex_unlock(&lock);
  return arg;
}

int main(int argc, char** argv) {
  long n = argc > 1 ? atol(argv[1]) : 10000;
  pthread_t* t = malloc(sizeof *t * n);
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, 64 * 1024); /* NPTL: 10,000 x 8 MiB would be a lot */
  for (long i = 0; i < n; ++i) {
    if (pthread_create(&t[i], &a, run, (void*)i) != 0) {
      printf("create %ld failed\n", i);
      return 1;
    }
  }
  pthread_attr_destroy(&a);
  pthread_mutex_lock(&lock);
  int all = started;
  released = 1;
  pthread_cond_broadcast(&go);
  pthread_mutex_unlock(&lock);
  long sum = 0;
  for (long i = 0; i < n; ++i) {
    void* r;
    pthread_join(t[i], &r);
    sum += (long)r;
  }
  free(t);
  printf("%ld threads, sum of results %ld (expected %ld)\n", n, sum, n * (n - 1) / 2);
  (void)all;
  return sum == n * (n - 1) / 2 ? 0 : 1;
}
