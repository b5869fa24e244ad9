// SPDX-License-Identifier: Apache-2.0
// Dynamic TLS on threads with TLS blocks (ITO_ULT_TLS=1): a module with
// __thread variables is dlopen'ed after a thread has started and ended, and
// while another is running; each thread then counts in the module's
// variable across yields, sleeps and migrations and must read back only its
// own sum, and starts from the module's initial image. The thread that was
// running before the module existed uses it too (its DTV grows then).
// Built with TLS_DLOPEN_AFTER, for the preload without ITO_ULT_TLS: the
// counting threads are all created after the dlopen (those that exist then
// keep their worker's TLS under the preload, docs/POSIX.md); `early`, which
// adds 0 to its worker's copy, still runs across it. With DLOPEN_BY_NAME,
// the module is opened by its file name, found through the program's
// RUNPATH: the caller glibc sees must stay the program.
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include "tls_module_counting.h"
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t loaded = PTHREAD_COND_INITIALIZER;

static void wait_for_module(void) {
  pthread_mutex_lock(&lock);
  while (!bump) pthread_cond_wait(&loaded, &lock);
  pthread_mutex_unlock(&lock);
}

static void* counting(void* arg) {
  wait_for_module();
  return (void*)count_in_module((long)arg);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  pthread_t early, t[4];
  void* ok;
  // A thread that started and ended before the module existed.
  pthread_create(&early, NULL, counting, (void*)0);
  pthread_detach(early);
#ifndef TLS_DLOPEN_AFTER
  // One that is running (waiting) when the module arrives.
  pthread_create(&t[0], NULL, counting, (void*)1);
#endif
  usleep(10000);
#ifdef DLOPEN_BY_NAME
  void* h = dlopen(DLOPEN_BY_NAME, RTLD_NOW);
#else
  void* h = dlopen(DLOPEN_LIB, RTLD_NOW);
#endif
  if (!h) {
    printf("dlopen: %s\n", dlerror());
    return 1;
  }
  pthread_mutex_lock(&lock);
  initial = (int (*)(void))dlsym(h, "tls_dlopen_initial");
  bump = (long (*)(long))dlsym(h, "tls_dlopen_bump");
  pthread_cond_broadcast(&loaded);
  pthread_mutex_unlock(&lock);
#ifdef TLS_DLOPEN_AFTER
  pthread_create(&t[0], NULL, counting, (void*)1);
#endif
  for (long i = 1; i < 4; ++i) pthread_create(&t[i], NULL, counting, (void*)(i + 1));
  int good = 0;
  for (int i = 0; i < 4; ++i) {
    pthread_join(t[i], &ok);
    good += ok != NULL;
  }
  printf("%d of 4 threads kept their own count of the module's variable\n", good);
  printf("main's own: %ld\n", bump(0));
  return 0;
}
