/* SPDX-License-Identifier: Apache-2.0 */
/* `ito-bench preempt`'s program: a plain pthread program, run as it is (NPTL)
 * and under libito-preload.so. `busy` threads spin without a call; the main
 * thread sleeps `sleep_us` at a time and measures how late it wakes (the
 * time past its deadline until it runs again), `samples` times. Prints
 * "median_us p90_us max_us". On one CPU (NPTL) or one worker (ito) the main
 * thread competes with the busy ones for it: the kernel's scheduler, or
 * ito's preemption, decides how late it runs.
 * Usage: wake_latency SAMPLES SLEEP_US BUSY */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile int stop;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void* busy(void* arg) {
  volatile uint64_t x = 0;
  while (!stop) x = x + 1;
  (void)arg;
  return NULL;
}

static int by_value(const void* a, const void* b) {
  const int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: wake_latency SAMPLES SLEEP_US BUSY\n");
    return 2;
  }
  const int samples = atoi(argv[1]), busy_threads = atoi(argv[3]);
  const int64_t sleep_ns = atoll(argv[2]) * 1000;
  if (samples < 1 || sleep_ns < 1 || busy_threads < 0 || busy_threads > 64) return 2;
  pthread_t t[64];
  for (int i = 0; i < busy_threads; ++i) pthread_create(&t[i], NULL, busy, NULL);
  struct timespec warm = {0, 20 * 1000000};  /* the busy threads are running */
  nanosleep(&warm, NULL);
  int64_t* late = malloc(sizeof *late * (size_t)samples);
  for (int i = 0; i < samples; ++i) {
    const int64_t deadline = now_ns() + sleep_ns;
    const struct timespec d = {(time_t)(sleep_ns / 1000000000), (long)(sleep_ns % 1000000000)};
    nanosleep(&d, NULL);
    late[i] = now_ns() - deadline;
  }
  stop = 1;
  for (int i = 0; i < busy_threads; ++i) pthread_join(t[i], NULL);
  qsort(late, (size_t)samples, sizeof *late, by_value);
  printf("%.1f %.1f %.1f\n", (double)late[samples / 2] / 1e3, (double)late[samples * 9 / 10] / 1e3,
         (double)late[samples - 1] / 1e3);
  free(late);
  return 0;
}
