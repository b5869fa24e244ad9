/* SPDX-License-Identifier: Apache-2.0 */
/* Threads created without a stack size that use 768 KiB of stack, as
 * programs do under NPTL, whose default stack is 8 MiB: a large array in a
 * frame (Boehm GC's marker keeps 64 KiB in one), deep recursion. Under
 * libito-preload.so a thread's default stack is the stack limit up to 2 MiB
 * (docs/POSIX.md, "Stacks"); on ito's 64 KiB it overflowed. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

enum { frame_bytes = 8 * 1024, depth = 96, threads = 4 };

static __attribute__((noinline)) long deep(int left, int seed) {
  volatile char frame[frame_bytes];
  memset((char*)frame, (seed + left) & 0x7F, sizeof frame);
  long below = left > 0 ? deep(left - 1, seed) : 0;
  return below + frame[(left * 31) % frame_bytes];
}

static void* run(void* arg) {
  const int seed = (int)(long)arg;
  static __thread char big[64 * 1024]; /* TLS too: a TLS program's threads */
  memset(big, seed, sizeof big);
  return (void*)(deep(depth, seed) + big[seed]);
}

int main(void) {
  pthread_t t[threads];
  for (long i = 0; i < threads; ++i)
    if (pthread_create(&t[i], NULL, run, (void*)i) != 0) return 1;
  for (int i = 0; i < threads; ++i) {
    void* r = NULL;
    pthread_join(t[i], &r);
    printf("thread %d: %ld\n", i, (long)r);
  }
  return 0;
}
