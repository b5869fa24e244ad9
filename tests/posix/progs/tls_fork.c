/* SPDX-License-Identifier: Apache-2.0 */
/* fork() from threads that have __thread variables (ITO_ULT_TLS=1: each
 * thread runs on a TLS block of its own). A thread that is not the main one
 * forks while others count in their own variables; the child, whose only
 * thread is that one, still sees that thread's values, creates threads of
 * its own (each with fresh variables and a return value joined back), asks
 * sched_getcpu, and forks twice more: once from one of its threads, once
 * from its own thread. The grandchildren do the same once more.
 *
 * What each fork needs from glibc's view of the forking thread: its TCB on
 * glibc's thread lists (the fork's child takes it off one, and in the child
 * it is the TCB of the process's only thread, which a grandchild forked from
 * another thread must not take for a dead thread's cached stack: each
 * grandchild frees glibc's stack cache with __libc_freeres before it exits,
 * as valgrind has it do), and the kernel's rseq registration, which the child
 * inherits: it must be the child thread's own area (rseq_here() asks the
 * kernel), or the kernel writes the CPU number into a dead thread's TCB that
 * glibc may reuse or unmap.
 *
 * Each child bounds itself with alarm(); each process prints only while its
 * parent waits for it, so the output is the same under NPTL and ito. Run from
 * source and under the preload, at 1 and 2 workers (tests/posix/CMakeLists.txt). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define SPINNERS 2
#define CHILD_THREADS 3
#define ROUNDS 100

static __thread long counter;        /* .tbss: 0 in every new thread */
static __thread long seeded = 1000;  /* .tdata: 1000 in every new thread */
static __thread char name[16];

static volatile int stop_spinning;

void __libc_freeres(void); /* glibc: frees what it keeps, its cached thread stacks too */

static void check(int ok, const char* what) {
  if (!ok) {
    perror(what);
    exit(1);
  }
}

/* What the kernel's rseq registration of the calling OS thread is: glibc's
 * area of this thread ("here"), or another (a rseq call that registers the
 * same area again fails with EBUSY, another area with EINVAL). */
static const char* rseq_here(void) {
  if (__rseq_size == 0) return "here"; /* glibc registers none: nothing to inherit */
  char* tp;
  __asm__("mov %%fs:0, %0" : "=r"(tp));
  const unsigned len = __rseq_size < 32 ? 32 : __rseq_size;
  if (syscall(SYS_rseq, tp + __rseq_offset, len, 0, RSEQ_SIG) == 0) return "NONE (registered now)";
  return errno == EBUSY ? "here" : "ELSEWHERE";
}

static void report_cpu(const char* who) {
  const int cpu = sched_getcpu();
  printf("%s: sched_getcpu %s, rseq registration %s\n", who,
         cpu >= 0 && cpu < CPU_SETSIZE ? "ok" : "FAILED", rseq_here());
}

/* A thread that counts in its own variables across switches; its return
 * value is what it counted (joined back and checked). */
static void* count(void* arg) {
  const long id = (long)(intptr_t)arg;
  snprintf(name, sizeof name, "count-%ld", id);
  for (int i = 0; i < ROUNDS; ++i) {
    ++counter;
    seeded += id;
    if (i % 2) sched_yield();
    else usleep(10);
  }
  char want[16];
  snprintf(want, sizeof want, "count-%ld", id);
  return (void*)(intptr_t)(strcmp(name, want) == 0 ? counter * 100000 + seeded : -1);
}

/* Makes CHILD_THREADS counting threads and joins them: each must return its
 * own count (ROUNDS) and seed (1000 + ROUNDS * id). */
static void run_counters(const char* who) {
  pthread_t t[CHILD_THREADS];
  for (long i = 0; i < CHILD_THREADS; ++i)
    check(pthread_create(&t[i], NULL, count, (void*)(intptr_t)(i + 1)) == 0, "create");
  int good = 0;
  for (long i = 0; i < CHILD_THREADS; ++i) {
    void* value = NULL;
    check(pthread_join(t[i], &value) == 0, "join");
    good += (intptr_t)value == ROUNDS * 100000 + 1000 + ROUNDS * (i + 1);
  }
  printf("%s: %d of %d threads returned their own counts\n", who, good, CHILD_THREADS);
}

static void wait_for(pid_t pid, const char* who) {
  int status = 0;
  check(waitpid(pid, &status, 0) == pid, "waitpid");
  if (WIFEXITED(status)) printf("%s exited with %d\n", who, WEXITSTATUS(status));
  else printf("%s killed by signal %d\n", who, WTERMSIG(status));
}

/* The calling thread's variables: those it had when it forked, in a child. */
static void report_variables(const char* who, long want_counter, const char* want_name) {
  printf("%s: counter %ld (%s), seeded %ld, name %s\n", who, counter,
         counter == want_counter ? "kept" : "WRONG", seeded,
         strcmp(name, want_name) == 0 ? "kept" : "WRONG");
}

/* A grandchild: its thread's variables, threads of its own, exit 4. */
static void grandchild(const char* who, long want_counter, const char* want_name) {
  alarm(20);
  report_variables(who, want_counter, want_name);
  report_cpu(who);
  run_counters(who);
  report_cpu(who);
  fflush(stdout);
  __libc_freeres(); /* stdio's buffers too: _exit, not exit */
  _exit(4);
}

/* A thread of the child that forks (a grandchild from a thread the child made). */
static void* fork_in_child_thread(void* arg) {
  (void)arg;
  counter = 7;
  snprintf(name, sizeof name, "child-thread");
  fflush(stdout);
  const pid_t pid = fork();
  check(pid >= 0, "fork in a child's thread");
  if (pid == 0) grandchild("grandchild of a child's thread", 7, "child-thread");
  wait_for(pid, "grandchild of a child's thread");
  return (void*)(intptr_t)counter;
}

/* The child: its only thread is the one that forked in the parent. */
static void child(const pthread_t self) {
  alarm(30);
  printf("child: pthread_self %s\n", pthread_equal(pthread_self(), self) ? "the same" : "DIFFERENT");
  report_variables("child", 42, "forker");
  report_cpu("child");
  run_counters("child");
  report_cpu("child");
  /* A grandchild from a thread the child made. */
  pthread_t t;
  void* value = NULL;
  check(pthread_create(&t, NULL, fork_in_child_thread, NULL) == 0, "create in child");
  check(pthread_join(t, &value) == 0, "join in child");
  printf("child: the forking thread returned %ld\n", (long)(intptr_t)value);
  /* A grandchild from the child's own thread. */
  counter = 43;
  fflush(stdout);
  const pid_t pid = fork();
  check(pid >= 0, "fork in child");
  if (pid == 0) grandchild("grandchild of the child", 43, "forker");
  wait_for(pid, "grandchild of the child");
  report_variables("child", 43, "forker");
  exit(3);
}

static void* spin(void* arg) { /* counts in its own variables until stopped */
  (void)arg;
  long mine = 0;
  while (!stop_spinning) {
    ++counter;
    ++mine;
    sched_yield();
  }
  return (void*)(intptr_t)(counter == mine && seeded == 1000);
}

static void* forker(void* arg) {
  (void)arg;
  counter = 42;
  snprintf(name, sizeof name, "forker");
  const pthread_t self = pthread_self();
  fflush(stdout);
  const pid_t pid = fork();
  check(pid >= 0, "fork");
  if (pid == 0) child(self);
  wait_for(pid, "child");
  report_variables("parent's forking thread", 42, "forker");
  return (void*)(intptr_t)counter;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  counter = -1;
  snprintf(name, sizeof name, "main");
  pthread_t spinners[SPINNERS];
  for (int i = 0; i < SPINNERS; ++i) check(pthread_create(&spinners[i], NULL, spin, NULL) == 0, "create");
  for (int round = 0; round < 2; ++round) {
    pthread_t t;
    void* value = NULL;
    check(pthread_create(&t, NULL, forker, NULL) == 0, "create");
    check(pthread_join(t, &value) == 0, "join");
    printf("parent: the forking thread returned %ld\n", (long)(intptr_t)value);
  }
  stop_spinning = 1;
  int kept = 0;
  for (int i = 0; i < SPINNERS; ++i) {
    void* value = NULL;
    check(pthread_join(spinners[i], &value) == 0, "join");
    kept += value != NULL;
  }
  printf("parent: %d of %d spinners kept their variables\n", kept, SPINNERS);
  run_counters("parent");
  report_variables("parent's main", -1, "main");
  return 0;
}
