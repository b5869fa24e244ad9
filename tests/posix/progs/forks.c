/* SPDX-License-Identifier: Apache-2.0 */
/* fork() from a thread while others run: the child has that one thread, and
 * may use every call again (pipes, sleeps, mutexes, new threads) before it
 * exits; a child whose only thread returns from its start routine ends with
 * status 0, also after it made and joined a thread of its own (CPython's
 * thread bootstrap returns so: test_3_join_in_forked_from_thread). Each child bounds itself with alarm(): a hang shows as a signal.
 * Prints the same lines under NPTL and ito. */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILD_THREADS 4
#define ROUNDS 1000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static volatile int stop_spinning;
static int report[2];  /* the child writes its count here */

static void check(int ok, const char* what) {
  if (!ok) {
    perror(what);
    exit(1);
  }
}

static void* spin(void* arg) {  /* keeps the parent's other workers busy */
  (void)arg;
  while (!stop_spinning) sched_yield();
  return NULL;
}

static void* add(void* arg) {
  (void)arg;
  for (int i = 0; i < ROUNDS; ++i) {
    pthread_mutex_lock(&lock);
    ++counter;
    pthread_mutex_unlock(&lock);
    if (i % 100 == 0) usleep(100);
  }
  return NULL;
}

/* The child: new threads, a mutex, a sleep, a pipe; exits with 3. */
static void child_main(void) {
  alarm(10);
  counter = 0;
  pthread_t t[CHILD_THREADS];
  for (int i = 0; i < CHILD_THREADS; ++i) check(pthread_create(&t[i], NULL, add, NULL) == 0, "create");
  for (int i = 0; i < CHILD_THREADS; ++i) check(pthread_join(t[i], NULL) == 0, "join");
  check(write(report[1], &counter, sizeof counter) == sizeof counter, "write");
  exit(3);
}

static void* nothing(void* arg) { return arg; }

/* What the forked child does: exit(3) after its threads (child_main), return
 * from the forking thread's start routine, or first make and join a thread. */
enum { child_exits, child_returns, child_joins_then_returns, child_kinds };

static void* fork_and_wait(void* arg) {
  const int kind = (int)(intptr_t)arg;
  const pthread_t self = pthread_self();
  pid_t pid = fork();
  check(pid >= 0, "fork");
  if (pid == 0) {
    /* The forking thread is the same thread in the child (CPython finds it
     * by its id there: test_main_thread_after_fork_from_nonmain_thread). */
    if (!pthread_equal(pthread_self(), self)) _exit(5);
    if (kind == child_exits) child_main();
    alarm(10);
    if (kind == child_joins_then_returns) {
      pthread_t t;
      check(pthread_create(&t, NULL, nothing, NULL) == 0, "create in child");
      check(pthread_join(t, NULL) == 0, "join in child");
    }
    return NULL; /* the only thread of the child ends: status 0 */
  }
  int status = 0;
  check(waitpid(pid, &status, 0) == pid, "waitpid");
  if (WIFEXITED(status)) printf("child exited with %d\n", WEXITSTATUS(status));
  else printf("child killed by signal %d\n", WTERMSIG(status));
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  check(pipe(report) == 0, "pipe");
  pthread_t spinner;
  check(pthread_create(&spinner, NULL, spin, NULL) == 0, "create");
  for (int kind = 0; kind < child_kinds; ++kind) {
    pthread_t t;
    check(pthread_create(&t, NULL, fork_and_wait, (void*)(intptr_t)kind) == 0, "create");
    check(pthread_join(t, NULL) == 0, "join");
  }
  long child_count = 0;
  check(read(report[0], &child_count, sizeof child_count) == sizeof child_count, "read");
  printf("the child counted %ld\n", child_count);
  stop_spinning = 1;
  check(pthread_join(spinner, NULL) == 0, "join");
  /* fork from the main thread too, and a child that only execs a program. */
  fflush(stdout);
  pid_t pid = fork();
  check(pid >= 0, "fork");
  if (pid == 0) {
    execlp("sh", "sh", "-c", "echo from the exec\\'d shell: $(echo nested)", (char*)NULL);
    _exit(127);
  }
  int status = 0;
  check(waitpid(pid, &status, 0) == pid, "waitpid");
  printf("exec child exited with %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}
