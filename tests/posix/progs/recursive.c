/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE 1
/* Mutex kinds: a recursive mutex (static initialiser and mutexattr) locked
 * recursively by several threads, and an errorcheck mutex's error codes. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t rec = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t rec2;
static long counter;

static void add(int depth) {
  pthread_mutex_lock(&rec);
  pthread_mutex_lock(&rec2);
  if (depth > 0) add(depth - 1);
  else ++counter;
  pthread_mutex_unlock(&rec2);
  pthread_mutex_unlock(&rec);
}

static void* run(void* arg) {
  (void)arg;
  for (int i = 0; i < 2000; ++i) add(i % 5);
  return NULL;
}

static pthread_mutex_t checked;
static void* unlock_foreign(void* arg) {
  (void)arg;
  return (void*)(long)pthread_mutex_unlock(&checked);
}

int main(void) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&rec2, &a);
  pthread_t t[4];
  for (int i = 0; i < 4; ++i) pthread_create(&t[i], NULL, run, NULL);
  for (int i = 0; i < 4; ++i) pthread_join(t[i], NULL);
  printf("recursive: counter %ld\n", counter);
  printf("trylock own recursive: %d\n", pthread_mutex_trylock(&rec));
  pthread_mutex_unlock(&rec);

  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
  pthread_mutex_init(&checked, &a);
  pthread_mutexattr_destroy(&a);
  printf("unlock unlocked: %s\n", pthread_mutex_unlock(&checked) == EPERM ? "EPERM" : "?");
  pthread_mutex_lock(&checked);
  printf("relock: %s\n", pthread_mutex_lock(&checked) == EDEADLK ? "EDEADLK" : "?");
  printf("trylock held: %s\n", pthread_mutex_trylock(&checked) == EBUSY ? "EBUSY" : "?");
  printf("destroy held: %s\n", pthread_mutex_destroy(&checked) == EBUSY ? "EBUSY" : "?");
  void* r;
  pthread_create(&t[0], NULL, unlock_foreign, NULL);
  pthread_join(t[0], &r);
  printf("unlock by other thread: %s\n", (long)r == EPERM ? "EPERM" : "?");
  pthread_mutex_unlock(&checked);
  printf("destroy: %d\n", pthread_mutex_destroy(&checked));
  return 0;
}
