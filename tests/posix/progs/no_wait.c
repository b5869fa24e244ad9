/* SPDX-License-Identifier: Apache-2.0 */
/* Takes locks of every sort, keys, once, a semaphore and pthread_self, none
 * of which has to wait, and makes a thread only when given an argument:
 * under libito-preload.so the runtime starts only with the thread
 * (PosixPreload.RuntimeStartsOnlyWhenNeeded: ITO_STATS prints a table at the
 * runtime's end, so none without it). */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>

static int runs;
static void run_once(void) { ++runs; }
static void* nothing(void* arg) { return arg; }

int main(int argc, char** argv) {
  (void)argv;
  static pthread_mutex_t normal = PTHREAD_MUTEX_INITIALIZER;
  static pthread_mutex_t recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
  static pthread_mutex_t errorcheck = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
  static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
  static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  int failed = 0;
  failed |= pthread_mutex_lock(&normal) | pthread_mutex_unlock(&normal);
  failed |= pthread_mutex_lock(&recursive) | pthread_mutex_trylock(&recursive);
  failed |= pthread_mutex_unlock(&recursive) | pthread_mutex_unlock(&recursive);
  failed |= pthread_mutex_lock(&errorcheck) | pthread_mutex_unlock(&errorcheck);
  failed |= pthread_cond_signal(&cond) | pthread_cond_broadcast(&cond);
  failed |= pthread_rwlock_rdlock(&rw) | pthread_rwlock_unlock(&rw);
  failed |= pthread_rwlock_wrlock(&rw) | pthread_rwlock_unlock(&rw);
  pthread_key_t key;
  failed |= pthread_key_create(&key, NULL) | pthread_setspecific(key, &runs);
  failed |= pthread_getspecific(key) != &runs;
  failed |= pthread_once(&once, run_once) | (runs != 1);
  sem_t sem;
  failed |= sem_init(&sem, 0, 1) | sem_wait(&sem) | sem_post(&sem) | sem_trywait(&sem);
  pthread_t self = pthread_self();
  failed |= !pthread_equal(self, pthread_self());
  if (argc > 1) {
    pthread_t t;
    failed |= pthread_create(&t, NULL, nothing, NULL) | pthread_join(t, NULL);
    failed |= !pthread_equal(self, pthread_self());
  }
  puts(failed ? "failed" : "done");
  return failed;
}
