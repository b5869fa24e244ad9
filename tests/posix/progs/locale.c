/* SPDX-License-Identifier: Apache-2.0 */
/* glibc's per-thread state other than errno, per thread across switches.
 * Two threads each install a locale of their own with uselocale() (one
 * C.UTF-8, one C; plus a comma-decimal locale where one is installed) and
 * set h_errno, then wait on a barrier, sleep and yield, and check after
 * each step that they still see their own: MB_CUR_MAX, the codeset,
 * mbtowc of a two-byte character, printf's and strtod's decimal point.
 * A thread created by one that changed its locale starts in the global
 * locale, as a new NPTL thread does. With ITO_WORKERS=1 all of them share
 * one OS thread, whose glibc TLS holds the locale: each switch crosses it.
 * Prints one line per thread after the joins; exits 1 on any mismatch. */
#define _GNU_SOURCE 1
#include <langinfo.h>
#include <locale.h>
#include <netdb.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROUNDS 20

static pthread_barrier_t step;
static locale_t comma; /* a locale whose decimal point is ',' (or null) */

struct who {
  const char* name;
  locale_t loc; /* what it installs (null: none, the global locale) */
  size_t mb_max;
  const char* codeset;
  int mb_len;    /* mbtowc of "\xc3\xa9" (é) */
  char decimal;  /* printf's decimal point */
  int herr;      /* the h_errno it sets */
  int failures;
  char first_failure[160];
};

/* TSan cannot see a worker's TLS (h_errno) handed from one ULT to the next
 * on the same OS thread; the library's own carrying is exempt the same way. */
#if defined(__SANITIZE_THREAD__)
#define NO_TSAN __attribute__((no_sanitize("thread")))
#else
#define NO_TSAN
#endif

/* Writes go through a call too, for the same reason as check below. */
NO_TSAN __attribute__((noinline)) static void set_h_errno(int value) { h_errno = value; }

/* Not inlined: glibc declares __h_errno_location (and __errno_location)
 * const, so an optimised caller may keep the address it returned across a
 * call that blocks, and a ULT may come back from that call on another worker,
 * whose TLS is another address. Each check must ask afresh. */
NO_TSAN __attribute__((noinline)) static void check(struct who* w, const char* where) {
  char buf[32];
  wchar_t wc;
  const char* problem = NULL;
  if (MB_CUR_MAX != w->mb_max) problem = "MB_CUR_MAX";
  else if (strcmp(nl_langinfo(CODESET), w->codeset) != 0) problem = "CODESET";
  else if (mbtowc(NULL, NULL, 0), mbtowc(&wc, "\xc3\xa9", 2) != w->mb_len) problem = "mbtowc";
  else if (snprintf(buf, sizeof buf, "%.1f", 1.5), buf[1] != w->decimal) problem = "printf";
  else if (strtod(w->decimal == ',' ? "2,5" : "2.5", NULL) != 2.5) problem = "strtod";
  else if (h_errno != w->herr) problem = "h_errno";
  if (problem && w->failures++ == 0)
    snprintf(w->first_failure, sizeof w->first_failure, "%s wrong %s (MB_CUR_MAX %zu, codeset %s)",
             problem, where, (size_t)MB_CUR_MAX, nl_langinfo(CODESET));
}

NO_TSAN static void* fresh(void* arg) {
  struct who* w = arg;
  check(w, "at the start of a thread");
  return NULL;
}

NO_TSAN static void* run(void* arg) {
  struct who* w = arg;
  if (w->loc) uselocale(w->loc);
  set_h_errno(w->herr);
  check(w, "before any switch");
  for (int r = 0; r < ROUNDS; ++r) {
    pthread_barrier_wait(&step); /* the other one has installed its locale */
    check(w, "after a barrier");
    usleep(1000);
    check(w, "after usleep");
    sched_yield();
    check(w, "after sched_yield");
    struct timespec d = {0, 500000};
    nanosleep(&d, NULL);
    check(w, "after nanosleep");
  }
  /* A thread it creates starts in the global locale (the process's C). */
  struct who child = {"child", NULL, 1, "ANSI_X3.4-1968", -1, '.', 0, 0, ""};
  child.herr = 0;
  set_h_errno(0);
  pthread_t t;
  if (pthread_create(&t, NULL, fresh, &child) != 0 || pthread_join(t, NULL) != 0) {
    w->failures++;
  } else if (child.failures) {
    if (w->failures == 0)
      snprintf(w->first_failure, sizeof w->first_failure, "child: %.140s", child.first_failure);
    w->failures += child.failures;
  }
  set_h_errno(w->herr);
  check(w, "after creating a thread");
  return NULL;
}

int main(void) {
  locale_t utf8 = newlocale(LC_ALL_MASK, "C.UTF-8", (locale_t)0);
  locale_t c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
  if (!utf8 || !c) {
    printf("no C.UTF-8 locale\n");
    return 1;
  }
  const char* commas[] = {"de_DE.UTF-8", "fr_FR.UTF-8", "de_DE", "fr_FR", "ru_RU.UTF-8"};
  for (size_t i = 0; i < sizeof commas / sizeof *commas && !comma; ++i) {
    comma = newlocale(LC_NUMERIC_MASK, commas[i], utf8);
    if (comma && *nl_langinfo_l(RADIXCHAR, comma) != ',') {
      freelocale(comma);
      comma = NULL;
    }
  }
  if (comma) utf8 = comma; /* C.UTF-8 with a ',' decimal point */
  struct who ws[2] = {
      {"utf8", utf8, 6, "UTF-8", 2, comma ? ',' : '.', HOST_NOT_FOUND, 0, ""},
      {"c", c, 1, "ANSI_X3.4-1968", -1, '.', TRY_AGAIN, 0, ""},
  };
  pthread_barrier_init(&step, NULL, 2);
  pthread_t t[2];
  for (int i = 0; i < 2; ++i) pthread_create(&t[i], NULL, run, &ws[i]);
  for (int i = 0; i < 2; ++i) pthread_join(t[i], NULL);
  int failed = 0;
  for (int i = 0; i < 2; ++i) {
    printf("%s: %s\n", ws[i].name, ws[i].failures ? "WRONG" : "own locale and h_errno throughout");
    if (ws[i].failures) {
      fprintf(stderr, "%s: %d failures, first: %s\n", ws[i].name, ws[i].failures,
              ws[i].first_failure);
      failed = 1;
    }
  }
  /* The main thread never changed its own: the global locale. */
  struct who m = {"main", NULL, 1, "ANSI_X3.4-1968", -1, '.', 0, 0, ""};
  set_h_errno(0);
  check(&m, "in main after the joins");
  printf("main: %s\n", m.failures ? "WRONG" : "global locale");
  if (m.failures) {
    fprintf(stderr, "main: %s\n", m.first_failure);
    failed = 1;
  }
  pthread_barrier_destroy(&step);
  freelocale(utf8); /* the threads that used them have ended */
  freelocale(c);
  return failed;
}
