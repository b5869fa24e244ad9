/* SPDX-License-Identifier: Apache-2.0 */
// Boehm GC with threads (Debian's libgc): four threads build and drop
// linked lists while collections stop the world (the collector sends each
// registered thread a signal whose handler waits in sigsuspend), the main
// thread meanwhile in GC_pthread_create's sem_wait, with cancellation
// disabled, or in pthread_join.
#define GC_THREADS
#include <gc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct node { struct node* next; long value; };

static void* worker(void* arg) {
  long id = (long)arg, total = 0;
  for (int round = 0; round < 200; ++round) {
    struct node* head = NULL;
    for (int i = 0; i < 1000; ++i) {
      struct node* n = GC_MALLOC(sizeof *n);
      n->next = head; n->value = i + id; head = n;
    }
    for (struct node* n = head; n; n = n->next) total += n->value;
  }
  return (void*)total;
}

int main(void) {
  GC_INIT();
  enum { threads = 4 };
  pthread_t t[threads];
  for (long i = 0; i < threads; ++i) pthread_create(&t[i], NULL, worker, (void*)i);
  long sum = 0;
  for (int i = 0; i < threads; ++i) { void* r; pthread_join(t[i], &r); sum += (long)r; }
  printf("sum %ld, collected: %s\n", sum, GC_get_gc_no() > 1 ? "yes" : "no");
  return 0;
}
