/* SPDX-License-Identifier: Apache-2.0 */
/* pthread_exit from a signal handler on the main thread while it waits, as
 * LTP's pthread_spin_lock/3-1 does: the main thread relocks a spinlock it
 * holds (POSIX lets that spin forever), an alarm's handler calls
 * pthread_exit, and the process, whose only thread ended, exits with
 * status 0. Under ito the waiting main thread is often parked (the spinner
 * backs off into sleeps), so the handler runs on worker 0 while no thread
 * runs there at all. Run twice: in a forked child with the spinlock, then
 * in the parent waiting on a condition nobody signals (always parked). */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "handler: pthread_exit\n";
  write(1, msg, sizeof msg - 1);
  pthread_exit(NULL);
}

static void* nothing(void* arg) { return arg; }

static void arm(void) {
  struct sigaction act;
  memset(&act, 0, sizeof act);
  act.sa_handler = on_alarm;
  sigfillset(&act.sa_mask);
  sigaction(SIGALRM, &act, NULL);
  struct itimerval in_100ms = {{0, 0}, {0, 100000}};
  setitimer(ITIMER_REAL, &in_100ms, NULL);
}

static void spin_forever(void) {
  pthread_spinlock_t lock;
  pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE);
  pthread_spin_lock(&lock);
  printf("child: holds the spinlock, relocks it\n");
  fflush(stdout);
  arm();
  pthread_spin_lock(&lock); /* spins until the handler ends the thread */
  printf("child: relock returned\n");
  exit(3);
}

int main(void) {
  /* A thread first, so that the runtime runs and has a finished thread. */
  pthread_t t;
  if (pthread_create(&t, NULL, nothing, NULL) != 0 || pthread_join(t, NULL) != 0) return 2;
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return 2;
  if (pid == 0) spin_forever();
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return 2;
  printf("parent: child %s %d\n", WIFEXITED(status) ? "exited" : "killed by signal",
         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  fflush(stdout);

  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t c = PTHREAD_COND_INITIALIZER;
  pthread_mutex_lock(&m);
  printf("parent: waits on a condition nobody signals\n");
  fflush(stdout);
  arm();
  for (;;) pthread_cond_wait(&c, &m);
}
