/* SPDX-License-Identifier: Apache-2.0 */
/* gettid() tells threads apart, as under NPTL: the main thread's id is the
 * process id; threads alive together have distinct ids, and so do threads
 * made one after another (CPython's threading.get_native_id); the
 * syscall(SYS_gettid) form agrees; tgkill to another thread's id reaches
 * it. Run under the preload (source mode does not rename syscall()). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { live = 4, in_turn = 8 };

static pthread_barrier_t all_up;
static pid_t ids[live + in_turn];
static volatile sig_atomic_t signalled;

static void check(int ok, const char* what) {
  if (!ok) {
    printf("FAILED: %s\n", what);
    exit(1);
  }
}

static void on_usr1(int sig) {
  (void)sig;
  signalled = 1;
}

static void* record(void* arg) {
  const int i = (int)(long)arg;
  ids[i] = gettid();
  check(syscall(SYS_gettid) == ids[i], "syscall(SYS_gettid) is gettid()");
  if (i < live) pthread_barrier_wait(&all_up);  /* all alive at once */
  return NULL;
}

static void* wait_for_signal(void* arg) {
  pid_t* id = arg;
  *id = gettid();
  while (!signalled) usleep(1000);
  return NULL;
}

int main(void) {
  check(gettid() == getpid(), "the main thread's id is the process id");
  pthread_t t[live];
  pthread_barrier_init(&all_up, NULL, live);
  for (long i = 0; i < live; ++i) check(pthread_create(&t[i], NULL, record, (void*)i) == 0, "create");
  for (int i = 0; i < live; ++i) pthread_join(t[i], NULL);
  for (long i = live; i < live + in_turn; ++i) {  /* one after another: each ended before the next */
    pthread_t one;
    check(pthread_create(&one, NULL, record, (void*)i) == 0, "create");
    pthread_join(one, NULL);
  }
  int distinct = 1;
  for (int i = 0; i < live + in_turn; ++i) {
    check(ids[i] > 0 && ids[i] != getpid(), "a thread's id is its own");
    for (int j = 0; j < i; ++j) distinct &= ids[i] != ids[j];
  }
  printf("%d threads, %s ids\n", live + in_turn, distinct ? "distinct" : "repeated");

  signal(SIGUSR1, on_usr1);
  pid_t target = 0;
  pthread_t waiter;
  check(pthread_create(&waiter, NULL, wait_for_signal, &target) == 0, "create");
  while (!__atomic_load_n(&target, __ATOMIC_ACQUIRE)) usleep(1000);
  check(syscall(SYS_tgkill, getpid(), target, SIGUSR1) == 0, "tgkill to a thread's id");
  pthread_join(waiter, NULL);
  printf("tgkill to a thread's id reached it\n");
  check(syscall(SYS_tgkill, getpid(), 0x7ffffff0, SIGUSR1) == -1 && errno == ESRCH,
        "tgkill to no thread fails");
  printf("tgkill to an id no thread has: ESRCH\n");
  return 0;
}
