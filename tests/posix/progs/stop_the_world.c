/* SPDX-License-Identifier: Apache-2.0 */
// A garbage collector's stop-the-world, as Boehm GC does it: the collector
// sends each thread a "suspend" signal whose handler acknowledges through a
// semaphore and waits in sigsuspend for a "restart" signal. Every thread
// must take the handler wherever it waits: the main thread in sem_wait with
// cancellation disabled (GC_pthread_create waits so for its child), the main
// thread in a mutex wait, a thread in a condition wait, a thread in pause,
// a thread waiting to write-lock a reader-writer lock, a thread waiting at a
// barrier (which, its handler done, waits on still counted: the collector's
// arrival must release it, and exactly one of the two is the serial thread).
// A handler that interrupts sem_wait makes it fail with EINTR (NPTL's never
// restarts it), and nothing else may.
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

enum { rounds = 20 };

static sem_t never, ack;
static pthread_t main_thread, pauser, cond_waiter;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static sem_t writer_ready;
static pthread_barrier_t bar;
static pthread_t bar_waiter;
static int waiter_serial;
static int cond_done;
static volatile sig_atomic_t restarted;
static volatile sig_atomic_t suspends;

static void on_restart(int sig) {
  (void)sig;
  restarted = 1;
}

static void on_suspend(int sig) {
  (void)sig;
  const int saved = errno;
  sigset_t wait_mask;
  sigfillset(&wait_mask);
  sigdelset(&wait_mask, SIGXCPU);
  restarted = 0;
  ++suspends;
  sem_post(&ack);
  while (!restarted) sigsuspend(&wait_mask);
  sem_post(&ack);
  errno = saved;
}

static void wait_ack(const char* what, const char* where, int round) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += 30;
  while (sem_timedwait(&ack, &ts) != 0) {
    if (errno == EINTR) continue;
    printf("%s: no %s ack in round %d\n", where, what, round);
    exit(1);
  }
}

static void stop_and_start(pthread_t t, const char* where) {
  for (int i = 0; i < rounds; ++i) {
    if (pthread_kill(t, SIGPWR) != 0) abort();
    wait_ack("suspend", where, i);
    if (pthread_kill(t, SIGXCPU) != 0) abort();
    wait_ack("restart", where, i);
  }
  printf("%s: %d stops\n", where, rounds);
}

static void* pause_forever(void* arg) {
  (void)arg;
  for (;;) pause();
  return NULL;
}

static void* wait_on_cond(void* arg) {
  (void)arg;
  int old;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
  pthread_mutex_lock(&cm);
  while (!cond_done) pthread_cond_wait(&cv, &cm);
  pthread_mutex_unlock(&cm);
  return NULL;
}

static void* write_lock(void* arg) {
  (void)arg;
  sem_post(&writer_ready);
  pthread_rwlock_wrlock(&rw);
  pthread_rwlock_unlock(&rw);
  return NULL;
}

static void* wait_at_barrier(void* arg) {
  (void)arg;
  const int r = pthread_barrier_wait(&bar);
  if (r != 0 && r != PTHREAD_BARRIER_SERIAL_THREAD) abort();
  waiter_serial = r == PTHREAD_BARRIER_SERIAL_THREAD;
  return NULL;
}

static void* collector(void* arg) {
  (void)arg;
  usleep(20000);
  stop_and_start(main_thread, "main in sem_wait, cancellation disabled");
  pthread_mutex_lock(&m);
  sem_post(&never);
  usleep(20000);
  stop_and_start(main_thread, "main in pthread_mutex_lock");
  pthread_mutex_unlock(&m);
  stop_and_start(pauser, "a thread in pause");
  stop_and_start(cond_waiter, "a thread in pthread_cond_wait, cancellation disabled");
  pthread_t writer;
  pthread_rwlock_rdlock(&rw);
  pthread_create(&writer, NULL, write_lock, NULL);
  while (sem_wait(&writer_ready) != 0) {
  }
  usleep(20000);
  stop_and_start(writer, "a thread in pthread_rwlock_wrlock");
  pthread_rwlock_unlock(&rw);
  pthread_join(writer, NULL);
  usleep(20000);
  stop_and_start(bar_waiter, "a thread in pthread_barrier_wait");
  const int r = pthread_barrier_wait(&bar);
  if (r != 0 && r != PTHREAD_BARRIER_SERIAL_THREAD) abort();
  pthread_join(bar_waiter, NULL);
  printf("barrier: %d serial thread\n", (r == PTHREAD_BARRIER_SERIAL_THREAD) + waiter_serial);
  pthread_mutex_lock(&cm);
  cond_done = 1;
  pthread_cond_signal(&cv);
  pthread_mutex_unlock(&cm);
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  struct sigaction sa = {0};
  sigfillset(&sa.sa_mask);
  sa.sa_handler = on_suspend;
  sigaction(SIGPWR, &sa, NULL);
  sigemptyset(&sa.sa_mask);
  sa.sa_handler = on_restart;
  sigaction(SIGXCPU, &sa, NULL);
  sem_init(&never, 0, 0);
  sem_init(&ack, 0, 0);
  sem_init(&writer_ready, 0, 0);
  pthread_barrier_init(&bar, NULL, 2);
  main_thread = pthread_self();
  pthread_create(&pauser, NULL, pause_forever, NULL);
  pthread_create(&cond_waiter, NULL, wait_on_cond, NULL);
  pthread_create(&bar_waiter, NULL, wait_at_barrier, NULL);
  pthread_t c;
  pthread_create(&c, NULL, collector, NULL);

  int old;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
  // A suspend that comes while it waits ends the wait with EINTR; one that
  // comes between two waits does not: how many is not fixed.
  while (sem_wait(&never) != 0)
    if (errno != EINTR) abort();
  pthread_setcancelstate(old, NULL);
  pthread_mutex_lock(&m);
  pthread_mutex_unlock(&m);
  pthread_join(c, NULL);
  pthread_join(cond_waiter, NULL);
  printf("suspend handlers run: %d\n", (int)suspends);
  return 0;
}
