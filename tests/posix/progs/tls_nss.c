// SPDX-License-Identifier: Apache-2.0
// A program without TLS of its own that makes glibc load an NSS module with
// __thread variables (getpwnam, tls_nss_lib.c), as getpwnam loads
// libnss_systemd where nsswitch.conf names it: glibc loads it with its own
// internal dlopen, which the preload's dlopen never sees. The threads
// created after it count in the module's variable across yields, sleeps
// and migrations and must each read back only their own sum, from the
// module's initial image; under the preload they need TLS blocks of their
// own (docs/POSIX.md, "TLS that arrives later").
// Built with TLS_NSS_ITO_CREATE, for the preload only: the counting threads
// are made by the preload's ito_create (found with dlsym, as a program that
// is not linked with libito.so, whose own TLS would give blocks from the
// start, would reach it), which must check for new modules as pthread_create
// does. Built with TLS_VIA_ICONV, the module is a gconv module with
// __thread variables (tls_iconv_lib.c) that iconv_open makes glibc load.
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <iconv.h>
#include <nss.h>
#include <pthread.h>
#include <pwd.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "tls_module_counting.h"

// Called by the module's constructor (the program is linked with -rdynamic).
void tls_module_register(long (*b)(long), int (*i)(void)) {
  bump = b;
  initial = i;
}

static void* nothing(void* arg) { return arg; }

#ifdef TLS_NSS_ITO_CREATE
typedef uint64_t thread_handle;
static int make(thread_handle* t, void* (*fn)(void*), void* arg) {
  static int (*create)(thread_handle*, void* (*)(void*), void*);
  if (!create) create = (int (*)(thread_handle*, void* (*)(void*), void*))dlsym(RTLD_DEFAULT, "ito_create");
  return create ? create(t, fn, arg) : -1;
}
static int finish(thread_handle t, void** result) {
  static int (*join)(thread_handle, void**);
  if (!join) join = (int (*)(thread_handle, void**))dlsym(RTLD_DEFAULT, "ito_join");
  return join ? join(t, result) : -1;
}
#else
typedef pthread_t thread_handle;
static int make(thread_handle* t, void* (*fn)(void*), void* arg) {
  return pthread_create(t, NULL, fn, arg);
}
static int finish(thread_handle t, void** result) { return pthread_join(t, result); }
#endif

static void* counting(void* arg) {
  return (void*)count_in_module((long)arg);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
#ifndef TLS_VIA_ICONV
  if (__nss_configure_lookup("passwd", "itotls") != 0) {
    printf("__nss_configure_lookup failed\n");
    return 1;
  }
#endif
  // A thread before the module exists: the runtime is up, without blocks.
  pthread_t first;
  void* ok;
  pthread_create(&first, NULL, nothing, NULL);
  pthread_join(first, &ok);
#ifdef TLS_VIA_ICONV
  iconv_t converter = iconv_open("ITOTLS//", "UTF-8");
  if (converter == (iconv_t)-1 || !bump) {
    printf("the gconv module was not loaded (ITOTLS.so and gconv-modules in GCONV_PATH?)\n");
    return 1;
  }
#else
  struct passwd* pw = getpwnam("ito-tls-nss");
  if (pw || !bump) {
    printf("the NSS module was not loaded (libnss_itotls.so.2 on LD_LIBRARY_PATH?)\n");
    return 1;
  }
#endif
  thread_handle t[4];
  for (long i = 0; i < 4; ++i) {
    if (make(&t[i], counting, (void*)(i + 1)) != 0) {
      printf("thread %ld not created\n", i);
      return 1;
    }
  }
  int good = 0;
  for (int i = 0; i < 4; ++i) {
    finish(t[i], &ok);
    good += ok != NULL;
  }
  printf("%d of 4 threads kept their own count of the module's variable\n", good);
  printf("main's own: %ld\n", bump(0));
  return 0;
}
