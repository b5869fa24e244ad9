/* SPDX-License-Identifier: Apache-2.0 */
/* Producer/consumer on a bounded buffer: mutex + two condition variables. */
#include <pthread.h>
#include <stdio.h>

#define PRODUCERS 4
#define CONSUMERS 4
#define ITEMS 20000 /* per producer */
#define SLOTS 16

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static long buffer[SLOTS];
static int head, count, producers_left = PRODUCERS;

static void* produce(void* arg) {
  long base = (long)arg * ITEMS;
  for (long i = 1; i <= ITEMS; ++i) {
    pthread_mutex_lock(&lock);
    while (count == SLOTS) pthread_cond_wait(&not_full, &lock);
    buffer[(head + count++) % SLOTS] = base + i;
    pthread_cond_signal(&not_empty);
    pthread_mutex_unlock(&lock);
  }
  pthread_mutex_lock(&lock);
  if (--producers_left == 0) pthread_cond_broadcast(&not_empty);
  pthread_mutex_unlock(&lock);
  return NULL;
}

static void* consume(void* arg) {
  long* sum = arg;
  for (;;) {
    pthread_mutex_lock(&lock);
    while (count == 0 && producers_left > 0) pthread_cond_wait(&not_empty, &lock);
    if (count == 0) {
      pthread_mutex_unlock(&lock);
      return NULL;
    }
    long v = buffer[head];
    head = (head + 1) % SLOTS;
    --count;
    pthread_cond_signal(&not_full);
    pthread_mutex_unlock(&lock);
    *sum += v;
  }
}

int main(void) {
  pthread_t p[PRODUCERS], c[CONSUMERS];
  long sums[CONSUMERS] = {0};
  for (long i = 0; i < CONSUMERS; ++i) pthread_create(&c[i], NULL, consume, &sums[i]);
  for (long i = 0; i < PRODUCERS; ++i) pthread_create(&p[i], NULL, produce, (void*)i);
  for (int i = 0; i < PRODUCERS; ++i) pthread_join(p[i], NULL);
  long total = 0;
  for (int i = 0; i < CONSUMERS; ++i) {
    pthread_join(c[i], NULL);
    total += sums[i];
  }
  long n = (long)PRODUCERS * ITEMS;
  printf("consumed sum %ld expected %ld\n", total, n * (n + 1) / 2);
  return total == n * (n + 1) / 2 ? 0 : 1;
}
