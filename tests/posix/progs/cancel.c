/* SPDX-License-Identifier: Apache-2.0 */
/* Cancellation: at each kind of cancellation point (testcancel, a condition
 * wait, a semaphore wait, the sleeps, join), with cleanup handlers run
 * innermost first (a condition wait's with the mutex held again), the
 * joiner seeing PTHREAD_CANCELED, the disabled state holding a cancellation
 * back until enabled, asynchronous cancellation acting at once on itself
 * and in a mutex wait, a handler's own cancellation points not cancelling again, and the error
 * codes. Built as plain C, with -fexceptions and as C++ (cancel_cxx.cpp adds
 * a destructor that must run). The output is compared with NPTL's. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK(what)                                                    \
  do {                                                                 \
    if (!(what)) {                                                     \
      printf("FAILED line %d: %s\n", __LINE__, #what);                \
      exit(1);                                                         \
    }                                                                  \
  } while (0)

static char trail[256];
static pthread_mutex_t trail_lock = PTHREAD_MUTEX_INITIALIZER;

static void note(const char* s) {
  pthread_mutex_lock(&trail_lock);
  strncat(trail, s, sizeof trail - strlen(trail) - 1);
  pthread_mutex_unlock(&trail_lock);
}

static void note_handler(void* arg) { note((const char*)arg); }

static sem_t ready;
static sem_t asked; /* at_join's: the main thread has asked for the cancellation */

/* Starts `body`, waits until it says it is about to block, cancels it,
 * joins it and prints what its handlers left. */
static void cancel_one(const char* name, void* (*body)(void*)) {
  pthread_t t;
  trail[0] = '\0';
  CHECK(sem_init(&asked, 0, 0) == 0); /* no post left over from the cases before */
  CHECK(pthread_create(&t, NULL, body, NULL) == 0);
  CHECK(sem_wait(&ready) == 0);
  CHECK(pthread_cancel(t) == 0);
  CHECK(sem_post(&asked) == 0); /* for at_join; the others never wait for it */
  void* result = NULL;
  CHECK(pthread_join(t, &result) == 0);
  printf("%-18s %s, handlers: %s\n", name, result == PTHREAD_CANCELED ? "cancelled" : "NOT cancelled",
         trail);
}

/* As cancel_one, with the cancellation 20 ms after the thread says it is
 * about to block: most often it is blocked by then. */
static void cancel_one_later(const char* name, void* (*body)(void*)) {
  pthread_t t;
  trail[0] = '\0';
  CHECK(pthread_create(&t, NULL, body, NULL) == 0);
  CHECK(sem_wait(&ready) == 0);
  usleep(20000);
  CHECK(pthread_cancel(t) == 0);
  void* result = NULL;
  CHECK(pthread_join(t, &result) == 0);
  printf("%-18s %s, handlers: %s\n", name, result == PTHREAD_CANCELED ? "cancelled" : "NOT cancelled",
         trail);
}

/* Deferred: only pthread_testcancel stops a thread that computes. (It
 * yields too: from source, ULTs are not preempted, and the main thread
 * shares the first worker with it at ITO_WORKERS=1.) */
static volatile int spin;
static void* at_testcancel(void* arg) {
  (void)arg;
  pthread_cleanup_push(note_handler, (void*)"1 ");
  pthread_cleanup_push(note_handler, (void*)"2 ");
  sem_post(&ready);
  for (;;) {
    for (int i = 0; i < 1000; ++i) spin = spin + 1;
    pthread_testcancel();
    sched_yield();
  }
  pthread_cleanup_pop(0);
  pthread_cleanup_pop(0);
  return NULL;
}

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never_signalled = PTHREAD_COND_INITIALIZER;
static void unlock_m(void* arg) {
  (void)arg;
  /* The wait took the mutex back before the handlers ran. */
  note(pthread_mutex_unlock(&m) == 0 ? "unlocked " : "NOT-HELD ");
}
static void* at_cond_wait(void* arg) {
  (void)arg;
  pthread_mutex_lock(&m);
  pthread_cleanup_push(unlock_m, NULL);
  sem_post(&ready);
  for (;;) pthread_cond_wait(&never_signalled, &m);
  pthread_cleanup_pop(0);
  return NULL;
}

static void* at_cond_timedwait(void* arg) {
  (void)arg;
  pthread_mutex_lock(&m);
  pthread_cleanup_push(unlock_m, NULL);
  sem_post(&ready);
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_sec += 3600;
  for (;;) pthread_cond_timedwait(&never_signalled, &m, &t);
  pthread_cleanup_pop(0);
  return NULL;
}

static sem_t empty;
static void* at_sem_wait(void* arg) {
  (void)arg;
  pthread_cleanup_push(note_handler, (void*)"sem ");
  sem_post(&ready);
  for (;;) sem_wait(&empty);
  pthread_cleanup_pop(0);
  return NULL;
}

static void* at_sleep(void* arg) {
  (void)arg;
  pthread_cleanup_push(note_handler, (void*)"sleep ");
  sem_post(&ready);
  for (;;) sleep(3600);
  pthread_cleanup_pop(0);
  return NULL;
}

static void* at_nanosleep(void* arg) {
  (void)arg;
  pthread_cleanup_push(note_handler, (void*)"nanosleep ");
  sem_post(&ready);
  struct timespec hour = {3600, 0};
  for (;;) nanosleep(&hour, NULL);
  pthread_cleanup_pop(0);
  return NULL;
}

static void* at_clock_nanosleep(void* arg) {
  (void)arg;
  pthread_cleanup_push(note_handler, (void*)"clock_nanosleep ");
  sem_post(&ready);
  struct timespec hour = {3600, 0};
  for (;;) clock_nanosleep(CLOCK_MONOTONIC, 0, &hour, NULL);
  pthread_cleanup_pop(0);
  return NULL;
}

static void* at_usleep_and_poll(void* arg) {
  (void)arg;
  pthread_cleanup_push(note_handler, (void*)"usleep/poll ");
  sem_post(&ready);
  for (;;) {
    usleep(1000);
    poll(NULL, 0, 1);
  }
  pthread_cleanup_pop(0);
  return NULL;
}

static void* forever(void* arg) {
  (void)arg;
  for (;;) sleep(3600);
  return NULL;
}
/* Join is a cancellation point: a cancellation asked before it acts. */
/* The cancellation is asked before the thread reaches the join (it waits,
 * with cancellation disabled, until the main thread says so); in_join below
 * is a thread already blocked in a join. */
static void* at_join(void* arg) {
  (void)arg;
  pthread_t sleeper;
  int old;
  pthread_create(&sleeper, NULL, forever, NULL);
  pthread_cleanup_push(note_handler, (void*)"join ");
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
  sem_post(&ready);
  while (sem_wait(&asked) != 0) {
  }
  pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old); /* deferred: acts at the next point */
  pthread_join(sleeper, NULL);
  pthread_cleanup_pop(0);
  return NULL;
}

/* A thread already blocked in a join: the cancellation interrupts the join
 * (the main thread gives it time to get there; if it is late, the join's
 * start acts instead, with the same result). */
static void* in_join(void* arg) {
  (void)arg;
  pthread_t sleeper;
  pthread_create(&sleeper, NULL, forever, NULL);
  pthread_cleanup_push(note_handler, (void*)"blocked join ");
  sem_post(&ready);
  pthread_join(sleeper, NULL);
  pthread_cleanup_pop(0);
  return NULL;
}

/* A handler that sleeps: its own cancellation points go on. */
static void sleepy_handler(void* arg) {
  (void)arg;
  usleep(1000);
  pthread_testcancel();
  note("handler-slept ");
}
static void* handler_with_points(void* arg) {
  (void)arg;
  pthread_cleanup_push(sleepy_handler, NULL);
  sem_post(&ready);
  for (;;) sleep(3600);
  pthread_cleanup_pop(0);
  return NULL;
}

/* Disabled: the cancellation waits, through sleeps, until enabled. */
static sem_t cancelled_while_disabled;
static void* disabled_then_enabled(void* arg) {
  (void)arg;
  int old = -1;
  CHECK(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old) == 0);
  CHECK(old == PTHREAD_CANCEL_ENABLE);
  pthread_cleanup_push(note_handler, (void*)"enabled ");
  sem_post(&ready);
  CHECK(sem_wait(&cancelled_while_disabled) == 0);
  usleep(2000);
  pthread_testcancel();
  note("alive ");
  CHECK(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old) == 0);
  CHECK(old == PTHREAD_CANCEL_DISABLE);
  pthread_testcancel();
  note("NOT-REACHED ");
  pthread_cleanup_pop(0);
  return NULL;
}

/* I/O calls are cancellation points: a cancellation pending when write is
 * called acts before anything is written. */
static int pipe_fds[2];
static sem_t go;
static void* at_write(void* arg) {
  (void)arg;
  CHECK(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL) == 0);
  pthread_cleanup_push(note_handler, (void*)"write ");
  sem_post(&ready);
  CHECK(sem_wait(&go) == 0);
  CHECK(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL) == 0);
  CHECK(write(pipe_fds[1], "x", 1) == 1);
  note("NOT-REACHED ");
  pthread_cleanup_pop(0);
  return NULL;
}

/* Asynchronous: cancelling itself acts inside pthread_cancel. */
static void* async_self(void* arg) {
  (void)arg;
  int old = -1;
  CHECK(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old) == 0);
  CHECK(old == PTHREAD_CANCEL_DEFERRED);
  pthread_cleanup_push(note_handler, (void*)"async ");
  pthread_cancel(pthread_self());
  note("NOT-REACHED ");
  pthread_cleanup_pop(0);
  return NULL;
}

/* Asynchronous, blocked in a mutex (not a cancellation point): the
 * cancellation ends the wait. (Plain C only: with unwinding handlers (C++,
 * -fexceptions) NPTL's unwinding from inside the futex wait runs none of
 * them, where ito's runs them.) */
#if !defined(__cplusplus) && !defined(__EXCEPTIONS)
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static void* async_in_mutex(void* arg) {
  (void)arg;
  CHECK(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL) == 0);
  pthread_cleanup_push(note_handler, (void*)"mutex ");
  sem_post(&ready);
  pthread_mutex_lock(&held);
  note("NOT-REACHED ");
  pthread_cleanup_pop(0);
  return NULL;
}
#endif

#ifdef __cplusplus
#include "cancel_cxx_part.hpp"
#endif

int main(void) {
  CHECK(sem_init(&ready, 0, 0) == 0);
  CHECK(sem_init(&empty, 0, 0) == 0);
  CHECK(sem_init(&cancelled_while_disabled, 0, 0) == 0);
  setvbuf(stdout, NULL, _IOLBF, 0);

  CHECK(pthread_setcancelstate(7, NULL) == EINVAL);
  CHECK(pthread_setcanceltype(7, NULL) == EINVAL);

  cancel_one("testcancel", at_testcancel);
  cancel_one("cond_wait", at_cond_wait);
  cancel_one("cond_timedwait", at_cond_timedwait);
  cancel_one("sem_wait", at_sem_wait);
  cancel_one("sleep", at_sleep);
  cancel_one("nanosleep", at_nanosleep);
  cancel_one("clock_nanosleep", at_clock_nanosleep);
  cancel_one("usleep/poll", at_usleep_and_poll);
  cancel_one("join", at_join);
  cancel_one_later("blocked join", in_join);
  cancel_one("handler points", handler_with_points);

  {
    pthread_t t;
    void* result = NULL;
    trail[0] = '\0';
    CHECK(pthread_create(&t, NULL, disabled_then_enabled, NULL) == 0);
    CHECK(sem_wait(&ready) == 0);
    CHECK(pthread_cancel(t) == 0);
    CHECK(pthread_cancel(t) == 0); /* twice is fine */
    CHECK(sem_post(&cancelled_while_disabled) == 0);
    CHECK(pthread_join(t, &result) == 0);
    printf("%-18s %s, handlers: %s\n", "disabled, enabled",
           result == PTHREAD_CANCELED ? "cancelled" : "NOT cancelled", trail);
  }
  {
    pthread_t t;
    void* result = NULL;
    char c;
    trail[0] = '\0';
    CHECK(pipe(pipe_fds) == 0);
    CHECK(sem_init(&go, 0, 0) == 0);
    CHECK(pthread_create(&t, NULL, at_write, NULL) == 0);
    CHECK(sem_wait(&ready) == 0);
    CHECK(pthread_cancel(t) == 0);
    CHECK(sem_post(&go) == 0);
    CHECK(pthread_join(t, &result) == 0);
    CHECK(close(pipe_fds[1]) == 0);
    printf("%-18s %s, handlers: %s, pipe %s\n", "write", result == PTHREAD_CANCELED ? "cancelled" : "NOT cancelled",
           trail, read(pipe_fds[0], &c, 1) == 0 ? "empty" : "NOT empty");
    CHECK(close(pipe_fds[0]) == 0);
  }
  {
    pthread_t t;
    void* result = NULL;
    trail[0] = '\0';
    CHECK(pthread_create(&t, NULL, async_self, NULL) == 0);
    CHECK(pthread_join(t, &result) == 0);
    printf("%-18s %s, handlers: %s\n", "async self",
           result == PTHREAD_CANCELED ? "cancelled" : "NOT cancelled", trail);
  }
#if !defined(__cplusplus) && !defined(__EXCEPTIONS)
  CHECK(pthread_mutex_lock(&held) == 0);
  cancel_one("async in mutex", async_in_mutex);
  CHECK(pthread_mutex_unlock(&held) == 0);
#endif
#ifdef __cplusplus
  cxx_cases();
#endif
  /* The mutex every condition case left unlocked is free. */
  CHECK(pthread_mutex_trylock(&m) == 0);
  CHECK(pthread_mutex_unlock(&m) == 0);
  printf("done\n");
  return 0;
}
