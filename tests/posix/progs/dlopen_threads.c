/* SPDX-License-Identifier: Apache-2.0 */
/* Threads that dlopen and dlclose a library whose constructor computes and
 * sleeps, while others walk the loaded objects with dl_iterate_phdr and a
 * callback that computes and sleeps: the loader runs that code holding its
 * own locks, owned by the OS thread. Under the preload a ULT there must not
 * be preempted or parked (another ULT on its worker would take the lock as
 * its owner; resumed elsewhere, it could not release it, and the next
 * dlopen hung: CPython importing extension modules from threads). Output
 * compared with NPTL's. DLOPEN_LIB is dlopen_ctor_lib.c's path. */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define LOADERS 3
#define WALKERS 1
#define ROUNDS 8

static volatile unsigned long spin;

static void compute_for_ms(long ms) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do {
    for (int i = 0; i < 1000; ++i) spin = spin + 1;
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
}

static void* load_and_unload(void* arg) {
  (void)arg;
  for (int r = 0; r < ROUNDS; ++r) {
    void* lib = dlopen(DLOPEN_LIB, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      fprintf(stderr, "dlopen: %s\n", dlerror());
      exit(1);
    }
    const int* runs = dlsym(lib, "ctor_runs");
    if (!runs || *runs < 1) {
      fprintf(stderr, "the constructor did not run\n");
      exit(1);
    }
    if (dlclose(lib) != 0) {
      fprintf(stderr, "dlclose: %s\n", dlerror());
      exit(1);
    }
  }
  return NULL;
}

static int visit(struct dl_phdr_info* info, size_t size, void* data) {
  (void)info, (void)size;
  if (++*(int*)data == 1) {  /* once per walk: compute, then sleep */
    compute_for_ms(12);
    struct timespec nap = {0, 1000000};
    nanosleep(&nap, 0);
  }
  return 0;
}

static void* walk(void* arg) {
  (void)arg;
  for (int r = 0; r < ROUNDS; ++r) {
    int seen = 0;
    dl_iterate_phdr(visit, &seen);
    if (seen < 2) {
      fprintf(stderr, "dl_iterate_phdr saw %d objects\n", seen);
      exit(1);
    }
  }
  return NULL;
}

int main(void) {
  pthread_t t[LOADERS + WALKERS];
  for (int i = 0; i < LOADERS; ++i) pthread_create(&t[i], NULL, load_and_unload, NULL);
  for (int i = 0; i < WALKERS; ++i) pthread_create(&t[LOADERS + i], NULL, walk, NULL);
  for (int i = 0; i < LOADERS + WALKERS; ++i) pthread_join(t[i], NULL);
  printf("%d threads loaded and unloaded the library %d times each; %d walked the objects\n",
         LOADERS, ROUNDS, WALKERS);
  return 0;
}
