/* SPDX-License-Identifier: Apache-2.0 */
/* Threads that never block nor yield. NPTL's threads are preempted by the
 * kernel; ito's ULTs must be preempted by ito, or at ITO_WORKERS=1 (every
 * thread on one worker) each shape below hangs: a thread spinning on a flag
 * that the main thread sets, two threads passing a turn back and forth
 * through a volatile variable, a main thread that naps while a thread
 * computes. A preempted thread keeps its registers, floating-point values
 * and errno (it may resume on another worker). An alarm ends a hang. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void check(int ok, const char* what) {
  if (!ok) {
    printf("FAILED: %s\n", what);
    exit(1);
  }
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* 1. Spins until the main thread, which naps first, sets the flag. */
static volatile int go;
static void* spin_until_go(void* arg) {
  (void)arg;
  while (!go) {
  }
  return NULL;
}

/* 2. Two threads hand a turn to each other, spinning without a call. */
enum { turns = 10 };
static volatile int turn;
static void* player(void* arg) {
  const int me = (int)(intptr_t)arg;
  for (int i = 0; i < turns; ++i) {
    while (turn != me) {
    }
    turn = 1 - me;
  }
  return NULL;
}

/* 3. Registers, floating point and errno across preemption: a sum of
 * 1/k in doubles (its value depends on every rounding, in order) while
 * errno holds the thread's own number; compared with the main thread's. */
static double harmonic(long n) {
  double s = 0, c = 0; /* Kahan: a value that needs its registers intact */
  for (long k = 1; k <= n; ++k) {
    const double y = 1.0 / (double)k - c;
    const double t = s + y;
    c = (t - s) - y;
    s = t;
  }
  return s;
}
/* errno's address asked afresh: the compiler may keep __errno_location()'s
 * (a const function) otherwise. */
static int* (*volatile errno_at)(void) = __errno_location;

enum { terms = 30000000 };
static double expected;
static void* compute(void* arg) {
  const int mine = 1000 + (int)(intptr_t)arg;
  *errno_at() = mine;
  const double got = harmonic(terms);
  const int* e = errno_at();
  return (void*)(intptr_t)(got == expected && *e == mine);
}

/* 4. The main thread naps while a thread computes until told to stop. */
static volatile int stop;
static void* busy(void* arg) {
  volatile double x = 1;
  while (!stop) x = x * 1.0000001;
  (void)arg;
  return NULL;
}

int main(void) {
  alarm(60);
  setvbuf(stdout, NULL, _IONBF, 0);
  pthread_t t[2];

  check(pthread_create(&t[0], NULL, spin_until_go, NULL) == 0, "create spinner");
  usleep(20000);
  go = 1;
  check(pthread_join(t[0], NULL) == 0, "join spinner");
  printf("a thread spinning on a flag saw the main thread set it\n");

  check(pthread_create(&t[0], NULL, player, (void*)0) == 0, "create player 0");
  check(pthread_create(&t[1], NULL, player, (void*)1) == 0, "create player 1");
  for (int i = 0; i < 2; ++i) check(pthread_join(t[i], NULL) == 0, "join player");
  printf("two threads passed a turn %d times, spinning\n", 2 * turns);

  expected = harmonic(terms);
  for (int i = 0; i < 2; ++i)
    check(pthread_create(&t[i], NULL, compute, (void*)(intptr_t)i) == 0, "create compute");
  for (int i = 0; i < 2; ++i) {
    void* ok = NULL;
    check(pthread_join(t[i], &ok) == 0, "join compute");
    check(ok != NULL, "a computing thread's sum and errno survived");
  }
  printf("two computing threads kept their floating-point sums and errno\n");

  check(pthread_create(&t[0], NULL, busy, NULL) == 0, "create busy");
  const int64_t start = now_ns();
  for (int i = 0; i < 5; ++i) usleep(20000);
  const int64_t napped_ms = (now_ns() - start) / 1000000;
  stop = 1;
  check(pthread_join(t[0], NULL) == 0, "join busy");
  check(napped_ms >= 100, "the naps lasted their time");
  printf("the main thread napped 5 times while a thread computed\n");
  return 0;
}
