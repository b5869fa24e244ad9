/* SPDX-License-Identifier: Apache-2.0 */
/* Loaded and unloaded again and again by dlopen_threads.c: its constructor
 * runs the program's code with the loader's lock held, long enough to be
 * preempted, and makes a blocking call. */
#include <time.h>

int ctor_runs;
volatile unsigned long ctor_spin;

static void compute_for_ms(long ms) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do {
    for (int i = 0; i < 1000; ++i) ctor_spin = ctor_spin + 1;
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
}

__attribute__((constructor)) static void ctor(void) {
  compute_for_ms(15);  /* past a 10 ms preemption slice */
  struct timespec nap = {0, 1000000};
  nanosleep(&nap, 0);
  ++ctor_runs;
}
