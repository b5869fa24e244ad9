/* SPDX-License-Identifier: Apache-2.0 */
/* Signals a thread sends itself: raise, pthread_kill(pthread_self()) and
 * pthread_sigqueue(pthread_self(), value) from threads other than main, many
 * times each (at two workers they run on both). The handler must run before
 * the call returns, in the calling thread (a __thread mark it sets), and
 * pthread_sigqueue's must see SI_QUEUE and the value. Then with the signal
 * blocked by the thread: the signal stays pending for it, sigpending shows
 * it, and unblocking it runs the handler before pthread_sigmask returns.
 *
 * Under ito a thread is a ULT on some worker's OS thread: workers other than
 * the first block asynchronous signals, and a ULT with a TLS block of its own
 * (ITO_ULT_TLS=1) has its own thread id in glibc's TCB, not its worker's.
 * Run at 1 and 2 workers, without and with TLS blocks, from source and under
 * the preload (tests/posix/CMakeLists.txt). Prints the same under NPTL. */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THREADS 4
#define ROUNDS 50

enum { by_raise, by_pthread_kill, by_sigqueue, ways };
static const char* const way_names[ways] = {"raise", "pthread_kill", "pthread_sigqueue"};

/* Set by the handler in the thread it runs in. */
struct marks {
  volatile int handled, queued_value, queued_code;
};
static __thread struct marks thread_marks;
/* This thread's marks, its thread pointer read afresh: a ULT without a TLS
 * block of its own (aarch64, or ITO_ULT_TLS off) has its worker's __thread
 * variables, and aarch64 code keeps the thread pointer in a register across
 * calls (x86-64 addresses %fs anew), so after a sched_yield that moved the
 * thread the caller's cached address would be the old worker's copy. */
static struct marks* marks_here(void) { return &thread_marks; }
/* Through a volatile pointer: a call the compiler can neither inline nor
 * reuse the result of. */
static struct marks* (*volatile my_marks)(void) = marks_here;

static void check(int ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "%s failed\n", what);
    exit(1);
  }
}

static void on_usr1(int sig, siginfo_t* info, void* context) {
  (void)sig;
  (void)context;
  struct marks* m = my_marks();
  m->handled = 1;
  m->queued_code = info->si_code;
  m->queued_value = info->si_code == SI_QUEUE ? info->si_value.sival_int : -1;
}

static int send_self(int way, int value) {
  switch (way) {
    case by_raise: return raise(SIGUSR1);
    case by_pthread_kill: return pthread_kill(pthread_self(), SIGUSR1);
    default: return pthread_sigqueue(pthread_self(), SIGUSR1, (union sigval){.sival_int = value});
  }
}

struct tally {
  int sent, handled_before_return, value_seen;
};
static struct tally tallies[THREADS][ways];

static void* sender(void* arg) {
  const int id = (int)(intptr_t)arg;
  for (int i = 0; i < ROUNDS; ++i) {
    for (int way = 0; way < ways; ++way) {
      struct tally* t = &tallies[id][way];
      my_marks()->handled = 0;
      const int value = id * 1000 + i;
      t->sent += send_self(way, value) == 0;
      struct marks* m = my_marks(); /* the worker the call returned on */
      t->handled_before_return += m->handled;
      if (way == by_sigqueue) t->value_seen += m->queued_code == SI_QUEUE && m->queued_value == value;
      sched_yield(); /* perhaps on the other worker next time */
    }
  }
  return NULL;
}

/* A signal the thread blocked stays pending until it unblocks it. */
static void* blocked_sender(void* arg) {
  (void)arg;
  sigset_t usr1, pending;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  for (int way = 0; way < ways; ++way) {
    check(pthread_sigmask(SIG_BLOCK, &usr1, NULL) == 0, "pthread_sigmask");
    my_marks()->handled = 0;
    check(send_self(way, 77) == 0, way_names[way]);
    check(sigpending(&pending) == 0, "sigpending");
    const int was_pending = sigismember(&pending, SIGUSR1) == 1;
    const int ran_while_blocked = my_marks()->handled;
    check(pthread_sigmask(SIG_UNBLOCK, &usr1, NULL) == 0, "pthread_sigmask");
    printf("blocked %s: pending %s, handler ran while blocked %s, ran at unblock %s\n",
           way_names[way], was_pending ? "yes" : "no", ran_while_blocked ? "yes" : "no",
           my_marks()->handled ? "yes" : "no");
  }
  return NULL;
}

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_usr1;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  check(sigaction(SIGUSR1, &sa, NULL) == 0, "sigaction");
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; ++i)
    check(pthread_create(&t[i], NULL, sender, (void*)(intptr_t)i) == 0, "pthread_create");
  for (int i = 0; i < THREADS; ++i) check(pthread_join(t[i], NULL) == 0, "pthread_join");
  for (int way = 0; way < ways; ++way) {
    struct tally sum = {0, 0, 0};
    for (int i = 0; i < THREADS; ++i) {
      sum.sent += tallies[i][way].sent;
      sum.handled_before_return += tallies[i][way].handled_before_return;
      sum.value_seen += tallies[i][way].value_seen;
    }
    printf("%s to self: %d sent, %d handled before the call returned", way_names[way], sum.sent,
           sum.handled_before_return);
    if (way == by_sigqueue) printf(", %d with their value", sum.value_seen);
    printf("\n");
  }
  pthread_t b;
  check(pthread_create(&b, NULL, blocked_sender, NULL) == 0, "pthread_create");
  check(pthread_join(b, NULL) == 0, "pthread_join");
  return 0;
}
