/* SPDX-License-Identifier: Apache-2.0 */
/* pthread_cleanup_push/pop: handlers run in reverse order at pthread_exit
 * (from any depth, after the thread has switched and maybe moved to
 * another worker), pop(1) runs one, pop(0) does not, and the main thread's
 * run at its pthread_exit. Built as plain C (glibc's setjmp-based macros),
 * as C with -fexceptions and as C++ (both unwinding-based). */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 4

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static char log_of[THREADS][64];

static void note(void* arg) {
  intptr_t v = (intptr_t)arg;
  char* log = log_of[v / 100];
  size_t n = strlen(log);
  snprintf(log + n, 64 - n, "%ld ", (long)(v % 100));
}

/* gcc 12 takes the recursion for endless (it ends in pthread_exit). */
#pragma GCC diagnostic ignored "-Winfinite-recursion"
static void deep_exit(long depth, long id) {
  pthread_cleanup_push(note, (void*)(intptr_t)(id * 100 + 10 + depth));
  sched_yield();
  if (depth > 0) deep_exit(depth - 1, id);
  else pthread_exit((void*)(intptr_t)(id + 1000));
  pthread_cleanup_pop(0);
}

static void* thread_main(void* arg) {
  long id = (long)(intptr_t)arg;
  pthread_cleanup_push(note, (void*)(intptr_t)(id * 100 + 1));
  pthread_cleanup_push(note, (void*)(intptr_t)(id * 100 + 2));
  pthread_cleanup_pop(1); /* runs 2 now */
  pthread_cleanup_push(note, (void*)(intptr_t)(id * 100 + 3));
  pthread_cleanup_pop(0); /* 3 never runs */
  pthread_mutex_lock(&m);
  sched_yield();
  pthread_mutex_unlock(&m);
  deep_exit(3, id);
  pthread_cleanup_pop(0);
  return NULL;
}

static void main_handler(void* arg) {
  printf("main's handler: %s\n", (const char*)arg);
  fflush(stdout);
}

int main(void) {
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; ++i) pthread_create(&t[i], NULL, thread_main, (void*)(intptr_t)i);
  for (int i = 0; i < THREADS; ++i) {
    void* r = NULL;
    pthread_join(t[i], &r);
    printf("thread %d: exit %ld, handlers %s\n", i, (long)(intptr_t)r, log_of[i]);
  }
  fflush(stdout);
#ifndef __EXCEPTIONS
  /* Unwinding-based handlers of the main thread do not run under ito (its
   * stack is the process's own: nothing to unwind to; docs/POSIX.md). */
  pthread_cleanup_push(main_handler, (void*)"ran");
  pthread_exit(NULL);
  pthread_cleanup_pop(0);
#else
  (void)main_handler;
#endif
  return 0;
}
