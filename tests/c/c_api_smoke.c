/* SPDX-License-Identifier: Apache-2.0 */
/* A plain C11 program using ito.h end to end: options, create/join with
 * results, detach, yield, sleep, self, ito_exit, error codes, finalize. Exits
 * 0 when every check passes; prints the failed check otherwise. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>

#include "ito/ito.h"

static int failures = 0;
#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                     \
    }                                                                 \
  } while (0)

static void* fib(void* arg) {
  intptr_t n = (intptr_t)arg;
  if (n < 2) return arg;
  ito_ult_t child;
  if (ito_create(&child, fib, (void*)(n - 1)) != 0) abort();
  intptr_t b = (intptr_t)fib((void*)(n - 2));
  void* a = NULL;
  if (ito_join(child, &a) != 0) abort();
  return (void*)((intptr_t)a + b);
}

static void* leave_early(void* arg) {
  int depth = *(int*)arg;
  if (depth < 0) return NULL; /* never: only there so that the function can return */
  if (depth == 0) ito_exit((void*)(intptr_t)99);
  --*(int*)arg;
  return leave_early(arg); /* ito_exit unwinds through these plain C frames */
}

static _Atomic int detached_done = 0;
static void* yielder(void* arg) {
  for (int i = 0; i < 10; ++i) {
    if (i % 2) ito_yield();
    else ito_yield_to_head();
  }
  if (arg) ++detached_done;
  return arg;
}

static void* my_handle(void* arg) {
  (void)arg;
  return (void*)(uintptr_t)ito_self();
}

/* ito_parallel_invoke: fib with both calls as branches, and a wide list. */
struct fib_call {
  intptr_t n, result;
};
static void fib_branch(void* arg) {
  struct fib_call* c = arg;
  if (c->n < 2) {
    c->result = c->n;
    return;
  }
  struct fib_call a = {c->n - 1, 0}, b = {c->n - 2, 0};
  void (*const fns[])(void*) = {fib_branch, fib_branch};
  void* const args[] = {&a, &b};
  if (ito_parallel_invoke(2, fns, args) != 0) abort();
  c->result = a.result + b.result;
}

static _Atomic int calls_seen = 0;
static void count_call(void* arg) {
  calls_seen += arg ? *(int*)arg : 1;
}

static void exit_from_a_branch(void* arg) {
  (void)arg;
  ito_exit((void*)(intptr_t)77);
}
static void* invoke_then_exit(void* arg) {
  (void)arg;
  void (*const fns[])(void*) = {count_call, exit_from_a_branch, count_call};
  ito_parallel_invoke(3, fns, NULL);
  return NULL; /* never: ito_exit unwound past here */
}

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(void) {
  /* The library linked is the one compiled against. */
  CHECK(ito_version() == ITO_VERSION);
  CHECK(strcmp(ito_version_string(), ITO_VERSION_STRING) == 0);
  CHECK(ITO_VERSION == ITO_VERSION_MAJOR * 10000 + ITO_VERSION_MINOR * 100 + ITO_VERSION_PATCH);
  /* Before ito_init: ULT-only calls say EPERM. */
  ito_ult_t t = ITO_ULT_NULL;
  CHECK(ito_create(&t, fib, NULL) == EPERM);
  CHECK(ito_yield() == EPERM);
  CHECK(ito_finalize() == EPERM);
  void (*const two[])(void*) = {count_call, count_call};
  CHECK(ito_parallel_invoke(2, two, NULL) == EPERM);
  CHECK(calls_seen == 0);
  CHECK(ito_self() == ITO_ULT_NULL);
  CHECK(ito_workers() == 0);

  /* Bad options: EINVAL and a message, never an exit. */
  ito_options_t bad = ITO_OPTIONS_INIT;
  bad.workers = 5000;
  CHECK(ito_init(&bad) == EINVAL);

  ito_options_t opts = ITO_OPTIONS_INIT;
  opts.workers = 3;
  opts.stack_size = 128 * 1024;
  opts.bind = -1;
  CHECK(ito_init(&opts) == 0);
  CHECK(ito_init(&opts) == EBUSY);
  CHECK(ito_workers() == 3);
  CHECK(ito_self() != ITO_ULT_NULL);

  void* r = NULL;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  const intptr_t n = 15, fib_n = 610; /* sanitizers make every switch slow */
#else
  const intptr_t n = 20, fib_n = 6765;
#endif
  CHECK(ito_create(&t, fib, (void*)n) == 0);
  CHECK(ito_join(t, &r) == 0);
  CHECK((intptr_t)r == fib_n);
  CHECK(ito_join(t, &r) == ESRCH);

  int depth = 20;
  CHECK(ito_create(&t, leave_early, &depth) == 0);
  CHECK(ito_join(t, &r) == 0);
  CHECK((intptr_t)r == 99);
  CHECK(depth == 0);

  struct fib_call root = {n, 0};
  void (*const one[])(void*) = {fib_branch};
  void* const root_arg[] = {&root};
  CHECK(ito_parallel_invoke(1, one, root_arg) == 0);
  CHECK(root.result == fib_n);
  void (*wide[13])(void*);
  void* wide_args[13];
  int weights[13];
  for (int i = 0; i < 13; ++i) {
    wide[i] = count_call;
    weights[i] = 1 << i;
    wide_args[i] = &weights[i];
  }
  CHECK(ito_parallel_invoke(13, wide, wide_args) == 0);
  CHECK(calls_seen == (1 << 13) - 1); /* each call exactly once */
  CHECK(ito_parallel_invoke(0, two, NULL) == EINVAL);
  void (*const with_null[])(void*) = {count_call, NULL};
  CHECK(ito_parallel_invoke(2, with_null, NULL) == EINVAL);
  CHECK(calls_seen == (1 << 13) - 1); /* nothing called on EINVAL */
  CHECK(ito_create(&t, invoke_then_exit, NULL) == 0);
  CHECK(ito_join(t, &r) == 0);
  CHECK((intptr_t)r == 77);
  CHECK(calls_seen == (1 << 13) + 1); /* the other two branches ran */

  CHECK(ito_create(&t, my_handle, NULL) == 0);
  CHECK(ito_join(t, &r) == 0);
  CHECK((ito_ult_t)(uintptr_t)r == t);

  for (int i = 0; i < 100; ++i) {
    CHECK(ito_create_detached(yielder, (void*)1) == 0);
    CHECK(ito_create(&t, yielder, (void*)1) == 0);
    CHECK(ito_detach(t) == 0);
  }

  long long start = now_ns();
  CHECK(ito_sleep_ns(1000000) == 0);
  CHECK(now_ns() - start >= 1000000);
  CHECK(ito_join(ito_self(), NULL) == EDEADLK);

  CHECK(ito_finalize() == 0); /* waits for the detached ULTs */
  CHECK(detached_done == 200);
  CHECK(ito_workers() == 0);

  if (failures) {
    fprintf(stderr, "c_api_smoke: %d checks failed\n", failures);
    return 1;
  }
  puts("c_api_smoke: ok");
  return 0;
}
