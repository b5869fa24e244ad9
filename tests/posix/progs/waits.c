/* SPDX-License-Identifier: Apache-2.0 */
/* Threads that wait in calls ito has no parking for: waitpid, select,
 * pselect, ppoll, epoll_wait. Each waiter waits for something only the main
 * thread can cause, and the main thread does it after the waiter has begun to
 * wait. Run with ITO_WORKERS=1: had a wait blocked the only worker, the main
 * thread could not run; the wait would end by its timeout (or the child's
 * alarm) instead, and the output would differ from NPTL's. */
#define _GNU_SOURCE 1
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int gate[2];  /* the main thread writes a byte here to end a wait */

static void check(int ok, const char* what) {
  if (!ok) {
    perror(what);
    exit(1);
  }
}

static void* wait_child(void* arg) {
  (void)arg;
  pid_t pid = fork();
  check(pid >= 0, "fork");
  if (pid == 0) {  /* exits once the main thread opens the gate */
    alarm(5);
    char c;
    _exit(read(gate[0], &c, 1) == 1 ? 7 : 1);
  }
  int status = 0;
  check(waitpid(pid, &status, 0) == pid, "waitpid");
  if (WIFEXITED(status)) printf("waitpid: child exited with %d\n", WEXITSTATUS(status));
  else printf("waitpid: child killed by signal %d\n", WTERMSIG(status));
  return NULL;
}

static void* wait_select(void* arg) {
  (void)arg;
  fd_set in;
  FD_ZERO(&in);
  FD_SET(gate[0], &in);
  struct timeval tv = {5, 0};
  printf("select: %d ready\n", select(gate[0] + 1, &in, NULL, NULL, &tv));
  return NULL;
}

static void* wait_pselect(void* arg) {
  (void)arg;
  fd_set in;
  FD_ZERO(&in);
  FD_SET(gate[0], &in);
  struct timespec ts = {5, 0};
  printf("pselect: %d ready\n", pselect(gate[0] + 1, &in, NULL, NULL, &ts, NULL));
  return NULL;
}

static void* wait_ppoll(void* arg) {
  (void)arg;
  struct pollfd p[2] = {{gate[0], POLLIN, 0}, {gate[0], POLLIN, 0}};
  struct timespec ts = {5, 0};
  printf("ppoll: %d ready\n", ppoll(p, 2, &ts, NULL));
  return NULL;
}

static void* wait_epoll(void* arg) {
  (void)arg;
  int ep = epoll_create1(0);
  check(ep >= 0, "epoll_create1");
  struct epoll_event ev = {.events = EPOLLIN};
  check(epoll_ctl(ep, EPOLL_CTL_ADD, gate[0], &ev) == 0, "epoll_ctl");
  struct epoll_event out;
  printf("epoll_wait: %d ready\n", epoll_wait(ep, &out, 1, 5000));
  close(ep);
  return NULL;
}

/* Starts waiter, lets it begin its wait, opens the gate, joins, drains. */
static void run(void* (*waiter)(void*)) {
  check(pipe(gate) == 0, "pipe");
  pthread_t t;
  check(pthread_create(&t, NULL, waiter, NULL) == 0, "pthread_create");
  usleep(100 * 1000);
  check(write(gate[1], "x", 1) == 1, "write");
  check(pthread_join(t, NULL) == 0, "pthread_join");
  fflush(stdout);
  close(gate[0]);
  close(gate[1]);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  run(wait_child);
  run(wait_select);
  run(wait_pselect);
  run(wait_ppoll);
  run(wait_epoll);
  return 0;
}
