/* SPDX-License-Identifier: Apache-2.0 */
/* pthread_once across fork(): the parent forks while one thread is inside the
 * routine and another waits for it. In the child, whose copy of the once
 * says "running" for a thread it does not have, the first call runs the
 * routine again (glibc's once word carries a fork generation for this), and
 * a caller of the child's own that waits for that run is woken by its end,
 * while the parent's waiter, copied into the child's wait queues, is not
 * woken there (it would run as a ghost: _exit(42)). Each process bounds
 * itself with alarm(): a hang shows as a signal. Prints the same lines under
 * NPTL and ito. */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static sem_t started, release, child_started;
static volatile int in_child;
static int runs;  /* of the routine, in this process */

static void check(int ok, const char* what) {
  if (!ok) {
    perror(what);
    exit(1);
  }
}

/* Announces itself, then holds the run open: in the parent until main lets
 * it go, in the child for a moment so that the child's main parks on it. */
static void routine(void) {
  ++runs;
  if (!in_child) {
    sem_post(&started);
    while (sem_wait(&release) != 0) {}
  } else {
    sem_post(&child_started);
    usleep(50 * 1000);
  }
}

/* arg: its creator's pid. One of the parent's threads that runs in the child
 * (woken there) ends it. */
static void* call_once(void* arg) {
  pthread_once(&once, routine);
  if ((pid_t)(intptr_t)arg != getpid()) _exit(42);
  return NULL;
}

static void child_main(void) {
  alarm(5);
  in_child = 1;
  const int inherited = runs;  /* 1: the parent's run, left unfinished */
  pthread_t t;
  check(pthread_create(&t, NULL, call_once, (void*)(intptr_t)getpid()) == 0, "create in child");
  while (sem_wait(&child_started) != 0) {}
  pthread_once(&once, routine);  /* waits for t's run */
  check(pthread_join(t, NULL) == 0, "join in child");
  pthread_once(&once, routine);  /* done: runs nothing */
  _exit(runs == inherited + 1 ? 0 : 3);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  alarm(20);
  check(sem_init(&started, 0, 0) == 0 && sem_init(&release, 0, 0) == 0 &&
            sem_init(&child_started, 0, 0) == 0,
        "sem_init");
  pthread_t runner, waiter;
  check(pthread_create(&runner, NULL, call_once, (void*)(intptr_t)getpid()) == 0, "create");
  while (sem_wait(&started) != 0) {}
  check(pthread_create(&waiter, NULL, call_once, (void*)(intptr_t)getpid()) == 0, "create");
  usleep(50 * 1000);  /* lets the waiter park on the once (not required) */

  fflush(stdout);
  pid_t pid = fork();
  check(pid >= 0, "fork");
  if (pid == 0) child_main();

  sem_post(&release);
  check(pthread_join(runner, NULL) == 0 && pthread_join(waiter, NULL) == 0, "join");
  int status = 0;
  check(waitpid(pid, &status, 0) == pid, "waitpid");
  if (WIFEXITED(status)) printf("child exited with %d\n", WEXITSTATUS(status));
  else printf("child killed by signal %d\n", WTERMSIG(status));
  printf("the parent ran the routine %d time(s)\n", runs);
  return 0;
}
