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
 * blocks, and pays nothing for them, until a module with TLS is loaded
 * (dlopen, a dependency of one, or glibc's own loads: NSS modules for
 * getpwnam, iconv's): the threads it creates from then on get blocks; those
 * that exist keep sharing their worker's. */
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

/* Watching for modules with TLS loaded after start: x86-64 only, where TLS
 * blocks exist (sched/ult_tls.hpp). */
#if defined(__x86_64__)
/* posix_common.cpp: whether blocks may be turned on later (ITO_ULT_TLS unset),
 * and turning them on (null) or why not; c_api.cpp: the check that every
 * thread creation (pthread_create, ito_create) runs while one is set. */
int ito_posix_ult_tls_later(void);
const char* ito_posix_ult_tls_turn_on(void);
void ito_posix_watch_tls_loads(void (*check)(void));

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

/* The loader's table of TLS modules (ld.so's _dl_tls_dtv_slotinfo_list, in
 * _rtld_global): a list of arrays of {generation, link_map}, one slot per
 * module id, whose nodes are never freed. Loading a module with TLS, by
 * whatever path (dlopen, or glibc's own for NSS and iconv modules), puts it
 * in the lowest free slot, or the one after the last used, with the next TLS
 * generation; unloading one stamps its slot with the next too. So the
 * highest generation among the slots up to the one after the last used
 * tells, with a few plain loads (no lock, no call), whether a module with
 * TLS came or went since the last look. The layout comes from glibc's
 * descriptions for libthread_db (_thread_db_*: {bits, count, offset}, as
 * sched/ult_tls.cpp reads the TCB's), checked when they are looked up. */
static struct {
  char* const* head; /* &_rtld_global._dl_tls_dtv_slotinfo_list */
  size_t len, next, slots, stride, gen, map;
} g_slotinfo;
static int g_slotinfo_known;
/* The highest slot generation at the last look, and the slot after the last
 * one used then: a new module goes there or below. */
static size_t g_generation_seen, g_slots_to_watch;

static const uint32_t* description(const char* name, uint32_t bits, uint32_t count) {
  const uint32_t* d = dlsym(RTLD_DEFAULT, name);
  return d && d[0] == bits && d[1] == count ? d : NULL;
}

static void find_slotinfo(void) {
  const uint32_t word = 8 * sizeof(size_t);
  char* rtld_global = dlsym(RTLD_DEFAULT, "_rtld_global");
  const uint32_t* head = description("_thread_db_rtld_global__dl_tls_dtv_slotinfo_list", word, 1);
  const uint32_t* len = description("_thread_db_dtv_slotinfo_list_len", word, 1);
  const uint32_t* next = description("_thread_db_dtv_slotinfo_list_next", word, 1);
  const uint32_t* gen = description("_thread_db_dtv_slotinfo_gen", word, 1);
  const uint32_t* map = description("_thread_db_dtv_slotinfo_map", word, 1);
  const uint32_t* slots = dlsym(RTLD_DEFAULT, "_thread_db_dtv_slotinfo_list_slotinfo");
  const uint32_t* stride = dlsym(RTLD_DEFAULT, "_thread_db_sizeof_dtv_slotinfo");
  if (!rtld_global || !head || !len || !next || !gen || !map || !slots || !stride ||
      *stride < 2 * sizeof(size_t) || gen[2] + sizeof(size_t) > *stride ||
      map[2] + sizeof(size_t) > *stride || slots[0] != 8 * *stride)
    return; /* dlopen's flag and dlpi_adds instead (ito_preload_check_loads) */
  g_slotinfo.head = (char* const*)(rtld_global + head[2]);
  g_slotinfo.len = len[2];
  g_slotinfo.next = next[2];
  g_slotinfo.slots = slots[2];
  g_slotinfo.stride = *stride;
  g_slotinfo.gen = gen[2];
  g_slotinfo.map = map[2];
  g_slotinfo_known = 1;
}

static size_t word_at(const char* p, size_t offset) {
  return __atomic_load_n((const size_t*)(p + offset), __ATOMIC_ACQUIRE);
}

/* The highest generation among slots 0..last; *used (if not null): the
 * highest slot with a module. */
static size_t slot_generation(size_t last, size_t* used) {
  size_t index = 0, highest = 0;
  for (const char* list = __atomic_load_n(g_slotinfo.head, __ATOMIC_ACQUIRE); list;
       list = (const char*)word_at(list, g_slotinfo.next)) {
    const size_t len = word_at(list, g_slotinfo.len);
    for (size_t i = 0; i < len; ++i, ++index) {
      if (index > last) return highest;
      const char* slot = list + g_slotinfo.slots + i * g_slotinfo.stride;
      const size_t gen = word_at(slot, g_slotinfo.gen);
      if (gen > highest) highest = gen;
      if (used && word_at(slot, g_slotinfo.map)) *used = index;
    }
  }
  return highest;
}

/* Before each thread creation while watching (c_api.cpp's create_ult, for
 * pthread_create and ito_create alike): whether a module with TLS came since
 * the last look. Where the slot table is known (glibc 2.34's descriptions),
 * a few loads, and one dl_iterate_phdr (under the loader's lock) only when a
 * slot's generation changed; so modules glibc loads itself (NSS for
 * getpwnam, iconv's) are seen too. Elsewhere only after the program called
 * dlopen or dlmopen (they set a flag; they cannot tell us when the load is
 * done, see below): then one dl_iterate_phdr per creation, for its
 * dlpi_adds. */
static void ito_preload_check_loads(void) {
  if (!__atomic_load_n(&g_watching, __ATOMIC_RELAXED)) return;
  struct foreign_tls found = {{0}};
  if (__atomic_load_n(&ito_preload_other_namespace, __ATOMIC_RELAXED)) {
    snprintf(found.name, sizeof found.name, "%s", "a module loaded by dlmopen");
  } else if (g_slotinfo_known) {
    /* A load or unload stamps its slot with a generation above every one
     * seen so far; a slot past those watched may hold the highest seen (an
     * unloaded module's), hence <= and not ==. */
    if (slot_generation(__atomic_load_n(&g_slots_to_watch, __ATOMIC_RELAXED), NULL) <=
        __atomic_load_n(&g_generation_seen, __ATOMIC_RELAXED))
      return; /* the steady state */
    size_t used = 0;
    const size_t generation = slot_generation((size_t)-1, &used); /* before the look */
    if (!dl_iterate_phdr(&find_foreign_tls, &found)) {
      __atomic_store_n(&g_slots_to_watch, used + 1, __ATOMIC_RELAXED);
      __atomic_store_n(&g_generation_seen, generation, __ATOMIC_RELAXED);
      return; /* a module whose TLS ito carries (libstdc++), or one unloaded */
    }
  } else {
    if (!__atomic_load_n(&ito_preload_loads_to_check, __ATOMIC_RELAXED)) return;
    unsigned long long adds = 0;
    dl_iterate_phdr(&read_adds, &adds);
    if (adds == __atomic_load_n(&g_adds_seen, __ATOMIC_RELAXED)) return;
    if (!dl_iterate_phdr(&find_foreign_tls, &found)) {
      __atomic_store_n(&g_adds_seen, adds, __ATOMIC_RELAXED);
      return;
    }
  }
  if (!__atomic_exchange_n(&g_watching, 0, __ATOMIC_RELAXED)) return; /* another did */
  ito_posix_watch_tls_loads(NULL);
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
    if (g_watching) {
      find_slotinfo();
      if (g_slotinfo_known) {
        size_t used = 0;
        g_generation_seen = slot_generation((size_t)-1, &used);
        g_slots_to_watch = used + 1;
      }
      ito_posix_watch_tls_loads(&ito_preload_check_loads);
    }
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
