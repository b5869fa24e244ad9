/* SPDX-License-Identifier: Apache-2.0 */
/* The signal patterns threaded programs use, each bounded by an alarm:
 *  - a thread in sigwait for signals every thread blocks (pbzip2), woken by
 *    pthread_kill from main;
 *  - main in sigsuspend until a thread signals it (lbzip2);
 *  - main in pselect with SIGCHLD blocked except during the wait (make);
 *  - a thread that raises a signal on itself: the handler runs before raise
 *    returns;
 *  - pthread_sigmask reads back what a thread set.
 * Under ito, a signal delivered to a worker that is not the waiter's, or a
 * wait that blocks the only worker, shows as a hang (the alarm) or a changed
 * line. Prints the same lines under NPTL and ito. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t got_usr2, got_chld, got_usr1_in_raise;
static pthread_t main_thread;

static void check(int ok, const char* what) {
  if (!ok) {
    perror(what);
    exit(1);
  }
}

static void on_usr2(int sig) { (void)sig; got_usr2 = 1; }
static void on_chld(int sig) { (void)sig; got_chld = 1; }
static void on_usr1(int sig) { (void)sig; got_usr1_in_raise = 1; }

static void* sigwaiter(void* arg) {
  const sigset_t* set = arg;
  int sig = 0;
  check(sigwait(set, &sig) == 0, "sigwait");
  printf("sigwait: got %s\n", sig == SIGTERM ? "SIGTERM" : "another signal");
  return NULL;
}

static void* signal_main_later(void* arg) {
  (void)arg;
  usleep(50 * 1000);
  check(pthread_kill(main_thread, SIGUSR2) == 0, "pthread_kill");
  return NULL;
}

static void* raiser(void* arg) {
  (void)arg;
  got_usr1_in_raise = 0;
  check(raise(SIGUSR1) == 0, "raise");
  printf("raise: handler ran before raise returned: %s\n", got_usr1_in_raise ? "yes" : "no");
  sigset_t block, now;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  check(pthread_sigmask(SIG_BLOCK, &block, NULL) == 0, "pthread_sigmask");
  check(pthread_sigmask(SIG_BLOCK, NULL, &now) == 0, "pthread_sigmask");
  printf("pthread_sigmask: SIGUSR1 blocked: %s\n", sigismember(&now, SIGUSR1) ? "yes" : "no");
  check(pthread_sigmask(SIG_UNBLOCK, &block, NULL) == 0, "pthread_sigmask");
  check(pthread_sigmask(SIG_BLOCK, NULL, &now) == 0, "pthread_sigmask");
  printf("pthread_sigmask: SIGUSR1 blocked after unblock: %s\n",
         sigismember(&now, SIGUSR1) ? "yes" : "no");
  printf("pthread_sigmask: bad how gives EINVAL: %s\n",
         pthread_sigmask(12345, &block, NULL) == EINVAL ? "yes" : "no");
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  alarm(20);
  main_thread = pthread_self();
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr2;
  sigaction(SIGUSR2, &sa, NULL);
  sa.sa_handler = on_chld;
  sigaction(SIGCHLD, &sa, NULL);
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, NULL);

  /* Every thread blocks these from here on, as the programs do at start. */
  sigset_t blocked, old;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGTERM);
  sigaddset(&blocked, SIGUSR2);
  sigaddset(&blocked, SIGCHLD);
  check(pthread_sigmask(SIG_BLOCK, &blocked, &old) == 0, "pthread_sigmask");

  /* sigwait in a thread, signalled from main. */
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_t waiter;
  check(pthread_create(&waiter, NULL, sigwaiter, &term) == 0, "pthread_create");
  usleep(50 * 1000);
  check(pthread_kill(waiter, SIGTERM) == 0, "pthread_kill");
  check(pthread_join(waiter, NULL) == 0, "pthread_join");

  /* main in sigsuspend until a thread signals it. */
  pthread_t signaller;
  check(pthread_create(&signaller, NULL, signal_main_later, NULL) == 0, "pthread_create");
  sigset_t wait_mask = old;  /* SIGUSR2 unblocked while suspended */
  while (!got_usr2) sigsuspend(&wait_mask);
  printf("sigsuspend: woken by SIGUSR2\n");
  check(pthread_join(signaller, NULL) == 0, "pthread_join");

  /* pselect that only SIGCHLD can end. */
  int quiet[2];
  check(pipe(quiet) == 0, "pipe");
  pid_t pid = fork();
  check(pid >= 0, "fork");
  if (pid == 0) {
    usleep(50 * 1000);
    _exit(0);
  }
  fd_set in;
  int r = 0;
  while (!got_chld) {
    FD_ZERO(&in);
    FD_SET(quiet[0], &in);
    r = pselect(quiet[0] + 1, &in, NULL, NULL, NULL, &wait_mask);
  }
  printf("pselect: %s\n", r == -1 && errno == EINTR ? "interrupted by SIGCHLD" : "ended otherwise");
  check(waitpid(pid, NULL, 0) == pid, "waitpid");

  /* A thread that raises a signal on itself; masks read back. */
  pthread_t t;
  check(pthread_create(&t, NULL, raiser, NULL) == 0, "pthread_create");
  check(pthread_join(t, NULL) == 0, "pthread_join");
  return 0;
}
