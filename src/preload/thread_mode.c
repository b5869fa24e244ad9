/* SPDX-License-Identifier: Apache-2.0 */
/* Whether libito-preload.so runs the program's threads as ULTs or leaves
 * them OS threads (NPTL), and whether its ULTs get TLS blocks of their own,
 * decided once at start.
 *
 * Thread-local variables (`__thread`, C++ `thread_local`, Rust's
 * `thread_local!`) live at fixed offsets from the thread pointer (%fs), so
 * ULTs that share their worker's would share them: Rust's standard library
 * aborts when a second thread starts on a worker, and a C program silently
 * reads another thread's value. ito carries what libc and libstdc++ keep per
 * thread and a switch can disturb (errno, the C++ exception globals), so only
 * the thread-local storage of other objects counts. A program with such an
 * object runs on ULTs with a TLS block each (sched/ult_tls.hpp), where
 * that works here (x86-64, glibc, fixed stacks) and ITO_ULT_TLS is not 0;
 * otherwise on NPTL, with one line on stderr saying so
 * (ITO_PRELOAD_THREADS). A program without TLS of its own runs on ULTs without
 * blocks, and pays nothing for them. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char __ehdr_start[] __attribute__((visibility("hidden")));

/* Objects whose thread-local storage is either carried by ito across
 * switches or never held across one (glibc's malloc caches, stdio), and the
 * sanitizer runtimes, which follow ULT switches through their fiber hooks. */
static const char* const carried_by_ito[] = {
    "libc.so.",    "libstdc++.so.", "libgcc_s.so.", "libm.so.",   "libpthread.so.",
    "libdl.so.",   "librt.so.",     "ld-linux",     "libasan.so.", "libubsan.so.",
    "libtsan.so.", "liblsan.so.",
};

struct foreign_tls {
  char name[128];
};

static int find_foreign_tls(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  if (info->dlpi_tls_modid == 0) return 0;                     /* no TLS */
  if (info->dlpi_addr == (uintptr_t)__ehdr_start) return 0;     /* this library */
  const char* path = info->dlpi_name && *info->dlpi_name ? info->dlpi_name
                                                         : program_invocation_name;
  const char* slash = strrchr(path, '/');
  const char* base = slash ? slash + 1 : path;
  for (size_t i = 0; i < sizeof carried_by_ito / sizeof carried_by_ito[0]; ++i)
    if (strncmp(base, carried_by_ito[i], strlen(carried_by_ito[i])) == 0) return 0;
  struct foreign_tls* found = data;
  snprintf(found->name, sizeof found->name, "%s", base);
  return 1;
}

/* ITO_PRELOAD_THREADS, read by libito's parser (src/common/setting_values.hpp;
 * the preload's constructor runs after libstdc++ is up): 0 auto, 1 ult, 2 os. */
int ito_posix_preload_thread_mode(void);
/* posix_common.cpp: why the program's ULTs get no TLS blocks (ITO_ULT_TLS
 * unset or 0, or sched/ult_tls.hpp's reason), or null when they do. */
const char* ito_posix_ult_tls_refusal(void);

int ito_preload_threads_as_ults(void) {
  const int mode = ito_posix_preload_thread_mode();
  if (mode == 2) return 0;
  struct foreign_tls found = {{0}};
  if (!dl_iterate_phdr(&find_foreign_tls, &found)) return 1; /* no TLS of its own */
  if (mode == 1) return 1; /* forced: sharing the worker's TLS, unless ITO_ULT_TLS=1 */
  const char* refusal = ito_posix_ult_tls_refusal();
  if (!refusal) return 1; /* with a TLS block per thread */
  fprintf(stderr,
          "ito: preload: %s has thread-local variables; its threads stay OS threads (%s; "
          "ITO_PRELOAD_THREADS=ult runs them as ULTs sharing their worker's TLS, =os without "
          "this note; docs/POSIX.md)\n",
          found.name, refusal);
  return 0;
}
