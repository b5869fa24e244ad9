/* SPDX-License-Identifier: Apache-2.0 */
/* Locks, keys and semaphores used before the first pthread_create: every
 * call must agree on who the caller is once threads exist (the main thread
 * is the same thread before and after). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t rd = PTHREAD_RWLOCK_INITIALIZER;
static pthread_key_t key;
static int value;
static sem_t sem;
static pthread_spinlock_t spin;
static pthread_barrier_t barrier;

static void* other(void* arg) {
  (void)arg;
  printf("other: tryrdlock %s\n", pthread_rwlock_tryrdlock(&rw) == EBUSY ? "EBUSY" : "?");
  printf("other: trywrlock on a read-held lock %s\n",
         pthread_rwlock_trywrlock(&rd) == EBUSY ? "EBUSY" : "?");
  printf("other: key %s\n", pthread_getspecific(key) == NULL ? "unset" : "set");
  printf("other: spin_trylock %s\n", pthread_spin_trylock(&spin) == EBUSY ? "EBUSY" : "?");
  sem_post(&sem);
  pthread_barrier_wait(&barrier);
  return NULL;
}

int main(void) {
  printf("wrlock %d\n", pthread_rwlock_wrlock(&rw));
  printf("rdlock %d\n", pthread_rwlock_rdlock(&rd));
  printf("key_create %d\n", pthread_key_create(&key, NULL));
  printf("setspecific %d\n", pthread_setspecific(key, &value));
  printf("sem_init %d\n", sem_init(&sem, 0, 0));
  printf("spin_init %d\n", pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE));
  printf("spin_lock %d\n", pthread_spin_lock(&spin));
  printf("barrier_init %d\n", pthread_barrier_init(&barrier, NULL, 2));

  pthread_t t;
  int created = pthread_create(&t, NULL, other, NULL);
  sem_wait(&sem);
  printf("create %d\n", created);
  pthread_barrier_wait(&barrier);
  printf("join %d\n", pthread_join(t, NULL));

  printf("wrlock's unlock %d\n", pthread_rwlock_unlock(&rw));
  printf("rdlock's unlock %d\n", pthread_rwlock_unlock(&rd));
  printf("key %s\n", pthread_getspecific(key) == &value ? "kept" : "lost");
  printf("spin_unlock %d\n", pthread_spin_unlock(&spin));
  printf("rwlock_destroy %d\n", pthread_rwlock_destroy(&rw));
  printf("sem_destroy %d\n", sem_destroy(&sem));
  return 0;
}
