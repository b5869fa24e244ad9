/* SPDX-License-Identifier: Apache-2.0 */
/* Threads with stack attributes: a stack the program allocates itself
 * (pthread_attr_setstack), reused thread after thread, and a stack size far
 * above the default, used by deep recursion. Prints results only. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long deep(int depth) {
  volatile char frame[4096];
  memset((char*)frame, depth & 0x7F, sizeof frame);
  long below = depth > 0 ? deep(depth - 1) : 0;
  return below + frame[depth % sizeof frame];
}

struct job {
  int depth;
  long sum;
  const char* lo;
  const char* hi;
  int on_given_stack;
};

static void* run(void* p) {
  struct job* j = p;
  volatile char here = 0;
  j->on_given_stack = j->lo == NULL || ((const char*)&here >= j->lo && (const char*)&here < j->hi);
  j->sum = deep(j->depth);
  return p;
}

int main(void) {
  enum { own_bytes = 1 << 20 };
  char* own = aligned_alloc(4096, own_bytes);
  pthread_attr_t a;
  pthread_attr_init(&a);
  if (pthread_attr_setstack(&a, own, own_bytes) != 0) return 1;
  for (int i = 0; i < 5; ++i) {
    struct job j = {40 * (i + 1), 0, own, own + own_bytes, 0};
    pthread_t t;
    void* r;
    if (pthread_create(&t, &a, run, &j) != 0 || pthread_join(t, &r) != 0 || r != &j) return 2;
    printf("own stack: depth %d sum %ld on it %d\n", j.depth, j.sum, j.on_given_stack);
  }
  pthread_attr_destroy(&a);
  free(own);

  pthread_attr_init(&a);
  if (pthread_attr_setstacksize(&a, 16 << 20) != 0) return 3;
  size_t size = 0;
  pthread_attr_getstacksize(&a, &size);
  printf("stack size attribute: %zu\n", size);
  pthread_t t[4];
  struct job jobs[4];
  for (int i = 0; i < 4; ++i) {
    jobs[i] = (struct job){2000 + i, 0, NULL, NULL, 0};  /* ~8 MiB each */
    if (pthread_create(&t[i], &a, run, &jobs[i]) != 0) return 4;
  }
  for (int i = 0; i < 4; ++i) {
    if (pthread_join(t[i], NULL) != 0) return 5;
    printf("big stack: depth %d sum %ld\n", jobs[i].depth, jobs[i].sum);
  }
  pthread_attr_destroy(&a);
  return 0;
}
