/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by tls_dlopen.c and tls_nss.c: a thread counts in a module's
 * __thread variable (through the module's bump and initial, which the
 * including program has found) across yields, sleeps and migrations, and
 * must read back only its own sum, having started from the module's initial
 * image (7). */
#include <sched.h>
#include <unistd.h>

static long (*bump)(long);
static int (*initial)(void);

/* 1 when the thread saw only its own counts. */
static long count_in_module(long id) {
  const int first = initial();
  long last = 0;
  for (int i = 0; i < 1000; ++i) {
    last = bump(id);
    if (i % 100 == 0) usleep(200);
    else if (i % 10 == 0) sched_yield();
  }
  return last == 1000 * id && first == 7;
}
