// SPDX-License-Identifier: Apache-2.0
// Per-ULT thread-local storage: ult_tls.hpp says what and why.
//
// What a ULT's TCB holds (x86-64, glibc's tcbhead_t at the thread pointer,
// then the rest of its struct pthread), and why each field is set:
//   0x00 tcb, 0x10 self   the block itself: THREAD_SELF (%fs:0x10) is how
//                         libc finds "its" struct pthread, and the stdio
//                         locks record it as their owner;
//   0x08 dtv              set by ld.so (_dl_allocate_tls): __tls_get_addr
//                         and dlopen'ed modules' TLS go through it, and
//                         its generation check covers modules loaded later;
//   0x18 multiple_threads 1, as NPTL sets for every thread after the first
//                         (glibc's SINGLE_THREAD_P skips locks on 0);
//   0x20 sysinfo, 0x28 stack_guard, 0x30 pointer_guard, 0x48 feature_1
//                         the creator's: the stack-protector canary and the
//                         setjmp/atexit pointer mangling are one value per
//                         process (NPTL copies them too), so a function that
//                         enters on one block and returns on another (every
//                         switch does) checks the same canary;
//   tid                   (offset from glibc's libthread_db description,
//                         _thread_db_pthread_tid) the ULT's own number, as
//                         gettid() says for it (posix_thread_ids.cpp): owner
//                         of glibc's internal recursive locks and rwlocks,
//                         which must stay one owner when the ULT migrates and
//                         must not be taken for the worker's own;
//   rseq cpu_id           (__rseq_offset + 4) "registration failed": the
//                         kernel updates only the OS thread's area, so
//                         sched_getcpu must ask the kernel instead;
//   list                  (offset from _thread_db_pthread_list) linked to
//                         itself: glibc keeps every thread's TCB on one of
//                         its lists (_dl_stack_used, _dl_stack_user), and a
//                         fork's child takes the forking thread's entry off
//                         its list (reclaim_stacks' list_del): on a zeroed
//                         entry that wrote through null. The block is on no
//                         list, so nothing else walks to it (until a fork's
//                         child adopts it as its thread's TCB: forked_child).
// Everything else stays zero, as in a new NPTL thread's: cancellation state,
// glibc's own thread-specific data (ito's keys are its own), the robust list
// (the kernel knows only the worker's; process-shared robust mutexes are
// ito's own, posix_pshared.cpp).
#include "sched/ult_tls.hpp"

#include "ito/options.hpp"
#include "sched/extension.hpp"

#include <dlfcn.h>
#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#endif
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "arch/sanitizer.hpp"
#include "sched/scheduler.hpp"
#include "trace/trace.hpp"

#if defined(__x86_64__)
#include <asm/prctl.h>
#endif

namespace ito::sched::ult_tls {
namespace {

// glibc's list_t (include/list_t.h): a node of a circular doubly linked list.
struct list_node {
  list_node* next;
  list_node* prev;
};

// glibc's dtv_t (include/link.h, 2.26 and later): the thread's DTV is an
// array of these; the TCB's dtv points at its element 1, whose [-1].counter
// is the number of module slots and [0].counter the generation it reflects.
union dtv_entry {
  std::size_t counter;
  struct {
    void* val;      // the module's TLS in this thread, or TLS_DTV_UNALLOCATED
    void* to_free;  // what __tls_get_addr malloc'ed for a dynamic module; null for static TLS
  } pointer;
};

struct glibc_entry_points {
  void* (*allocate_tls)(void* mem) = nullptr;           // ld.so, GLIBC_PRIVATE
  // ld.so, GLIBC_PRIVATE: one argument up to 2.34, (void*, bool main_thread)
  // from 2.35 (true skips audit modules' images, for rtld's own start);
  // called with false, which the older one ignores.
  void* (*allocate_tls_init)(void* tcb, bool main_thread) = nullptr;
  std::size_t pthread_size = 0;       // sizeof (struct pthread): the TCB ld.so zeroes
  bool reuse_blocks = false;          // the DTV is laid out as dtv_entry says (2.26+)
  void (*deallocate_tls)(void* tcb, bool dealloc_tcb) = nullptr;
  void (*ctype_init)() = nullptr;                       // libc, GLIBC_PRIVATE
  void (*call_tls_dtors)() = nullptr;                   // libc, GLIBC_PRIVATE
  std::ptrdiff_t tid_offset = 0;      // struct pthread's tid, from the thread pointer
  std::ptrdiff_t list_offset = 0;     // struct pthread's list (glibc's list_t)
  list_node* stack_user = nullptr;    // ld.so's _dl_stack_user: the initial thread's list
  std::ptrdiff_t resp_offset = 0;     // libc's __resp (TLS), from the thread pointer
  std::ptrdiff_t rseq_offset = 0;     // the rseq area; 0: none
  unsigned rseq_size = 0;             // __rseq_size
  std::ptrdiff_t worker_offset = 0;   // ito's tls_worker, from the thread pointer
  std::ptrdiff_t trace_offset = 0;    // ito's trace::t_buffer, from the thread pointer
  bool wrfsbase = false;
  const char* why_not = nullptr;
};

constexpr std::ptrdiff_t tcb_self = 0x10, tcb_multiple_threads = 0x18, tcb_sysinfo = 0x20,
                         tcb_stack_guard = 0x28, tcb_pointer_guard = 0x30, tcb_feature_1 = 0x48;

char* thread_pointer() noexcept { return static_cast<char*>(__builtin_thread_pointer()); }

list_node* entry_of(void* tcb, std::ptrdiff_t list_offset) noexcept {
  return reinterpret_cast<list_node*>(static_cast<char*>(tcb) + list_offset);
}

void link_alone(list_node* n) noexcept { n->next = n->prev = n; }

// Takes n off its list and puts it first on `head`'s (glibc's list_del and
// list_add). Only in a fork's child, whose only thread this is: glibc's lock
// of its lists is not needed, as in its own fork code.
void move_to_list(list_node* n, list_node* head) noexcept {
  n->next->prev = n->prev;
  n->prev->next = n->next;
  n->next = head->next;
  n->prev = head;
  head->next->prev = n;
  head->next = n;
}

template <class T>
T symbol(const char* name) noexcept {
  return reinterpret_cast<T>(dlsym(RTLD_DEFAULT, name));
}

glibc_entry_points look_up() noexcept {
  glibc_entry_points g;
#if !defined(__x86_64__)
  g.why_not = "per-ULT TLS is done for x86-64 only (aarch64's thread pointer, tpidr_el0, is not switched yet)";
  return g;
#elif ITO_ASAN || ITO_TSAN
  g.why_not = "per-ULT TLS does not work under a sanitizer, whose runtime keeps each thread's state in TLS";
  return g;
#else
  g.allocate_tls = symbol<void* (*)(void*)>("_dl_allocate_tls");
  g.deallocate_tls = symbol<void (*)(void*, bool)>("_dl_deallocate_tls");
  g.allocate_tls_init = symbol<void* (*)(void*, bool)>("_dl_allocate_tls_init");
  g.ctype_init = symbol<void (*)()>("__ctype_init");
  g.call_tls_dtors = symbol<void (*)()>("__call_tls_dtors");
  const auto* tid_desc = symbol<const std::uint32_t*>("_thread_db_pthread_tid");
  const auto* list_desc = symbol<const std::uint32_t*>("_thread_db_pthread_list");
  const auto* user_desc = symbol<const std::uint32_t*>("_thread_db_rtld_global__dl_stack_user");
  auto* rtld_global = symbol<char*>("_rtld_global");  // ld.so's
  auto* resp = symbol<char*>("__resp");  // this thread's instance
  if (!g.allocate_tls || !g.deallocate_tls || !g.ctype_init || !g.call_tls_dtors || !tid_desc ||
      !list_desc || !user_desc || !rtld_global || !resp) {
    g.why_not = "per-ULT TLS needs glibc's private entry points (_dl_allocate_tls, "
                "_dl_deallocate_tls, __ctype_init, __call_tls_dtors, _thread_db_pthread_tid, "
                "_thread_db_pthread_list, _thread_db_rtld_global__dl_stack_user, _rtld_global, "
                "__resp), and this C library lacks one";
    return g;
  }
  char* tp = thread_pointer();
  // libthread_db's descriptions of struct pthread's fields: {bits, count, offset}.
  g.tid_offset = static_cast<std::ptrdiff_t>(tid_desc[2]);
  g.list_offset = static_cast<std::ptrdiff_t>(list_desc[2]);
  g.stack_user = reinterpret_cast<list_node*>(rtld_global + user_desc[2]);
  pid_t own_tid = 0;
  std::memcpy(&own_tid, tp + g.tid_offset, sizeof own_tid);
  void* self = nullptr;
  std::memcpy(&self, tp + tcb_self, sizeof self);
  const list_node* own_entry = entry_of(tp, g.list_offset);
  if (tid_desc[0] != 32 || tid_desc[1] != 1 || own_tid != gettid() || self != tp ||
      list_desc[0] != 8 * sizeof(list_node) || list_desc[1] != 1 ||
      own_entry->next->prev != own_entry || user_desc[0] != 8 * sizeof(list_node) ||
      user_desc[1] != 1 || g.stack_user->next->prev != g.stack_user) {
    g.why_not = "per-ULT TLS: this C library's thread control block is not laid out as expected";
    return g;
  }
  g.resp_offset = resp - tp;
  if (const auto* size = symbol<const unsigned*>("__rseq_size"); size && *size != 0) {
    if (const auto* off = symbol<const std::ptrdiff_t*>("__rseq_offset")) {
      g.rseq_offset = *off;
      g.rseq_size = *size;
    }
  }
  g.worker_offset = reinterpret_cast<char*>(&tls_worker) - tp;
  g.trace_offset = reinterpret_cast<char*>(&trace::t_buffer) - tp;
  // Blocks of ended ULTs are reused (worker::tls_cache) where the block can
  // be made new again as NPTL's cached stacks are (get_cached_stack):
  // _dl_allocate_tls_init, sizeof (struct pthread), and the DTV layout of
  // glibc 2.26 and later. Elsewhere each block is made and freed by ld.so.
  const auto* pthread_size = symbol<const std::uint32_t*>("_thread_db_sizeof_pthread");
  bool recent = false;
#if defined(__GLIBC__)
  unsigned major = 0, minor = 0;
  recent = std::sscanf(gnu_get_libc_version(), "%u.%u", &major, &minor) == 2 &&
           (major > 2 || (major == 2 && minor >= 26));
#endif
  if (g.allocate_tls_init && pthread_size && *pthread_size > tcb_feature_1 + 4 && recent) {
    g.pthread_size = *pthread_size;
    g.reuse_blocks = true;
  }
  constexpr unsigned long hwcap2_fsgsbase = 1ul << 1;
  g.wrfsbase = (getauxval(AT_HWCAP2) & hwcap2_fsgsbase) != 0;
  return g;
#endif
}

const glibc_entry_points& glibc() noexcept {
  static const glibc_entry_points g = look_up();
  return g;
}

inline void set_thread_pointer(void* tp) noexcept {
#if defined(__x86_64__)
  if (glibc().wrfsbase) [[likely]] {
    asm volatile("wrfsbase %0" : : "r"(tp) : "memory");
  } else {
    syscall(SYS_arch_prctl, ARCH_SET_FS, tp);
  }
#else
  (void)tp;
#endif
}

template <class T>
void put(void* tcb, std::ptrdiff_t offset, T value) noexcept {
  std::memcpy(static_cast<char*>(tcb) + offset, &value, sizeof value);
}

constexpr std::int32_t rseq_cpu_id_uninitialized = -1, rseq_registration_failed = -2;

#if defined(SYS_rseq)
constexpr std::uint32_t rseq_signature = 0x53053053;  // glibc's RSEQ_SIG on x86
constexpr int rseq_flag_unregister = 1;              // RSEQ_FLAG_UNREGISTER

long rseq_call(void* area, unsigned length, int flags) noexcept {
  return syscall(SYS_rseq, area, length, flags, rseq_signature);
}
#endif

// The kernel's rseq registration is the forking OS thread's: its area in the
// TCB it had, the worker's own, which in the child is a dead thread's (glibc
// caches its stack, reuses it for a new thread or unmaps it: the kernel then
// writes the CPU number into another thread's TCB, or kills the process).
// Moves it to the block the child's thread now runs on, as glibc registers a
// new thread's own area, so sched_getcpu reads its CPU there again.
void move_rseq_registration(char* from_tp, char* to_tp) noexcept {
#if defined(SYS_rseq)
  const glibc_entry_points& g = glibc();
  if (!g.rseq_offset) return;  // glibc registers none
  // glibc registers __rseq_size bytes, at least the original ABI's 32.
  const unsigned length = g.rseq_size < 32 ? 32 : g.rseq_size;
  rseq_call(from_tp + g.rseq_offset, length, rseq_flag_unregister);
  put(to_tp, g.rseq_offset + 4, rseq_cpu_id_uninitialized);
  if (rseq_call(to_tp + g.rseq_offset, length, 0) != 0) {
    put(to_tp, g.rseq_offset + 4, rseq_registration_failed);  // sched_getcpu asks the kernel
  }
#else
  (void)from_tp;
  (void)to_tp;
#endif
}

// The block that a fork's child runs on as its only OS thread's TCB (the
// block of the ULT that forked, here or in an ancestor); null if none. A
// child forked from that thread inherits it with the memory.
void* g_adopted_block = nullptr;

}  // namespace

const char* unavailable() noexcept { return glibc().why_not; }
bool uses_wrfsbase() noexcept { return glibc().wrfsbase; }

pid_t tcb_tid_now() noexcept {
  const glibc_entry_points& g = glibc();
  if (g.why_not) return 0;
  pid_t tid = 0;
  std::memcpy(&tid, thread_pointer() + g.tid_offset, sizeof tid);
  return tid;
}

const char* unavailable_for(const options& resolved) noexcept {
  if (const char* why = unavailable()) return why;
  if (resolved.stacks != stack_policy::fixed)
    return "the split-stack policies keep their limit word in the TCB (%fs:0x70) per worker";
  if (processes_extension()) return "a ULT's TLS block does not move between processes";
  return nullptr;
}

namespace {

// Makes the block of an ended thread what _dl_allocate_tls(nullptr) returns,
// as NPTL readies a cached stack's TLS for a new thread (get_cached_stack):
// the dynamic TLS that __tls_get_addr gave the last thread freed and its DTV
// cleared; the TCB (struct pthread) zeroed but for the DTV pointer; then
// _dl_allocate_tls_init, under ld.so's TLS lock, grows the DTV if modules
// were loaded since (their generation), marks dynamic modules' slots
// unallocated and copies every static module's initial image (.tdata, the
// .tbss zeroed), modules dlopen'ed into static TLS included. errno, the
// resolver and locale pointers, the thread_local destructor list and every
// __thread variable of the last thread are thereby gone.
void* renew(void* tcb) noexcept {
  const glibc_entry_points& g = glibc();
  char* t = static_cast<char*>(tcb);
  dtv_entry* dtv = nullptr;
  std::memcpy(&dtv, t + 8, sizeof dtv);
  const std::size_t slots = dtv[-1].counter;
  for (std::size_t i = 1; i <= slots; ++i) {
    // Most slots are static TLS or unused (null): no call for those.
    if (void* p = dtv[i].pointer.to_free) std::free(p);
  }
  std::memset(static_cast<void*>(dtv), 0, (slots + 1) * sizeof *dtv);
  std::memset(t, 0, 8);
  std::memset(t + 16, 0, g.pthread_size - 16);
  return g.allocate_tls_init(tcb, false);
}

// A block from worker w's cache, made new; null if none.
void* reuse_cached(worker* w) noexcept {
  if (!w || w->tls_cache_count == 0) return nullptr;
  return renew(w->tls_cache[--w->tls_cache_count]);
}

}  // namespace

void give(ult* u, pid_t tid) {
  const glibc_entry_points& g = glibc();
  worker* w = current_worker();  // the creating one (null: an OS thread)
  void* tcb = reuse_cached(w);
  if (tcb) {
    if (w) worker_stats::bump(w->stats.tls_blocks_reused);
  } else {
    tcb = g.allocate_tls(nullptr);  // static TLS images, a DTV, a zeroed TCB
    if (!tcb) throw std::bad_alloc();
    if (w) worker_stats::bump(w->stats.tls_blocks_made);
  }
  char* creator = thread_pointer();
  put(tcb, 0, tcb);
  put(tcb, tcb_self, tcb);
  put(tcb, tcb_multiple_threads, 1);
  std::memcpy(static_cast<char*>(tcb) + tcb_sysinfo, creator + tcb_sysinfo, 8);
  std::memcpy(static_cast<char*>(tcb) + tcb_stack_guard, creator + tcb_stack_guard, 8);
  std::memcpy(static_cast<char*>(tcb) + tcb_pointer_guard, creator + tcb_pointer_guard, 8);
  std::memcpy(static_cast<char*>(tcb) + tcb_feature_1, creator + tcb_feature_1, 4);
  put(tcb, g.tid_offset, tid);
  link_alone(entry_of(tcb, g.list_offset));
  if (g.rseq_offset) put(tcb, g.rseq_offset + 4, rseq_registration_failed);  // struct rseq's cpu_id
  u->tls = tcb;
}

// What a new block's __resp holds (its initial image: the process's _res),
// put back at the thread's end: its own resolver state lives in the frame
// that thread_start's caller leaves before the key destructors run.
std::atomic<void*> g_initial_resp{nullptr};

void thread_start(void* res_state) noexcept {
  char* resp = thread_pointer() + glibc().resp_offset;
  void* initial = nullptr;
  std::memcpy(&initial, resp, sizeof initial);
  g_initial_resp.store(initial, std::memory_order_relaxed);
  std::memcpy(resp, &res_state, sizeof res_state);
  glibc().ctype_init();
}

void thread_end() noexcept {
  glibc().call_tls_dtors();
  void* initial = g_initial_resp.load(std::memory_order_relaxed);
  std::memcpy(thread_pointer() + glibc().resp_offset, &initial, sizeof initial);
}

void enter_worker(worker* w) noexcept {
  w->own_tp = w->tp_now = __builtin_thread_pointer();
}

void turn_on(runtime_state* rt) noexcept {
  // Before tls_blocks (release): a ULT with a block reaches a worker only
  // through its creator, who read tls_blocks with acquire, so every worker
  // that can switch to one loads its thread pointer.
  for (auto& w : rt->workers) {
    __atomic_store_n(&w->ult_tls, true, __ATOMIC_RELAXED);
    __atomic_store_n(&w->switch_extras, true, __ATOMIC_RELAXED);
  }
  rt->tls_blocks.store(true, std::memory_order_release);
}

void arrive(worker* w, const ult* next, ult* left) noexcept {
  void* tp = next && next->tls ? next->tls : w->own_tp;
  if (tp != w->tp_now) {
    const std::ptrdiff_t trace_at = glibc().trace_offset;
    void* own_trace = nullptr;
    std::memcpy(&own_trace, static_cast<char*>(w->own_tp) + trace_at, sizeof own_trace);
    if (w->tp_now != w->own_tp && !own_trace) {
      // Leaving a block before this OS thread had a trace buffer: the one
      // the ULT made there, if any, becomes the worker's (ITO_TRACE).
      std::memcpy(&own_trace, static_cast<char*>(w->tp_now) + trace_at, sizeof own_trace);
      if (own_trace) put(w->own_tp, trace_at, own_trace);
    }
    // The block's tls_worker: the scheduler's hooks on the next stack, and
    // everything the ULT calls, find their worker through it; and its trace
    // buffer: the worker's, which only this OS thread writes.
    if (tp != w->own_tp) {
      put(tp, glibc().worker_offset, w);
      put(tp, trace_at, own_trace);
    }
    w->tp_now = tp;
    set_thread_pointer(tp);
  }
  if (left && left->tls) [[unlikely]] {
    // Off it now (the thread pointer is next's): nothing reads it any more.
    // Its thread_local and key destructors have run (thread_end, the key
    // destructors after it); give() renews it for the next ULT made here.
    void* tcb = left->tls;
    left->tls = nullptr;
    if (w->tls_cache_count < worker::tls_cache_capacity && glibc().reuse_blocks) [[likely]] {
      w->tls_cache[w->tls_cache_count++] = tcb;
    } else {
      glibc().deallocate_tls(tcb, true);
      worker_stats::bump(w->stats.tls_blocks_freed);
    }
  }
}

void drain(worker* w) noexcept {
  while (w->tls_cache_count != 0) glibc().deallocate_tls(w->tls_cache[--w->tls_cache_count], true);
}

void others_started(worker* w0) noexcept { put(w0->own_tp, tcb_multiple_threads, 1); }

void forked_child(const worker* w) noexcept {
  char* tp = thread_pointer();
  const bool from_block = w && __atomic_load_n(&w->ult_tls, __ATOMIC_RELAXED) && tp != w->own_tp;
  if (!from_block && tp != g_adopted_block) return;  // NPTL's own TCB: glibc's case
  // The block is now what the initial thread's TCB is to NPTL: that of a
  // thread whose stack glibc did not make. The child's fork code
  // (reclaim_stacks) put it on _dl_stack_used, as the block's user_stack
  // flag (which ito cannot see) is false; there, in a grandchild forked from
  // another thread, glibc took it for a cached stack and aborted freeing it
  // (munmap of a null stack block). On _dl_stack_user, a grandchild drops it.
  move_to_list(entry_of(tp, glibc().list_offset), glibc().stack_user);
  if (from_block) move_rseq_registration(static_cast<char*>(w->own_tp), tp);
  g_adopted_block = tp;
}

}  // namespace ito::sched::ult_tls
