/* SPDX-License-Identifier: Apache-2.0 */
/* ito's C API: user-level threads (ULTs) on an M:N work-stealing runtime.
 *
 * Every call returns 0 or a POSIX error code and never exits the process nor
 * lets a C++ exception out (ito_exit excepted: it unwinds the calling ULT, as
 * pthread_exit does). Common codes:
 *   EPERM   a ULT-only call made outside a ULT (no runtime, or a plain OS thread)
 *   EINVAL  bad options or ITO_* variable (message on stderr), or a handle that
 *           cannot be joined/detached (detached, being joined, the main ULT)
 *   ESRCH   a handle that is dead: already joined (or reaped after detach)
 *   EDEADLK a ULT joining itself
 *   EBUSY   ito_init while a runtime (C or C++) already runs
 *   ENOMEM  out of memory
 * Handles (ito_ult_t) are only meaningful while the runtime that made them lives.
 */
#ifndef ITO_ITO_H
#define ITO_ITO_H

#include <stddef.h>
#include <stdint.h>

#include "ito/sync.h" /* mutexes, condition variables, barriers, semaphores, once, keys */
#include "ito/version.h" /* ITO_VERSION_MAJOR/MINOR/PATCH, ITO_VERSION, ITO_VERSION_STRING */

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__cplusplus) && __cplusplus >= 201103L
#define ITO_NORETURN [[noreturn]]
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define ITO_NORETURN _Noreturn
#elif defined(__GNUC__)
#define ITO_NORETURN __attribute__((noreturn))
#else
#define ITO_NORETURN
#endif

/* A ULT handle: a slot of the runtime's handle table and its reuse count, so
 * a stale handle (already joined, or from a runtime that has stopped) is
 * reported as ESRCH, whatever became of the ULT's memory. Of two racing
 * ito_join/ito_detach calls on one handle exactly one succeeds; the other gets
 * EINVAL (or ESRCH once the ULT is gone). 0 is never a valid handle. */
typedef uint64_t ito_ult_t;
#define ITO_ULT_NULL ((ito_ult_t)0)

/* Runtime settings; a zero field takes its ITO_* variable, else the default. */
/* ito_options_t.stacks: where ULT stacks come from (docs/SPLIT_STACKS.md).
 * LAZY and FAIR_USE need a program built with -fsplit-stack and linked with
 * ito's split-stack runtime (CMake: ito::split_stack); else ito_init is EINVAL. */
enum {
  ITO_STACKS_FIXED = 0,   /* one mapped stack per ULT; ITO_STACK may choose another */
  ITO_STACKS_LAZY = 1,    /* linked segments, children on their parent's tail */
  ITO_STACKS_FAIR_USE = 2 /* lazy, plus a pool of freed regions any ULT may take */
};
/* ito_options_t.stack_alloc: how lazy/fair_use get their blocks. */
enum { ITO_STACK_ALLOC_DEFAULT = 0, ITO_STACK_ALLOC_MMAP = 1, ITO_STACK_ALLOC_MALLOC = 2 };

typedef struct ito_options {
  unsigned workers;  /* worker OS threads; 0: ITO_WORKERS, else one per allowed CPU (max 1024) */
  size_t stack_size; /* bytes per ULT stack; 0: ITO_STACK_SIZE, else 64 KiB (16 KiB to 1 GiB) */
  int bind;          /* pin workers to CPUs: >0 yes, <0 no, 0: ITO_BIND (default no) */
  int stats;         /* print per-worker counters at ito_finalize: >0 yes, <0 no, 0: ITO_STATS */
  int stacks;        /* ITO_STACKS_* */
  size_t stack_block_size; /* lazy/fair_use block bytes; 0: ITO_STACK_BLOCK_SIZE, else 256 KiB (8 KiB to 64 MiB) */
  int stack_alloc;   /* ITO_STACK_ALLOC_*; DEFAULT: ITO_STACK_ALLOC, else mmap */
} ito_options_t;
#define ITO_OPTIONS_INIT {0, 0, 0, 0, ITO_STACKS_FIXED, 0, ITO_STACK_ALLOC_DEFAULT}

/* Starts the runtime; the calling OS thread becomes its main ULT. opts may be
 * NULL. Returns EINVAL (naming the bad field or ITO_* variable on stderr) or EBUSY. */
int ito_init(const ito_options_t* opts);
/* From the main ULT (the thread that called ito_init): waits for every ULT to
 * finish, then stops the runtime. EPERM from anywhere else or with no C runtime. */
int ito_finalize(void);

/* Creates a ULT running fn(arg) and switches to it at once (child first); the
 * caller resumes when a worker gets to it. *out receives its handle. */
int ito_create(ito_ult_t* out, void* (*fn)(void*), void* arg);
/* As ito_create, but the ULT frees itself when it ends (no handle, no join). */
int ito_create_detached(void* (*fn)(void*), void* arg);
/* Waits for the ULT to end, stores fn's result (or ito_exit's value) in
 * *retval if retval is not NULL, and frees it: the handle is dead afterwards. */
int ito_join(ito_ult_t ult, void** retval);
/* The ULT will free itself when it ends; it must not be joined afterwards. */
int ito_detach(ito_ult_t ult);

/* Calls fns[i](args ? args[i] : NULL) for every i < n, possibly in parallel,
 * and returns when all have returned (ito::parallel_invoke: a call no other
 * worker takes runs on the caller's stack, as the caller; no ULT is made for
 * it). The calls must not wait for each other. 0, EPERM outside a ULT, or
 * EINVAL (n == 0, fns NULL, or a NULL function), before anything is called. */
int ito_parallel_invoke(size_t n, void (*const fns[])(void*), void* const args[]);

/* Lets other ULTs run; the caller is queued behind the next runnable ULT. */
int ito_yield(void);
/* Lets every ULT queued on this worker run first; the caller is also the first
 * to be stolen by an idle worker. */
int ito_yield_to_head(void);
/* Suspends the calling ULT for at least ns nanoseconds (EINVAL if negative). */
int ito_sleep_ns(long long ns);

/* The calling ULT's handle (the main ULT included), or ITO_ULT_NULL outside a ULT. */
ito_ult_t ito_self(void);
/* Ends the calling ULT: unwinds its stack to its entry (C++ destructors run;
 * C frames need unwind tables, the default on x86-64) and makes retval the
 * result that ito_join returns. Outside a ULT, or on the main ULT, it prints a
 * message and aborts. */
ITO_NORETURN void ito_exit(void* retval);
/* The number of workers of the running runtime, or 0 when none runs. */
unsigned ito_workers(void);
/* The version of the library linked at run time, as ITO_VERSION (compare it
 * with the ITO_VERSION the program was compiled against), and as a string. */
unsigned ito_version(void);
const char* ito_version_string(void);

#ifdef __cplusplus
}
#endif

#endif /* ITO_ITO_H */
