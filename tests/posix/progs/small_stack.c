/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE 1
/* A thread that asks for PTHREAD_STACK_MIN gets that stack, as under NPTL
 * (docs/POSIX.md, "Stacks"): it can use half of it, and recursing past
 * all of it faults on the guard page, which kills the (forked) process.
 * Before, ito ran it on a 64 KiB pool stack and the recursion returned. */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* About 1 KiB of stack per call; returns a checksum of every frame. */
static __attribute__((noinline)) long deep(int depth) {
  volatile char frame[1024];
  memset((char*)frame, depth & 0x7F, sizeof frame);
  long below = depth > 0 ? deep(depth - 1) : 0;
  return below + frame[depth % sizeof frame];
}

static void* recurse(void* arg) { return (void*)deep((int)(long)arg); }

/* 0: the thread returned; 1: the process died of a signal. */
static int run_in_child(int kib) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN);
    pthread_t t;
    if (pthread_create(&t, &a, recurse, (void*)(long)kib) != 0) _exit(3);
    pthread_join(t, NULL);
    _exit(0);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  if (WIFSIGNALED(status)) return 1;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int main(void) {
  const int min_kib = PTHREAD_STACK_MIN / 1024;
  printf("half of PTHREAD_STACK_MIN: %s\n", run_in_child(min_kib / 2) == 0 ? "returned" : "?");
  printf("twice PTHREAD_STACK_MIN: %s\n",
         run_in_child(2 * min_kib) == 1 ? "killed by a signal" : "?");
  return 0;
}
