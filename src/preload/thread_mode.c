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
 * blocks, and pays nothing for them, until it loads a module with TLS
 * (dlopen, or a dependency of one): the threads it creates from then on get
 * blocks; those that exist keep sharing their worker's. */
#define _GNU_SOURCE 1
#include <dlfcn.h>
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

/* posix_common.cpp: whether blocks may be turned on later (ITO_ULT_TLS unset),
 * and turning them on (null) or why not. */
int ito_posix_ult_tls_later(void);
const char* ito_posix_ult_tls_turn_on(void);

/* Set at start when the program has no TLS of its own and its ULTs could get
 * blocks later; cleared once that is decided. */
static int g_watching;
/* The loader's count of objects loaded (dlpi_adds) at the last look. */
static unsigned long long g_adds_seen;
/* Set by dlopen and dlmopen below, before the load (hidden: the stubs write
 * them by address); other_namespace: dlmopen into a namespace other than the
 * base one, which dl_iterate_phdr does not show us, and whose libc has TLS
 * that ito does not carry (errno). */
__attribute__((visibility("hidden"))) int ito_preload_loads_to_check;
__attribute__((visibility("hidden"))) int ito_preload_other_namespace;

static int read_adds(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  *(unsigned long long*)data = info->dlpi_adds;
  return 1;
}

/* Before each pthread_create once the program has called dlopen or dlmopen
 * (preload.c): whether a module with TLS came since the last look. dlopen
 * cannot tell us when its load is done (the stubs below must not return
 * through us: see there), so every later creation looks, while watching:
 * one dl_iterate_phdr, which takes the loader's lock briefly. */
void ito_preload_check_loads(void) {
  if (!__atomic_load_n(&g_watching, __ATOMIC_RELAXED)) return;
  unsigned long long adds = 0;
  dl_iterate_phdr(&read_adds, &adds);
  struct foreign_tls found = {{0}};
  if (__atomic_load_n(&ito_preload_other_namespace, __ATOMIC_RELAXED)) {
    snprintf(found.name, sizeof found.name, "%s", "a module loaded by dlmopen");
  } else {
    if (adds == __atomic_load_n(&g_adds_seen, __ATOMIC_RELAXED)) return;
    if (!dl_iterate_phdr(&find_foreign_tls, &found)) {
      __atomic_store_n(&g_adds_seen, adds, __ATOMIC_RELAXED);
      return;
    }
  }
  if (!__atomic_exchange_n(&g_watching, 0, __ATOMIC_RELAXED)) return; /* another did */
  const char* refusal = ito_posix_ult_tls_turn_on();
  if (refusal)
    fprintf(stderr,
            "ito: preload: %s has thread-local variables; the program's threads share their "
            "worker's (%s; docs/POSIX.md)\n",
            found.name, refusal);
}

/* dlopen and dlmopen: a jump to glibc's, after setting the flags above.
 * glibc takes the caller of dlopen from its return address (the caller's
 * RUNPATH and $ORIGIN, its namespace): a wrapper that called it and came back
 * would make this library the caller, so the stub leaves the return address
 * as it was. Until the constructor has looked glibc's up (another library's
 * constructor may load something before), the stub looks it up first. */
__attribute__((visibility("hidden"))) void* ito_preload_glibc_dl[2];
__attribute__((visibility("hidden"))) void* ito_preload_find_glibc_dl(int which) {
  void* f = dlsym(RTLD_NEXT, which ? "dlmopen" : "dlopen");
  __atomic_store_n(&ito_preload_glibc_dl[which], f, __ATOMIC_RELEASE);
  return f;
}

#if defined(__x86_64__)
#if defined(__CET__)
#define ITO_ENDBR "endbr64\n"
#else
#define ITO_ENDBR ""
#endif
__asm__(".pushsection .text\n"
        ".globl dlopen\n"
        ".type dlopen, @function\n"
        "dlopen:\n" ITO_ENDBR
        "  movl $1, ito_preload_loads_to_check(%rip)\n"
        "  movq ito_preload_glibc_dl(%rip), %rax\n"
        "  xorl %ecx, %ecx\n"
        "  jmp 2f\n"
        ".size dlopen, .-dlopen\n"
        ".globl dlmopen\n"
        ".type dlmopen, @function\n"
        "dlmopen:\n" ITO_ENDBR
        "  movl $1, ito_preload_loads_to_check(%rip)\n"
        "  testq %rdi, %rdi\n" /* LM_ID_BASE is 0 */
        "  jz 1f\n"
        "  movl $1, ito_preload_other_namespace(%rip)\n"
        "1:\n"
        "  movq ito_preload_glibc_dl+8(%rip), %rax\n"
        "  movl $1, %ecx\n"
        "2:\n"
        "  testq %rax, %rax\n"
        "  jz 3f\n"
        "  jmp *%rax\n" /* glibc's, with the caller's return address */
        "3:\n" /* three pushes keep the stack 16-byte aligned at the call */
        "  pushq %rdi\n"
        "  pushq %rsi\n"
        "  pushq %rdx\n"
        "  movl %ecx, %edi\n"
        "  call ito_preload_find_glibc_dl\n"
        "  popq %rdx\n"
        "  popq %rsi\n"
        "  popq %rdi\n"
        "  jmp *%rax\n"
        ".size dlmopen, .-dlmopen\n"
        ".popsection\n");
#endif

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
  if (!dl_iterate_phdr(&find_foreign_tls, &found)) { /* no TLS of its own */
#if defined(__x86_64__)
    ito_preload_find_glibc_dl(0);
    ito_preload_find_glibc_dl(1);
    g_watching = ito_posix_ult_tls_later();
#endif
    return 1;
  }
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
