/* SPDX-License-Identifier: Apache-2.0 */
/* Barrier phases: every thread writes its slot, waits, checks all slots of
 * the phase, waits again; one thread per phase gets the serial value. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 6
#define PHASES 50

static pthread_barrier_t barrier;
static int slots[THREADS];
static int serial_count, errors;
static pthread_spinlock_t spin;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static long shared_total;

static void* run(void* arg) {
  long id = (long)arg;
  for (int phase = 0; phase < PHASES; ++phase) {
    slots[id] = phase;
    if (pthread_barrier_wait(&barrier) == PTHREAD_BARRIER_SERIAL_THREAD) {
      pthread_spin_lock(&spin);
      ++serial_count;
      pthread_spin_unlock(&spin);
    }
    pthread_rwlock_rdlock(&rw);
    for (int i = 0; i < THREADS; ++i) {
      if (slots[i] != phase) {
        pthread_spin_lock(&spin);
        ++errors;
        pthread_spin_unlock(&spin);
      }
    }
    pthread_rwlock_unlock(&rw);
    pthread_barrier_wait(&barrier);
    pthread_rwlock_wrlock(&rw);
    shared_total += phase;
    pthread_rwlock_unlock(&rw);
  }
  return NULL;
}

int main(void) {
  pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
  pthread_barrier_init(&barrier, NULL, THREADS);
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; ++i) pthread_create(&t[i], NULL, run, (void*)i);
  for (int i = 0; i < THREADS; ++i) pthread_join(t[i], NULL);
  printf("phases %d, serial threads %d, errors %d, total %ld\n", PHASES, serial_count, errors,
         shared_total);
  printf("destroy: %d\n", pthread_barrier_destroy(&barrier));
  pthread_spin_destroy(&spin);
  return errors != 0;
}
