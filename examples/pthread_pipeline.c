/* SPDX-License-Identifier: Apache-2.0 */
/* A plain POSIX threads program, with nothing of ito in it: a producer, two
 * workers and a collector passing numbers through a mutex- and condvar-guarded
 * ring. Run it as is (NPTL) or on ULTs with the preload library:
 *   LD_PRELOAD=libito-preload.so ./pthread_pipeline
 * Its output is the same either way. */
#include <pthread.h>
#include <stdio.h>

enum { items = 20000, slots = 16, workers = 2 };

struct ring {
  long v[slots];
  int head, tail, count, closed;
  pthread_mutex_t lock;
  pthread_cond_t not_empty, not_full;
};

static void ring_init(struct ring* r) {
  r->head = r->tail = r->count = r->closed = 0;
  pthread_mutex_init(&r->lock, NULL);
  pthread_cond_init(&r->not_empty, NULL);
  pthread_cond_init(&r->not_full, NULL);
}

static void put(struct ring* r, long x) {
  pthread_mutex_lock(&r->lock);
  while (r->count == slots) pthread_cond_wait(&r->not_full, &r->lock);
  r->v[r->tail] = x;
  r->tail = (r->tail + 1) % slots;
  ++r->count;
  pthread_cond_signal(&r->not_empty);
  pthread_mutex_unlock(&r->lock);
}

/* 0 when the ring is closed and empty. */
static int get(struct ring* r, long* x) {
  pthread_mutex_lock(&r->lock);
  while (r->count == 0 && !r->closed) pthread_cond_wait(&r->not_empty, &r->lock);
  int got = r->count > 0;
  if (got) {
    *x = r->v[r->head];
    r->head = (r->head + 1) % slots;
    --r->count;
    pthread_cond_signal(&r->not_full);
  }
  pthread_mutex_unlock(&r->lock);
  return got;
}

static void close_ring(struct ring* r) {
  pthread_mutex_lock(&r->lock);
  r->closed = 1;
  pthread_cond_broadcast(&r->not_empty);
  pthread_mutex_unlock(&r->lock);
}

static struct ring in, out;

static void* produce(void* arg) {
  (void)arg;
  for (long i = 1; i <= items; ++i) put(&in, i);
  close_ring(&in);
  return NULL;
}

static void* square(void* arg) {
  (void)arg;
  long x;
  while (get(&in, &x)) put(&out, x * x);
  return NULL;
}

static void* collect(void* arg) {
  long x, sum = 0;
  while (get(&out, &x)) sum += x;
  *(long*)arg = sum;
  return NULL;
}

int main(void) {
  ring_init(&in);
  ring_init(&out);
  long sum = 0;
  pthread_t p, w[workers], c;
  pthread_create(&p, NULL, produce, NULL);
  for (int i = 0; i < workers; ++i) pthread_create(&w[i], NULL, square, NULL);
  pthread_create(&c, NULL, collect, &sum);
  pthread_join(p, NULL);
  for (int i = 0; i < workers; ++i) pthread_join(w[i], NULL);
  close_ring(&out);
  pthread_join(c, NULL);
  long expected = (long)items * (items + 1) * (2L * items + 1) / 6;
  printf("sum of squares 1..%d: %ld (%s)\n", items, sum, sum == expected ? "right" : "WRONG");
  return sum == expected ? 0 : 1;
}
