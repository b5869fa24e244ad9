/* SPDX-License-Identifier: Apache-2.0 */
/* The calls that take a pthread_t beyond create/join/detach: the stack that
 * pthread_getattr_np reports (what Rust's std::thread reads to place its
 * guard page), liveness by pthread_kill(t, 0), a signal to oneself, names,
 * non-blocking and timed joins, scheduling and affinity queries. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static const char* name(int e) {
  return e == 0 ? "0" : e == ETIMEDOUT ? "ETIMEDOUT" : e == EINVAL ? "EINVAL" :
         e == EBUSY ? "EBUSY" : e == ERANGE ? "ERANGE" : e == ESRCH ? "ESRCH" : "?";
}

/* Rust's pattern: the attributes of pthread_self, then their stack. */
static const char* own_stack_holds_a_local(void) {
  volatile char here = 0;
  pthread_attr_t a;
  if (pthread_getattr_np(pthread_self(), &a) != 0) return "getattr_np failed";
  void* addr = NULL;
  size_t size = 0;
  int rc = pthread_attr_getstack(&a, &addr, &size);
  pthread_attr_destroy(&a);
  if (rc != 0) return "getstack failed";
  uintptr_t p = (uintptr_t)&here, lo = (uintptr_t)addr;
  return size >= 16384 && p >= lo && p < lo + size ? "holds a local" : "wrong stack";
}

static volatile sig_atomic_t got_signal;
static void on_usr1(int sig) { got_signal = sig; }

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int release;

static void* wait_for_release(void* arg) {
  pthread_mutex_lock(&m);
  while (!release) pthread_cond_wait(&c, &m);
  pthread_mutex_unlock(&m);
  return arg;
}

static void let_go(void) {
  pthread_mutex_lock(&m);
  release = 1;
  pthread_cond_broadcast(&c);
  pthread_mutex_unlock(&m);
}

static void* in_thread(void* arg) {
  (void)arg;
  printf("thread stack: %s\n", own_stack_holds_a_local());
  printf("kill self 0: %s\n", name(pthread_kill(pthread_self(), 0)));
  printf("kill self SIGUSR1: %s\n", name(pthread_kill(pthread_self(), SIGUSR1)));
  printf("handler ran: %d\n", got_signal == SIGUSR1);
  union sigval v = {0};
  printf("sigqueue self 0: %s\n", name(pthread_sigqueue(pthread_self(), 0, v)));
  return NULL;
}

static struct timespec in_ms(clockid_t clock, long ms) {
  struct timespec t;
  clock_gettime(clock, &t);
  t.tv_sec += ms / 1000;
  t.tv_nsec += (ms % 1000) * 1000000L;
  if (t.tv_nsec >= 1000000000L) t.tv_sec++, t.tv_nsec -= 1000000000L;
  return t;
}

int main(void) {
  signal(SIGUSR1, on_usr1);
  printf("main stack: %s\n", own_stack_holds_a_local());
  pthread_t t;
  pthread_create(&t, NULL, in_thread, NULL);
  pthread_join(t, NULL);

  /* A thread that runs until released. */
  void* r = NULL;
  pthread_create(&t, NULL, wait_for_release, (void*)42);
  printf("kill running 0: %s\n", name(pthread_kill(t, 0)));
  printf("kill bad signal: %s\n", name(pthread_kill(t, -1)));
  printf("tryjoin running: %s\n", name(pthread_tryjoin_np(t, &r)));
  struct timespec soon = in_ms(CLOCK_REALTIME, 30);
  printf("timedjoin running: %s\n", name(pthread_timedjoin_np(t, &r, &soon)));
  soon = in_ms(CLOCK_MONOTONIC, 30);
  printf("clockjoin running: %s\n", name(pthread_clockjoin_np(t, &r, CLOCK_MONOTONIC, &soon)));

  printf("setname: %s\n", name(pthread_setname_np(t, "worker-one")));
  char buf[32] = "";
  printf("getname: %s %s\n", name(pthread_getname_np(t, buf, sizeof buf)), buf);
  printf("setname too long: %s\n", name(pthread_setname_np(t, "a-name-of-sixteen")));
  printf("getname small buffer: %s\n", name(pthread_getname_np(t, buf, 4)));
  printf("setname self: %s\n", name(pthread_setname_np(pthread_self(), "main-thread")));
  pthread_getname_np(pthread_self(), buf, sizeof buf);
  printf("getname self: %s\n", buf);

  int policy = -1;
  struct sched_param sp;
  memset(&sp, 0xff, sizeof sp);
  printf("getschedparam: %s", name(pthread_getschedparam(t, &policy, &sp)));
  printf(" policy %s priority %d\n", policy == SCHED_OTHER ? "SCHED_OTHER" : "?", sp.sched_priority);
  sp.sched_priority = 0;
  printf("setschedparam other: %s\n", name(pthread_setschedparam(t, SCHED_OTHER, &sp)));
  printf("setschedprio 0: %s\n", name(pthread_setschedprio(t, 0)));

  cpu_set_t set;
  CPU_ZERO(&set);
  printf("getaffinity: %s", name(pthread_getaffinity_np(t, sizeof set, &set)));
  printf(" cpus %s\n", CPU_COUNT(&set) > 0 ? "some" : "none");
  printf("setaffinity to the same set: %s\n", name(pthread_setaffinity_np(t, sizeof set, &set)));

  let_go();
  struct timespec later = in_ms(CLOCK_MONOTONIC, 5000);
  printf("clockjoin ends: %s", name(pthread_clockjoin_np(t, &r, CLOCK_MONOTONIC, &later)));
  printf(" value %ld\n", (long)(intptr_t)r);

  pthread_create(&t, NULL, wait_for_release, (void*)7);
  int rc;
  while ((rc = pthread_tryjoin_np(t, &r)) == EBUSY) sched_yield();
  printf("tryjoin finished: %s value %ld\n", name(rc), (long)(intptr_t)r);

  pthread_create(&t, NULL, wait_for_release, (void*)8);
  later = in_ms(CLOCK_REALTIME, 5000);
  printf("timedjoin finished: %s", name(pthread_timedjoin_np(t, &r, &later)));
  printf(" value %ld\n", (long)(intptr_t)r);
  return 0;
}
