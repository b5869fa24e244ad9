/* SPDX-License-Identifier: Apache-2.0 */
/* ito from C (ito/ito.h): start the runtime, create ULTs, join them. Every
 * call returns 0 or a POSIX error code.
 *   ./hello_c */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <ito/ito.h>

static ito_mutex_t g_lock = ITO_MUTEX_INITIALIZER;
static long g_total = 0;

/* Sums 1..n into the shared total; returns its own part as the result. */
static void* sum_to(void* arg) {
  long n = (long)(intptr_t)arg, part = 0;
  for (long i = 1; i <= n; ++i) part += i;
  ito_mutex_lock(&g_lock);
  g_total += part;
  ito_mutex_unlock(&g_lock);
  return (void*)(intptr_t)part;
}

int main(void) {
  int e = ito_init(NULL); /* one worker per CPU, or ITO_WORKERS */
  if (e != 0) {
    fprintf(stderr, "ito_init: error %d\n", e);
    return 1;
  }
  enum { n = 100 };
  ito_ult_t ults[n];
  for (long i = 0; i < n; ++i) ito_create(&ults[i], sum_to, (void*)(intptr_t)(i * 1000));
  long joined = 0;
  for (int i = 0; i < n; ++i) {
    void* part = NULL;
    ito_join(ults[i], &part);
    joined += (long)(intptr_t)part;
  }
  ito_finalize();
  printf("%d ULTs on ito %s: total %ld, joined %ld: %s\n", n, ito_version_string(), g_total,
         joined, g_total == joined ? "same" : "DIFFERENT");
  return g_total == joined ? 0 : 1;
}
