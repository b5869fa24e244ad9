/* SPDX-License-Identifier: Apache-2.0 */
/* Signals aimed at one thread (pthread_kill, pthread_sigqueue) and each
 * thread's own signal mask. Every handler records the thread it ran on; each
 * case prints what it saw, which must be NPTL's:
 *   1. a thread parked in sem_wait: the handler runs on it;
 *   2. a thread that computes (spins on a flag the handler sets, no calls):
 *      the handler runs on it (ito needs preemption for this at 1 worker);
 *   3. a thread parked in a condition wait, and one in a sleep: the handler
 *      runs on it while it waits;
 *   4. a thread that blocks the signal: it stays pending (sigpending shows
 *      it) until the thread unblocks it, and runs before pthread_sigmask
 *      returns;
 *   5. sigwait in a thread takes a signal aimed at it;
 *   6. sigsuspend in a thread returns -1/EINTR after its handler ran;
 *   7. a thread's mask survives many yields (migrations at 2 workers) while
 *      another thread changes its own;
 *   8. a new thread starts with its creator's mask;
 *   9. pthread_sigqueue's value reaches an SA_SIGINFO handler (SI_QUEUE);
 *  10. SA_RESETHAND: the handler runs once, then the default is back;
 *  11. nanosleep, clock_nanosleep and sleep end early with EINTR (or the
 *      seconds left) when a handler ran on the sleeping thread;
 *  12. a signal sent to the process (kill) that the main thread blocks runs
 *      its handler on the thread that leaves it open;
 *  13. one that every thread blocks stays pending for the process until a
 *      thread unblocks it: its handler runs on that thread, before its
 *      pthread_sigmask returns;
 *  14. a handler that calls pthread_exit ends the thread it ran on (parked
 *      in sem_wait), with that value.
 * An alarm ends a hang. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void check(int ok, const char* what) {
  if (!ok) {
    printf("FAILED: %s\n", what);
    fflush(stdout);
    exit(1);
  }
}

static volatile sig_atomic_t hits;
static volatile pthread_t ran_on;
static volatile int spin_stop;
static volatile int info_code, info_value;

static void on_usr1(int sig) {
  (void)sig;
  ran_on = pthread_self();
  hits = hits + 1;
  spin_stop = 1;
}

static void on_rt(int sig, siginfo_t* info, void* uc) {
  (void)sig, (void)uc;
  ran_on = pthread_self();
  info_code = info->si_code;
  info_value = info->si_value.sival_int;
  hits = hits + 1;
}

static void on_exit_request(int sig) {
  (void)sig;
  pthread_exit((void*)7);
}

static void install(int sig, void (*fn)(int), int flags) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fn;
  sa.sa_flags = flags;
  sigemptyset(&sa.sa_mask);
  check(sigaction(sig, &sa, NULL) == 0, "sigaction");
}

static void nap_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Waits (up to 10 s) until the handler has run `n` times in all. */
static int wait_hits(int n) {
  for (int i = 0; i < 10000 && hits < n; ++i) nap_ms(1);
  return hits >= n;
}

static void reset(void) {
  hits = 0;
  ran_on = 0;
}

static sem_t ready, go;

/* 1. Parked in sem_wait. */
static void* sem_waiter(void* arg) {
  (void)arg;
  sem_post(&ready);
  while (sem_wait(&go) != 0) {
  }
  return (void*)(long)(hits == 1 && pthread_equal(ran_on, pthread_self()));
}

/* 2. Computes. */
static volatile int spinning;
static void* spinner(void* arg) {
  (void)arg;
  spinning = 1;
  while (!spin_stop) {
  }
  return (void*)(long)pthread_equal(ran_on, pthread_self());
}

/* 3. Parked in a condition wait, then in a sleep. */
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int cond_done;
static void* cond_waiter(void* arg) {
  (void)arg;
  pthread_mutex_lock(&m);
  sem_post(&ready);
  while (!cond_done) pthread_cond_wait(&c, &m);
  pthread_mutex_unlock(&m);
  return NULL;
}
static volatile int sleep_done;
static void* sleeper(void* arg) {
  (void)arg;
  sem_post(&ready);
  while (!sleep_done) nap_ms(20);
  return NULL;
}

/* 4. Blocks it, sees it pending, unblocks it. */
static void* blocker(void* arg) {
  (void)arg;
  sigset_t one, pending;
  sigemptyset(&one);
  sigaddset(&one, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &one, NULL);
  sem_post(&ready);
  while (sem_wait(&go) != 0) {
  }
  sigpending(&pending);
  const int was_pending = sigismember(&pending, SIGUSR1) == 1;
  const int before = hits;
  pthread_sigmask(SIG_UNBLOCK, &one, NULL);
  const int after = hits;
  printf("4. pending while blocked: %d; handler before unblock: %d, after: %d, on it: %d\n",
         was_pending, before, after, pthread_equal(ran_on, pthread_self()));
  return NULL;
}

/* 5. sigwait. */
static void* sigwaiter(void* arg) {
  (void)arg;
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, SIGUSR2);
  sem_post(&ready);
  int sig = 0;
  const int e = sigwait(&one, &sig);
  printf("5. sigwait: %d, signal %s\n", e, sig == SIGUSR2 ? "SIGUSR2" : "other");
  return NULL;
}

/* 6. sigsuspend. */
static void* suspender(void* arg) {
  (void)arg;
  sigset_t one, none;
  sigemptyset(&one);
  sigaddset(&one, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &one, NULL);
  sigemptyset(&none);
  sem_post(&ready);
  const int r = sigsuspend(&none);
  const int e = errno;
  sigset_t now;
  pthread_sigmask(SIG_BLOCK, NULL, &now);
  printf("6. sigsuspend: %d %s, handler ran on it: %d, mask back: %d\n", r,
         e == EINTR ? "EINTR" : "?", hits == 1 && pthread_equal(ran_on, pthread_self()),
         sigismember(&now, SIGUSR1) == 1);
  return NULL;
}

/* 7. Masks across yields. */
static void* yielder(void* arg) {
  const int mine = (int)(long)arg;
  sigset_t set, now;
  sigemptyset(&set);
  sigaddset(&set, mine);
  pthread_sigmask(SIG_SETMASK, &set, NULL);
  int ok = 1;
  for (int i = 0; i < 2000; ++i) {
    sched_yield();
    pthread_sigmask(SIG_BLOCK, NULL, &now);
    for (int s = 1; s < 32; ++s)
      if (sigismember(&now, s) != sigismember(&set, s)) ok = 0;
  }
  return (void*)(long)ok;
}

/* 11. Sleeps cut short. */
static void* long_sleeps(void* arg) {
  (void)arg;
  struct timespec ts = {5, 0}, left = {0, 0};
  sem_post(&ready);
  int r = nanosleep(&ts, &left);
  printf("11. nanosleep: %d %s, time left: %d\n", r, r == -1 && errno == EINTR ? "EINTR" : "?",
         left.tv_sec > 0 || left.tv_nsec > 0);
  left.tv_sec = left.tv_nsec = 0;
  sem_post(&ready);
  r = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &left);
  printf("11. clock_nanosleep: %s, time left: %d\n", r == EINTR ? "EINTR" : "?",
         left.tv_sec > 0 || left.tv_nsec > 0);
  sem_post(&ready);
  const unsigned s = sleep(5);
  printf("11. sleep: seconds left %d\n", s > 0);
  return NULL;
}

/* 12 and 13. Process-directed, with the main thread blocking it. */
static void* opens_usr1(void* arg) {
  (void)arg;
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, SIGUSR1);
  pthread_sigmask(SIG_UNBLOCK, &one, NULL);
  sem_post(&ready);
  while (sem_wait(&go) != 0) {
  }
  return (void*)(long)(hits == 1 && pthread_equal(ran_on, pthread_self()));
}
static void* blocks_usr1_then_opens(void* arg) {
  (void)arg;
  sigset_t one, pending;
  sigemptyset(&one);
  sigaddset(&one, SIGUSR1);
  sem_post(&ready);
  while (sem_wait(&go) != 0) {
  }
  sigpending(&pending);
  const int was_pending = sigismember(&pending, SIGUSR1) == 1;
  const int before = hits;
  pthread_sigmask(SIG_UNBLOCK, &one, NULL);
  const int after = hits;
  printf("13. kill, every thread blocking: pending %d; handler before unblock: %d, after: %d, "
         "on it: %d\n", was_pending, before, after, pthread_equal(ran_on, pthread_self()));
  return NULL;
}

/* 8. Inheritance. */
static void* child_reads_mask(void* arg) {
  (void)arg;
  sigset_t now;
  pthread_sigmask(SIG_BLOCK, NULL, &now);
  printf("8. child: SIGUSR1 blocked %d, SIGUSR2 blocked %d, SIGHUP blocked %d\n",
         sigismember(&now, SIGUSR1) == 1, sigismember(&now, SIGUSR2) == 1,
         sigismember(&now, SIGHUP) == 1);
  return NULL;
}
static void* parent_blocks(void* arg) {
  (void)arg;
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &one, NULL);
  pthread_t t;
  pthread_create(&t, NULL, child_reads_mask, NULL);
  pthread_join(t, NULL);
  return NULL;
}

static pthread_t start(void* (*fn)(void*), void* arg) {
  pthread_t t;
  check(pthread_create(&t, NULL, fn, arg) == 0, "pthread_create");
  return t;
}

static long finish(pthread_t t) {
  void* r = NULL;
  check(pthread_join(t, &r) == 0, "pthread_join");
  return (long)r;
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  alarm(30);
  install(SIGUSR1, on_usr1, 0);
  /* The main thread blocks SIGUSR2 (for case 5's sigwait) before any thread:
   * every thread it makes starts with it blocked. */
  sigset_t usr2;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &usr2, NULL);
  sem_init(&ready, 0, 0);
  sem_init(&go, 0, 0);

  /* 1 */
  reset();
  pthread_t t = start(sem_waiter, NULL);
  sem_wait(&ready);
  check(pthread_kill(t, SIGUSR1) == 0, "pthread_kill 1");
  nap_ms(20);
  sem_post(&go);
  printf("1. parked in sem_wait: handler ran on it: %ld\n", finish(t));

  /* 2 */
  reset();
  spin_stop = 0;
  t = start(spinner, NULL);
  while (!spinning) nap_ms(1);
  check(pthread_kill(t, SIGUSR1) == 0, "pthread_kill 2");
  printf("2. computing: handler ran on it: %ld\n", finish(t));

  /* 3 */
  reset();
  t = start(cond_waiter, NULL);
  sem_wait(&ready);
  pthread_mutex_lock(&m);  /* it waits, the mutex released */
  pthread_mutex_unlock(&m);
  check(pthread_kill(t, SIGUSR1) == 0, "pthread_kill 3a");
  const int cond_hit = wait_hits(1);
  const int cond_on = pthread_equal(ran_on, t);
  pthread_mutex_lock(&m);
  cond_done = 1;
  pthread_cond_signal(&c);
  pthread_mutex_unlock(&m);
  finish(t);
  reset();
  t = start(sleeper, NULL);
  sem_wait(&ready);
  nap_ms(5);
  check(pthread_kill(t, SIGUSR1) == 0, "pthread_kill 3b");
  const int sleep_hit = wait_hits(1);
  const int sleep_on = pthread_equal(ran_on, t);
  sleep_done = 1;
  finish(t);
  printf("3. in a condition wait: handler ran %d, on it %d; in a sleep: ran %d, on it %d\n",
         cond_hit, cond_on, sleep_hit, sleep_on);

  /* 4 */
  reset();
  t = start(blocker, NULL);
  sem_wait(&ready);
  check(pthread_kill(t, SIGUSR1) == 0, "pthread_kill 4");
  nap_ms(20);
  sem_post(&go);
  finish(t);

  /* 5 */
  t = start(sigwaiter, NULL);
  sem_wait(&ready);
  nap_ms(5);
  check(pthread_kill(t, SIGUSR2) == 0, "pthread_kill 5");
  finish(t);

  /* 6 */
  reset();
  t = start(suspender, NULL);
  sem_wait(&ready);
  nap_ms(20);
  check(pthread_kill(t, SIGUSR1) == 0, "pthread_kill 6");
  finish(t);

  /* 7 */
  pthread_t y1 = start(yielder, (void*)(long)SIGHUP);
  pthread_t y2 = start(yielder, (void*)(long)SIGTERM);
  pthread_t y3 = start(yielder, (void*)(long)SIGINT);
  const long k1 = finish(y1), k2 = finish(y2), k3 = finish(y3);
  printf("7. masks kept across yields: %ld %ld %ld\n", k1, k2, k3);

  /* 8 */
  t = start(parent_blocks, NULL);
  finish(t);

  /* 9 */
  reset();
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_rt;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  check(sigaction(SIGRTMIN, &sa, NULL) == 0, "sigaction rt");
  t = start(sem_waiter, NULL);
  sem_wait(&ready);
  union sigval v;
  v.sival_int = 42;
  check(pthread_sigqueue(t, SIGRTMIN, v) == 0, "pthread_sigqueue");
  nap_ms(20);
  sem_post(&go);
  const long on9 = finish(t);
  printf("9. pthread_sigqueue: on it %ld, si_code %s, value %d\n", on9,
         info_code == SI_QUEUE ? "SI_QUEUE" : "other", info_value);

  /* 10 */
  reset();
  install(SIGUSR1, on_usr1, SA_RESETHAND);
  t = start(sem_waiter, NULL);
  sem_wait(&ready);
  check(pthread_kill(t, SIGUSR1) == 0, "pthread_kill 10");
  nap_ms(20);
  sem_post(&go);
  const long on10 = finish(t);
  struct sigaction now;
  sigaction(SIGUSR1, NULL, &now);
  printf("10. SA_RESETHAND: on it %ld, default again %d\n", on10, now.sa_handler == SIG_DFL);

  /* 11 */
  install(SIGUSR1, on_usr1, 0);
  t = start(long_sleeps, NULL);
  for (int i = 0; i < 3; ++i) {
    sem_wait(&ready);
    nap_ms(50);
    check(pthread_kill(t, SIGUSR1) == 0, "pthread_kill 11");
  }
  finish(t);

  /* 12 */
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &usr1, NULL);
  reset();
  t = start(opens_usr1, NULL);
  sem_wait(&ready);
  nap_ms(200);
  check(kill(getpid(), SIGUSR1) == 0, "kill 12");
  wait_hits(1);
  sem_post(&go);
  printf("12. kill, main blocking: handler ran on the thread that leaves it open: %ld\n",
         finish(t));

  /* 13 */
  reset();
  t = start(blocks_usr1_then_opens, NULL);
  sem_wait(&ready);
  check(kill(getpid(), SIGUSR1) == 0, "kill 13");
  nap_ms(300);
  sem_post(&go);
  finish(t);
  pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);

  /* 14 */
  install(SIGUSR1, on_exit_request, 0);
  t = start(sem_waiter, NULL);
  sem_wait(&ready);
  nap_ms(20);
  check(pthread_kill(t, SIGUSR1) == 0, "pthread_kill 14");
  printf("14. pthread_exit in a handler: the thread ended with %ld\n", finish(t));
  install(SIGUSR1, on_usr1, 0);

  /* sig 0: existence only. */
  printf("pthread_kill(self, 0): %d\n", pthread_kill(pthread_self(), 0));
  printf("done\n");
  return 0;
}
