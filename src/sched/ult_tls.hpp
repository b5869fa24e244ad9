// SPDX-License-Identifier: Apache-2.0
// Per-ULT thread-local storage (ITO_ULT_TLS, options::ult_tls; issue 42).
//
// A ULT given a TLS block runs with the thread pointer (%fs on x86-64) at
// a block of its own, laid out by glibc exactly as a thread's: the static
// TLS of every module below the thread pointer, the TCB (glibc's struct
// pthread, whose first words are the tcbhead: self pointers, DTV, stack
// guard, pointer guard) at and above it. ld.so builds it, as for
// pthread_create (_dl_allocate_tls, GLIBC_PRIVATE); ito fills in the TCB
// fields that libc reads while the ULT runs (see ult_tls.cpp). `__thread`,
// C++ `thread_local`, errno, the uselocale locale, h_errno and libstdc++'s
// exception globals are then the ULT's own, wherever it runs.
//
// The switch loads the arriving context's thread pointer where it differs
// from the one in force (wrfsbase where the CPU and kernel allow it, else
// arch_prctl): scheduler.hpp's switch_eh/install_eh, behind the test they
// make anyway (worker::switch_extras), so a runtime without TLS blocks pays
// nothing more on a switch. x86-64 and glibc only; not under the sanitizers
// (their runtimes keep per-thread state in TLS), the split-stack policies or
// the distributed mode: start_runtime refuses those (unavailable()).
#pragma once

#include <sys/types.h>

namespace ito {
struct options;
}

namespace ito::sched {

struct worker;
struct ult;
struct runtime_state;

namespace ult_tls {

// Why this process cannot give ULTs TLS blocks, or null when it can (the
// private entry points of glibc are there and the TCB looks as expected).
// Decided once, the first time, on an OS thread's own thread pointer.
const char* unavailable() noexcept;
// Why a runtime started with these (resolved) options cannot give ULTs TLS
// blocks, or null: unavailable(), a split-stack policy, the distributed mode.
const char* unavailable_for(const options& resolved) noexcept;
// True when the thread pointer is written with wrfsbase, false when each
// write is an arch_prctl system call.
bool uses_wrfsbase() noexcept;

// Gives u a fresh TLS block (every module's initial image, a TCB whose
// fields are set as NPTL sets a new thread's); `tid` is what the TCB says
// the thread's id is (glibc's internal recursive locks record it as their
// owner). The block of a ULT that ended on the calling worker, renewed, if
// one is cached there (worker::tls_cache), else a new one from ld.so.
// Throws std::bad_alloc.
void give(ult* u, pid_t tid);

// Run by the ULT itself, in its block, when it starts: what NPTL's
// start_thread sets up (the resolver state pointer, at res_state: storage
// for a struct __res_state that lives as long as the ULT; the ctype
// tables). And when its body has returned or unwound: the C++ thread_local
// destructors (__call_tls_dtors), before its pthread_key destructors, as
// NPTL orders them; then __resp goes back to the process's _res (res_state
// dies with the caller's frame; key destructors run after).
void thread_start(void* res_state) noexcept;
void thread_end() noexcept;

// The thread id the TCB in force says (what glibc's recursive locks record
// as their owner): a ULT's own number in its block. 0 where blocks are
// unavailable.
pid_t tcb_tid_now() noexcept;

// A worker's OS thread: records its own thread pointer (always: cheap, and
// turn_on needs it).
void enter_worker(worker* w) noexcept;
// Blocks for the ULTs rt spawns from now on, in a runtime started without
// them (the preload, after a module with TLS was loaded: thread_mode.c). The
// caller checked unavailable_for(rt->opts). Every worker's switch loads
// thread pointers from here on (each recorded its own at start); ULTs that
// exist keep their worker's. Idempotent.
void turn_on(runtime_state* rt) noexcept;
// The switch's part (scheduler.hpp): makes the thread pointer of `next`
// (the worker's own for the scheduler, the main ULT and ULTs without a
// block) the one in force on w. `left`, when not null, is a ULT that has
// ended: once the thread pointer is off its block, the block goes to w's
// cache (at most worker::tls_cache_capacity), or back to ld.so.
void arrive(worker* w, const ult* next, ult* left) noexcept;
// Frees the blocks in w's cache (the runtime's end).
void drain(worker* w) noexcept;

// The workers' OS threads were started from inside a ULT's block: glibc
// marked that block, not worker 0's own TCB, as "multiple threads" (the
// flag its lock-skipping fast paths read). Mark worker 0's.
void others_started(worker* w0) noexcept;

// In a fork's child, from the fork handler, before the runtime is forgotten:
// `w` is the worker the fork ran on (null if none). Where the forking thread
// ran on a ULT's block, that block is now the TCB of the child's only OS
// thread: glibc's lists and the kernel's rseq registration are made to say so.
void forked_child(const worker* w) noexcept;

}  // namespace ult_tls
}  // namespace ito::sched
