/* SPDX-License-Identifier: Apache-2.0 */
/* What a pthread_once routine leaves in errno and the locale (uselocale) is
 * the caller's after pthread_once returns, as under NPTL: a lazy open that
 * fails inside the routine is reported by the caller's perror. A thread that
 * waits for another's run (the routine sleeps, so it parks meanwhile and may
 * come back on another worker) and a caller of a once already done keep
 * their own. Prints the same lines under NPTL and ito. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static sem_t started;
static int fd = -2;
static locale_t routine_locale;
static char runner_saw[128], waiter_saw[128];  /* printed by main, in order */

static void check(int ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "%s\n", what);
    exit(1);
  }
}

/* errno through calls: a call that switches may resume the thread on another
 * worker, and the compiler may keep __errno_location() (declared const) from
 * before it (docs/POSIX.md, "TLS and errno"). */
static __attribute__((noinline)) int get_errno(void) { return errno; }
static __attribute__((noinline)) void set_errno(int e) { errno = e; }

static const char* errno_name(int e) {
  switch (e) {
    case 0: return "0";
    case ENOENT: return "ENOENT";
    case ERANGE: return "ERANGE";
    case EAGAIN: return "EAGAIN";
    default: return strerror(e);
  }
}

/* Opens lazily and fails; installs a locale of its own. */
static void open_lazily(void) {
  sem_post(&started);
  usleep(50 * 1000);  /* a switch inside the routine */
  uselocale(routine_locale);
  fd = open("/nonexistent/ito-once-errno", O_RDONLY);
}

static void* run_it(void* arg) {
  (void)arg;
  set_errno(0);
  pthread_once(&once, open_lazily);
  const int e = get_errno();
  snprintf(runner_saw, sizeof runner_saw, "runner: fd %d, errno %s, locale %s", fd, errno_name(e),
         uselocale((locale_t)0) == routine_locale ? "the routine's" : "another");
  uselocale(LC_GLOBAL_LOCALE);
  return NULL;
}

static void* wait_for_it(void* arg) {
  (void)arg;
  while (sem_wait(&started) != 0) {}
  set_errno(ERANGE);
  pthread_once(&once, open_lazily);  /* parks until the runner's run ends */
  const int e = get_errno();
  snprintf(waiter_saw, sizeof waiter_saw, "waiter: errno %s, locale %s", errno_name(e),
         uselocale((locale_t)0) == LC_GLOBAL_LOCALE ? "global" : "another");
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  alarm(20);
  routine_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
  check(routine_locale != (locale_t)0, "newlocale");
  check(sem_init(&started, 0, 0) == 0, "sem_init");

  /* The main thread runs a routine itself, before any thread exists. */
  static pthread_once_t main_once = PTHREAD_ONCE_INIT;
  set_errno(0);
  pthread_once(&main_once, open_lazily);
  printf("main ran it: fd %d, errno %s, locale %s\n", fd, errno_name(get_errno()),
         uselocale((locale_t)0) == routine_locale ? "the routine's" : "another");
  uselocale(LC_GLOBAL_LOCALE);
  while (sem_trywait(&started) == 0) {}
  fd = -2;

  pthread_t runner, waiter;
  check(pthread_create(&waiter, NULL, wait_for_it, NULL) == 0, "create");
  check(pthread_create(&runner, NULL, run_it, NULL) == 0, "create");
  check(pthread_join(runner, NULL) == 0, "join");
  check(pthread_join(waiter, NULL) == 0, "join");
  printf("%s\n%s\n", runner_saw, waiter_saw);

  set_errno(EAGAIN);
  pthread_once(&once, open_lazily);  /* done: runs nothing */
  printf("main, once done: errno %s\n", errno_name(get_errno()));
  freelocale(routine_locale);
  return 0;
}
