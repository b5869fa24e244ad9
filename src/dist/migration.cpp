// SPDX-License-Identifier: Apache-2.0
#include "dist/migration.hpp"

#include <cxxabi.h>
#include <mpi.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "arch/sanitizer.hpp"
#include "common/random.hpp"
#include "dist/dist_state.hpp"
#include "dist/dsm.hpp"
#include "dist/peer_watch.hpp"
#include "dist/progress.hpp"
#include "dist/stack_area.hpp"
#include "ito/runtime.hpp"
#include "ito/thread.hpp"
#include "sched/registry.hpp"
#include "sched/remote.hpp"
#include "sched/runtime_control.hpp"
#include "sched/scheduler.hpp"

#if ITO_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace ito::dist::detail {
namespace {

using sched::ult;
using sched::worker;

enum class msg : std::uint32_t {
  steal_request,   // thief → victim
  steal_none,      // victim → thief: nothing to give
  ult,             // victim → thief: a ULT's stack, descriptor included
  join_request,    // joiner's process → home
  detach_request,  // detacher's process → home
  ended,           // where a ULT ended → its home: its frame and descriptor
  done,            // home → joiner's process: the same, or an error
  free_stack,      // joiner's process → home: the stack may be reused
  come_home,       // home → joiner's process: its result stays here, join here
  joiner,          // joiner's process → home: the joiner's stack, as for `ult`
  stop,            // rank 0 → all: the main function returned
};

struct header {
  msg type;
  std::int32_t err;           // done: 0, or EINVAL / ESRCH
  std::uint64_t descriptor;   // the ULT
  std::uint64_t start;        // where the bytes that follow go
  std::uint64_t len;
  std::uint64_t stack_lo;     // the ULT's stack, [lo, hi)
  std::uint64_t stack_hi;
  std::uint64_t error_len;    // ended / done: the exception it threw, after the bytes
};

struct outgoing {
  int to = 0;
  bool carries_results = false;  // ult / ended / done: the sender's writes must be released first
  std::vector<char> bytes;
  MPI_Request request = MPI_REQUEST_NULL;
};

// What a home knows of one of its ULTs whose join goes through messages.
struct tracked {
  bool away = false;  // runs (or waits to run) on another process
  ult* local_joiner = nullptr;
  int remote_joiner = -1;
  bool detached = false;
};

constexpr int message_tag = 0x170;
constexpr std::int64_t min_poll_gap_ns = 10'000;   // between an idle worker's nudges
constexpr std::int64_t first_backoff_ns = 20'000;  // after a steal found nothing
constexpr std::int64_t max_backoff_ns = 1'000'000;
// When the end of a run, waiting for ULTs still running, says which.
constexpr std::int64_t unfinished_report_after_ns = 5'000'000'000;

struct migration {
  const stack_area* area = nullptr;
  int rank = 0, size = 1;
  MPI_Comm comm = MPI_COMM_NULL;
  sched::remote_ops ops;

  std::mutex poll_lock;  // the one poller
  std::mutex lock;       // the tables and the outbox; never held across MPI
  std::unordered_map<std::uintptr_t, tracked> homes;  // this rank's ULTs
  std::unordered_map<std::uintptr_t, ult*> waiting;   // local joiners of foreign ULTs
  std::vector<std::unique_ptr<outgoing>> outbox;

  // The poller's alone.
  std::vector<std::unique_ptr<outgoing>> in_flight;
  std::vector<char> inbox;
  std::vector<std::uint64_t> sent_to;
  std::uint64_t received = 0;
  bool steal_outstanding = false;
  std::int64_t next_steal_ns = 0, backoff_ns = 0;
  std::uint64_t rng = 0;

  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> last_poll_ns{0};
  std::atomic<std::int64_t> next_steal_ns_shared{0};  // next_steal_ns, for the workers' nudges
  std::atomic<std::uint64_t> steal_requests{0}, ults_received{0}, ults_sent{0}, remote_joins{0},
      remote_ends{0}, stack_bytes_moved{0}, releases{0}, acquires{0};
};
migration* g = nullptr;
migration_counts g_last_counts;  // of the last run, once it ended

std::uint64_t addr(const void* p) { return reinterpret_cast<std::uint64_t>(p); }
template <class T>
T* ptr(std::uint64_t a) {
  return reinterpret_cast<T*>(a);
}

// The rank's ito runtime once it is complete (set_runtime), else null:
// g_runtime is published before its workers exist.
std::atomic<sched::runtime_state*> g_ready_runtime{nullptr};
sched::runtime_state* runtime() { return g_ready_runtime.load(std::memory_order_acquire); }

[[noreturn]] void die(const char* what, const ult* u) {
  std::fprintf(stderr, "ito: dist: rank %d: ULT %llu: %s\n", g->rank,
               static_cast<unsigned long long>(u->id), what);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::_Exit(2);
}

// The bytes of a ended ULT that its joiner reads: its frame and descriptor.
char* frame_lo(const ult* u) {
  char* f = static_cast<char*>(u->frame);
  char* d = reinterpret_cast<char*>(const_cast<ult*>(u));
  return f && f < d ? f : d;
}

// ---- An exception crossing processes -----------------------------------------
// The exception object lives on the heap of the process where the ULT threw.
// It leaves as its type's name and what() (export_error, where it ended) and
// comes back as an ito::dist::remote_error (import_error, where it lands),
// placed in the frame's error box (ult::frame_error_offset).

using error_box = ito::detail::result_box<std::exception_ptr>;

error_box* error_box_of(const ult* u) {
  if (!u->frame_error_offset) return nullptr;
  return reinterpret_cast<error_box*>(static_cast<char*>(u->frame) + u->frame_error_offset);
}

// "type\0what", or empty; the box keeps has = true and a null pointer.
std::string export_error(ult* u) {
  error_box* box = error_box_of(u);
  if (!box || !box->has) return {};
  std::exception_ptr e = box->take();  // leaves a moved-from (null) pointer in the box
  std::string type = "an exception of unknown type", what;
  try {
    std::rethrow_exception(e);
  } catch (const ito::dist::remote_error& x) {
    return std::string(x.type_name()) + '\0' + x.what();  // passing through (home → joiner)
  } catch (const std::exception& x) {
    what = x.what();
    if (const std::type_info* t = abi::__cxa_current_exception_type()) type = t->name();
  } catch (...) {
    if (const std::type_info* t = abi::__cxa_current_exception_type()) type = t->name();
  }
  int status = -1;
  char* readable = abi::__cxa_demangle(type.c_str(), nullptr, nullptr, &status);
  if (status == 0) type = readable;
  std::free(readable);
  return type + '\0' + what;
}

void import_error(ult* u, const char* text, std::size_t len) {
  error_box* box = error_box_of(u);
  if (!box || !len) return;
  const std::string all(text, len);
  const std::size_t split = all.find('\0');
  ::new (box->bytes) std::exception_ptr(std::make_exception_ptr(
      ito::dist::remote_error(all.substr(0, split), all.substr(split + 1))));
  box->has = true;
}

// A result that is not trivially copyable may hold this process's pointers
// (its heap is not the joiner's): such a ULT never migrates (migratable), and
// its result goes to no joiner on another process. An exception it threw
// instead travels as a remote_error; ito::exit leaves no result.
void require_exportable(const ult* u) {
  const error_box* box = error_box_of(u);
  if (u->frame_result_local && !u->exited && !(box && box->has))
    die("its result is not trivially copyable (it may point into this process's memory), and "
        "a ULT on another process joins it: return a trivially copyable value, or join it on "
        "the process that created it (docs/DISTRIBUTED.md)",
        u);
}

std::unique_ptr<outgoing> make(int to, msg type, const ult* u, const char* start = nullptr,
                               std::size_t len = 0, int err = 0, const std::string& error = {}) {
#if ITO_ASAN
  // A suspended or ended ULT's stack holds its frames' redzones, and it leaves
  // this process (or is dead): read it unchecked (each receiver unpoisons too).
  if (len) __asan_unpoison_memory_region(start, len);
#endif
  auto o = std::make_unique<outgoing>();
  o->to = to;
  o->carries_results =
      type == msg::ult || type == msg::joiner || type == msg::ended || type == msg::done;
  o->bytes.resize(sizeof(header) + len + error.size());
  header h{type, err, addr(u), addr(start), len, 0, 0, error.size()};
  if (u && (type == msg::ult || type == msg::joiner))
    h.stack_lo = addr(u->stack.lo), h.stack_hi = addr(u->stack.hi);
  std::memcpy(o->bytes.data(), &h, sizeof h);
  if (len) std::memcpy(o->bytes.data() + sizeof h, start, len);
  if (!error.empty()) std::memcpy(o->bytes.data() + sizeof h + len, error.data(), error.size());
  return o;
}

void queue(std::unique_ptr<outgoing> o) {
  bool first;
  {
    std::lock_guard hold(g->lock);
    first = g->outbox.empty();
    g->outbox.push_back(std::move(o));
  }
  if (first) nudge_progress();
}

// The fields of a home's copy of a descriptor that are this process's own:
// kept when bytes from another process overwrite it.
struct local_fields {
  sched::ult_registry* registry;
  ult* prev;
  ult* next;
  arch::sanitizer_fiber fiber;
  explicit local_fields(const ult* u)
      : registry(u->registry), prev(u->registry_prev), next(u->registry_next), fiber(u->fiber) {}
  void restore(ult* u) const {
    u->registry = registry;
    u->registry_prev = prev;
    u->registry_next = next;
    u->fiber = fiber;
    u->stack_from = sched::stack_origin::pool;
  }
};

// Bytes of a descriptor this process is home to, sent back by another.
void write_home_copy(ult* u, const header& h, const char* payload) {
  const local_fields keep(u);
  std::memcpy(ptr<char>(h.start), payload, h.len);
  keep.restore(u);
}

// Bytes of a foreign descriptor (and its frame, or its whole stack) hosted here.
void write_foreign_copy(ult* u, const header& h, const char* payload, const void* lo, const void* hi) {
  host_range(lo, hi);
#if ITO_ASAN
  __asan_unpoison_memory_region(lo, static_cast<std::size_t>(static_cast<const char*>(hi) -
                                                             static_cast<const char*>(lo)));
#endif
  std::memcpy(ptr<char>(h.start), payload, h.len);
  u->registry = nullptr;
  u->registry_prev = u->registry_next = nullptr;
  u->stack_from = sched::stack_origin::foreign;
  arch::sanitizer_init_fiber(u->fiber, u->stack.lo, u->stack.size());
}

// An acquire for one ULT in a process whose other ULTs keep running: si_fence
// alone keeps every Modified page (written here since the last release) as
// it is, stale in the bytes others released; sd_fence then si_fence leaves a
// window in which another ULT writes a page again. Both at once, under the
// DSM's lock, close it.
void acquire() {
  g->acquires.fetch_add(1, std::memory_order_relaxed);
  release_and_invalidate();
}

// ---- A steal from another process (this rank is the victim) ----------------

// A joiner sent to its child's process (go_to_child) moves in its join.
bool migratable(const ult* u, bool in_its_join = false) {
  return !u->bound && !u->handle && !u->locals && u->eh.empty() &&
         !u->locks_held && !u->stays_here && !u->frame_result_local &&
         (!u->joining || in_its_join) &&
         (u->stack_from == sched::stack_origin::pool ||
          u->stack_from == sched::stack_origin::foreign) &&
         addr(u) >= g->ops.area_lo && addr(u) < g->ops.area_hi;
}

ult* steal_locally() {
  sched::runtime_state* rt = runtime();
  if (!rt) return nullptr;
  const auto n = static_cast<unsigned>(rt->workers.size());
  const auto first = static_cast<unsigned>(common::next_random(g->rng) % n);
  for (unsigned i = 0; i < n; ++i) {
    worker* v = rt->workers[(first + i) % n].get();
    ult* u = nullptr;
    using result = sched::chase_lev_deque<ult*>::steal_result;
    if (v->yielded.steal(u) == result::success || v->deque.steal(u) == result::success) return u;
  }
  return nullptr;
}

// Hands u's join over to this home's table: from here its state is remote.
void track_departure(ult* u) {
  std::lock_guard hold(g->lock);
  tracked& t = g->homes[addr(u)];
  std::uintptr_t s = u->join_state.load(std::memory_order_acquire);
  for (;;) {
    if (s == sched::join_remote) break;  // a remote joiner is recorded already
    t.local_joiner = sched::is_joiner(s) ? reinterpret_cast<ult*>(s) : nullptr;
    t.detached = s == sched::join_detached;
    if (u->join_state.compare_exchange_weak(s, sched::join_remote, std::memory_order_acq_rel,
                                            std::memory_order_acquire))
      break;
  }
  t.away = true;
}

// Sends u, suspended here, with its stack to process `to`.
void send_away(ult* u, int to, msg type) {
  const bool foreign = g->ops.is_foreign(u);
  if (!foreign) track_departure(u);
  // Its children must publish their ends (no quick resume of a parent that moved).
  ++u->resumes;
  char* sp = static_cast<char*>(u->sp);
  const std::size_t len = static_cast<std::size_t>(u->stack.hi - sp);
  auto message = make(to, type, u, sp, len);  // the bytes are copied: the stack may go
  if (foreign) drop_range(u->stack.lo, u->stack.hi);
  queue(std::move(message));
  runtime()->moved_out.fetch_add(1, std::memory_order_acq_rel);
  g->ults_sent.fetch_add(1, std::memory_order_relaxed);
  g->stack_bytes_moved.fetch_add(len, std::memory_order_relaxed);
}

void serve_steal(int thief) {
  ult* u = steal_locally();
  if (u && !migratable(u)) {
    sched::make_ready(u);  // runs here after all
    u = nullptr;
  }
  if (!u) return queue(make(thief, msg::steal_none, nullptr));
  send_away(u, thief, msg::ult);
}

// At a joiner's process: the child's result stays on its home (not trivially
// copyable), so the joiner goes there and joins it as a local ULT would.
void go_to_child(ult* child, int home) {
  ult* joiner = nullptr;
  {
    std::lock_guard hold(g->lock);
    auto it = g->waiting.find(addr(child));
    joiner = it->second;
    g->waiting.erase(it);
  }
  if (!migratable(joiner, /*in_its_join=*/true))
    die("it joins a ULT of another process whose result is not trivially copyable, and cannot "
        "go there to take it (it is the main ULT, holds a lock, a handle, ULT-local values or "
        "a caught exception): return a trivially copyable value instead (docs/DISTRIBUTED.md)",
        joiner);
  send_away(joiner, home, msg::joiner);
}

// ---- A ULT arrives (this rank is the thief) ---------------------------------

void arrive(const header& h, const char* payload) {
  ult* u = ptr<ult>(h.descriptor);
  if (g->ops.is_foreign(u)) {
    write_foreign_copy(u, h, payload, ptr<void>(h.stack_lo), ptr<void>(h.stack_hi));
    u->join_state.store(sched::join_remote, std::memory_order_release);
  } else {
    // Home again: its join goes back to the ordinary protocol.
    std::lock_guard hold(g->lock);
#if ITO_ASAN
    // Frames came and went elsewhere: what this process poisoned is stale.
    __asan_unpoison_memory_region(ptr<char>(h.stack_lo), h.stack_hi - h.stack_lo);
#endif
    write_home_copy(u, h, payload);
    auto it = g->homes.find(addr(u));
    const tracked t = it->second;
    std::uintptr_t s = sched::join_running;
    if (t.local_joiner) s = reinterpret_cast<std::uintptr_t>(t.local_joiner);
    else if (t.remote_joiner >= 0) s = sched::join_remote;
    else if (t.detached) s = sched::join_detached;
    if (t.remote_joiner >= 0) it->second.away = false;
    else g->homes.erase(it);
    u->join_state.store(s, std::memory_order_release);
  }
  ++u->resumes;
  runtime()->moved_out.fetch_sub(1, std::memory_order_acq_rel);
  g->ults_received.fetch_add(1, std::memory_order_relaxed);
  acquire();  // DAG consistency: it sees what its victim released before the steal
  sched::make_ready(u);
}

void steal_answered(bool got_one, std::int64_t now) {
  g->steal_outstanding = false;
  if (got_one) {
    g->backoff_ns = 0;
    g->next_steal_ns = now;
  } else {
    g->backoff_ns = g->backoff_ns ? std::min(g->backoff_ns * 2, max_backoff_ns) : first_backoff_ns;
    g->next_steal_ns = now + g->backoff_ns;
  }
  g->next_steal_ns_shared.store(g->next_steal_ns, std::memory_order_relaxed);
}

void maybe_request_steal(std::int64_t now) {
  if (g->size < 2 || g->stop.load(std::memory_order_relaxed) || g->steal_outstanding ||
      now < g->next_steal_ns)
    return;
  sched::runtime_state* rt = runtime();
  if (!rt || !rt->injector.looks_empty()) return;  // work is on its way to the workers
  // Runnable work here: our own workers take it first. (Counting idle
  // workers instead missed a rank whose workers wake every few microseconds.)
  for (auto& w : rt->workers)
    if (!w->deque.looks_empty() || !w->yielded.looks_empty()) return;
  auto victim = static_cast<int>(common::next_random(g->rng) % static_cast<unsigned>(g->size - 1));
  if (victim >= g->rank) ++victim;
  g->steal_outstanding = true;
  g->steal_requests.fetch_add(1, std::memory_order_relaxed);
  queue(make(victim, msg::steal_request, nullptr));
}

// ---- Joins, detaches and ends across processes ------------------------------

// At the home: a joiner on process `from` asks for u.
void home_join(ult* u, int from) {
  if (u->frame_result_local) return queue(make(from, msg::come_home, u));
  std::unique_ptr<outgoing> reply;
  {
    std::lock_guard hold(g->lock);
    std::uintptr_t s = u->join_state.load(std::memory_order_acquire);
    for (;;) {
      if (s == sched::join_running) {
        if (!u->join_state.compare_exchange_weak(s, sched::join_remote, std::memory_order_acq_rel,
                                                 std::memory_order_acquire))
          continue;
        g->homes[addr(u)].remote_joiner = from;
        return;
      }
      if (s == sched::join_finished) {
        if (!u->join_state.compare_exchange_weak(s, sched::join_released, std::memory_order_acq_rel,
                                                 std::memory_order_acquire))
          continue;
        require_exportable(u);
        const std::string error = export_error(u);
        char* lo = frame_lo(u);
        reply = make(from, msg::done, u, lo, static_cast<std::size_t>(u->stack.hi - lo), 0, error);
        break;
      }
      if (s == sched::join_remote) {
        tracked& t = g->homes[addr(u)];
        if (t.away && t.remote_joiner < 0 && !t.local_joiner && !t.detached) {
          t.remote_joiner = from;
          return;
        }
      }
      reply = make(from, msg::done, u, nullptr, 0, s == sched::join_released ? ESRCH : EINVAL);
      break;
    }
  }
  queue(std::move(reply));
}

void home_detach(ult* u) {
  bool release_now = false;
  {
    std::lock_guard hold(g->lock);
    std::uintptr_t s = u->join_state.load(std::memory_order_acquire);
    while (s == sched::join_running || s == sched::join_finished) {
      const std::uintptr_t to = s == sched::join_running ? sched::join_detached : sched::join_released;
      if (u->join_state.compare_exchange_weak(s, to, std::memory_order_acq_rel,
                                              std::memory_order_acquire)) {
        release_now = to == sched::join_released;
        break;
      }
    }
    if (s == sched::join_remote) {
      auto it = g->homes.find(addr(u));
      if (it != g->homes.end() && it->second.remote_joiner < 0 && !it->second.local_joiner)
        it->second.detached = true;
    }
  }
  if (release_now) sched::release(u, true);
}

// At the home: u ended on another process, which sent its frame and descriptor.
void home_ended(const header& h, const char* payload) {
  ult* u = ptr<ult>(h.descriptor);
  ult* wake = nullptr;
  bool release_now = false;
  std::unique_ptr<outgoing> forward;
  {
    std::lock_guard hold(g->lock);
    write_home_copy(u, h, payload);
    import_error(u, payload + h.len, h.error_len);
    auto it = g->homes.find(addr(u));
    const tracked t = it->second;
    g->homes.erase(it);
    if (t.local_joiner) {
      wake = t.local_joiner;
      u->join_state.store(reinterpret_cast<std::uintptr_t>(wake) | sched::join_ended_bit,
                          std::memory_order_release);
    } else if (t.remote_joiner >= 0) {
      u->join_state.store(sched::join_released, std::memory_order_release);
      forward = make(t.remote_joiner, msg::done, u, ptr<char>(h.start), h.len, 0, export_error(u));
    } else if (t.detached) {
      u->join_state.store(sched::join_released, std::memory_order_release);
      release_now = true;
    } else {
      u->join_state.store(sched::join_finished, std::memory_order_release);
    }
  }
  if (forward) queue(std::move(forward));
  if (release_now) sched::release(u, true);
  // DAG consistency: a joiner here, now or later (a local join of a finished
  // ULT sends no message), sees what the child released.
  if (!forward) acquire();
  if (wake) sched::make_ready(wake);
}

// At a joiner's process: the home's answer about a foreign ULT.
void joined(const header& h, const char* payload) {
  ult* u = ptr<ult>(h.descriptor);
  ult* joiner = nullptr;
  {
    std::lock_guard hold(g->lock);
    auto it = g->waiting.find(addr(u));
    joiner = it->second;
    g->waiting.erase(it);
  }
  if (h.err == 0) {
    write_foreign_copy(u, h, payload, ptr<char>(h.start), ptr<char>(h.start) + h.len);
    import_error(u, payload + h.len, h.error_len);
    u->join_state.store(reinterpret_cast<std::uintptr_t>(joiner) | sched::join_ended_bit,
                        std::memory_order_release);
  } else {
    host_range(u, u + 1);
    u->join_state.store(h.err == ESRCH ? sched::join_released : sched::join_detached,
                        std::memory_order_release);
  }
  acquire();  // DAG consistency: the joiner sees what the child released
  sched::make_ready(joiner);
}

void home_free(ult* u) {
#if ITO_ASAN
  // Its frames' redzones, poisoned while it ran here, must not greet the next ULT.
  __asan_unpoison_memory_region(u->stack.lo, u->stack.size());
#endif
  sched::registry_remove(u);
  arch::sanitizer_destroy_fiber(u->fiber);
  runtime()->stacks.release(u->stack);
}

// ---- sched::remote_ops ------------------------------------------------------

int remote_wait(ult* child) {
  g->remote_joins.fetch_add(1, std::memory_order_relaxed);
  if (g->ops.is_foreign(child)) {
    sched::suspend(
        [](ult* self, void* c) {
          auto* u = static_cast<ult*>(c);
          {
            std::lock_guard hold(g->lock);
            g->waiting[addr(u)] = self;
          }
          queue(make(g->area->home_of(u), msg::join_request, u));
        },
        child, "join (another process)", child);
    return 0;
  }
  {
    std::lock_guard hold(g->lock);
    if (child->join_state.load(std::memory_order_acquire) != sched::join_remote) return 0;
    // Remote without an entry cannot happen (the state and the entry change
    // together, under g->lock); at home, remote means a remote joiner.
    auto it = g->homes.find(addr(child));
    if (it == g->homes.end() || !it->second.away || it->second.local_joiner ||
        it->second.remote_joiner >= 0 || it->second.detached)
      return EINVAL;
  }
  sched::suspend(
      [](ult* self, void* c) {
        auto* u = static_cast<ult*>(c);
        std::unique_lock hold(g->lock);
        auto it = g->homes.find(addr(u));
        if (u->join_state.load(std::memory_order_acquire) == sched::join_remote &&
            it != g->homes.end() && it->second.away && !it->second.local_joiner) {
          it->second.local_joiner = self;
          return;
        }
        hold.unlock();
        sched::make_ready(self);  // it came back or ended meanwhile: look again
      },
      child, "join (another process)", child);
  return 0;
}

int remote_detach(ult* child) {
  if (g->ops.is_foreign(child)) {
    queue(make(g->area->home_of(child), msg::detach_request, child));
    return 0;
  }
  std::lock_guard hold(g->lock);
  if (child->join_state.load(std::memory_order_acquire) != sched::join_remote) return EAGAIN;
  auto it = g->homes.find(addr(child));
  if (it == g->homes.end()) return EINVAL;
  if (it->second.local_joiner || it->second.remote_joiner >= 0 || it->second.detached) return EINVAL;
  it->second.detached = true;
  return 0;
}

void remote_ended(worker*, ult* self) {
  require_exportable(self);
  const std::string error = export_error(self);
  char* lo = frame_lo(self);
  const auto len = static_cast<std::size_t>(self->stack.hi - lo);
  if (g->ops.is_foreign(self)) {
    g->remote_ends.fetch_add(1, std::memory_order_relaxed);
    // Dropped before the message leaves: the answer to it (a joiner here
    // gets the frame back) may be written into this range, and a drop after
    // it (a worker preempted in between) zeroed the result the joiner read.
    auto message = make(g->area->home_of(self), msg::ended, self, lo, len, 0, error);
    drop_range(self->stack.lo, self->stack.hi);
    queue(std::move(message));
    return;
  }
  // Home, with a joiner on another process.
  std::unique_ptr<outgoing> reply;
  {
    std::lock_guard hold(g->lock);
    auto it = g->homes.find(addr(self));
    if (it == g->homes.end() || it->second.remote_joiner < 0) die("ended in state remote, untracked", self);
    const int to = it->second.remote_joiner;
    g->homes.erase(it);
    self->join_state.store(sched::join_released, std::memory_order_release);
    reply = make(to, msg::done, self, lo, len, 0, error);
  }
  queue(std::move(reply));
}

void remote_release(ult* u) {
  // Dropped first: once the home has the stack back it may send another ULT
  // on it here, whose copy a late drop would zero.
  auto message = make(g->area->home_of(u), msg::free_stack, u);
  drop_range(u->stack.lo, u->stack.hi);
  queue(std::move(message));
}

// ---- The poller -------------------------------------------------------------

void handle(const header& h, const char* payload, int from, std::int64_t now) {
  switch (h.type) {
    case msg::steal_request: return serve_steal(from);
    case msg::steal_none: return steal_answered(false, now);
    case msg::ult:
      arrive(h, payload);
      return steal_answered(true, now);
    case msg::joiner: return arrive(h, payload);
    case msg::come_home: return go_to_child(ptr<ult>(h.descriptor), from);
    case msg::join_request: return home_join(ptr<ult>(h.descriptor), from);
    case msg::detach_request: return home_detach(ptr<ult>(h.descriptor));
    case msg::ended: return home_ended(h, payload);
    case msg::done: return joined(h, payload);
    case msg::free_stack: return home_free(ptr<ult>(h.descriptor));
    case msg::stop: return g->stop.store(true, std::memory_order_release);
  }
}

void receive_all(std::int64_t now) {
  for (int i = 0; i < 64; ++i) {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, message_tag, g->comm, &flag, &status);
    if (!flag) return;
    int bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    g->inbox.resize(static_cast<std::size_t>(bytes));
    MPI_Recv(g->inbox.data(), bytes, MPI_BYTE, status.MPI_SOURCE, message_tag, g->comm,
             MPI_STATUS_IGNORE);
    ++g->received;
    header h;
    std::memcpy(&h, g->inbox.data(), sizeof h);
    handle(h, g->inbox.data() + sizeof h, status.MPI_SOURCE, now);
  }
}

void send_all() {
  std::vector<std::unique_ptr<outgoing>> batch;
  {
    std::lock_guard hold(g->lock);
    batch.swap(g->outbox);
  }
  bool release_first = false;
  for (auto& o : batch) release_first |= o->carries_results;
  if (release_first) {
    g->releases.fetch_add(1, std::memory_order_relaxed);
    sd_fence();  // DAG consistency: what went before is at its homes
  }
  for (auto& o : batch) {
    MPI_Isend(o->bytes.data(), static_cast<int>(o->bytes.size()), MPI_BYTE, o->to, message_tag,
              g->comm, &o->request);
    ++g->sent_to[static_cast<std::size_t>(o->to)];
    g->in_flight.push_back(std::move(o));
  }
  std::erase_if(g->in_flight, [](std::unique_ptr<outgoing>& o) {
    int done = 0;
    MPI_Test(&o->request, &done, MPI_STATUS_IGNORE);
    return done != 0;
  });
}

void poll_locked(std::int64_t now) {
  receive_all(now);
  maybe_request_steal(now);
  send_all();
}

// The scheduler's hook (sched::remote_ops::wants_work): an idle worker wants
// work from other ranks now, not at the progress thread's next round.
// Messages themselves are only ever handled on the progress thread: MPI calls
// and DSM fences need more stack than a ULT's (a fence's MPI_Put overflowed a
// 64 KiB one) and must not run in a switch hook.
void wants_work(worker*) {
  const std::int64_t now = sched::monotonic_ns();
  if (now - g->last_poll_ns.load(std::memory_order_relaxed) < min_poll_gap_ns ||
      now < g->next_steal_ns_shared.load(std::memory_order_relaxed))
    return;
  g->last_poll_ns.store(now, std::memory_order_relaxed);
  nudge_progress();
}

void poll_from_progress() {
  std::lock_guard hold(g->poll_lock);
  poll_locked(sched::monotonic_ns());
}

// Waits, as a ULT (the rank's workers run meanwhile), until done() holds on
// the progress thread's side. Backs off to 2 ms between looks: on a rank
// with nothing to do, each look wakes a worker, and a worker that spins for
// work takes the core another rank computes on (4 ranks on 2 cores: the
// progress threads starved for 100 ms at a time when this looked every 50 µs).
template <class Done>
void poll_until(Done done) {
  std::int64_t pause_ns = 50'000;
  for (;;) {
    {
      std::lock_guard hold(g->poll_lock);
      if (done()) return;
    }
    nudge_progress();
    sched::sleep_until_ns(sched::monotonic_ns() + pause_ns);
    pause_ns = std::min<std::int64_t>(pause_ns * 2, 2'000'000);
  }
}

bool nothing_pending() {
  std::lock_guard hold(g->lock);
  return !g->steal_outstanding && g->outbox.empty() && g->in_flight.empty();
}

// Under poll_lock (arrivals and departures are handled under it): no ULT is
// live here but the main ULT, and nothing this rank sent is still on its way
// out or waits for an answer.
bool quiescent_here() {
  sched::runtime_state* rt = runtime();
  return (!rt || sched::quiescent_locally(rt)) && nothing_pending();
}

}  // namespace

void start_migration(const stack_area& area, int rank, int size) {
  g = new migration;
  g->area = &area;
  g->rank = rank;
  g->size = size;
  g->rng = 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(rank + 1);
  g->sent_to.assign(static_cast<std::size_t>(size), 0);
  MPI_Comm_dup(MPI_COMM_WORLD, &g->comm);
  name_mpi_failures(g->comm);
  g->ops.area_lo = addr(area.base);
  g->ops.area_hi = addr(area.slice_of(size));
  g->ops.mine_lo = addr(area.slice_of(rank));
  g->ops.mine_hi = addr(area.slice_of(rank + 1));
  g->ops.wait = &remote_wait;
  g->ops.detach = &remote_detach;
  g->ops.ended = &remote_ended;
  g->ops.release = &remote_release;
  g->ops.wants_work = &wants_work;
  stack::g_chunk_source = &map_stack_chunk;
  sched::g_remote = &g->ops;
  set_progress_hook(progress_hook::scheduler, &poll_from_progress);
}

void set_runtime(sched::runtime_state* rt) {
  std::lock_guard hold(g->poll_lock);  // the progress thread is between rounds
  g_ready_runtime.store(rt, std::memory_order_release);
}

void request_stop_all() {
  for (int r = 0; r < g->size; ++r)
    if (r != g->rank) queue(make(r, msg::stop, nullptr));
  g->stop.store(true, std::memory_order_release);
}

void wait_for_stop() {
  poll_until([] { return g->stop.load(std::memory_order_acquire); });
}

void quiesce() {
  // Global quiescence: no live ULT on any rank and no message in flight. The
  // main function's return is not it: a ULT whose future was dropped may
  // still run, here or elsewhere, and send. Waves of sums (Mattern's four
  // counters): each rank joins a wave only once it is quiescent itself (no
  // live ULT, none between its end and its last message, nothing queued or
  // unanswered; see quiescent_here) and adds what it sent and received so
  // far. Two waves in a row with the same sums, sent equal to received, mean
  // no message moved in between: every rank was quiescent at its second
  // contribution and nothing could wake it. Each wave's collective runs on
  // this thread (the main ULT, on the process's main stack) beside the
  // progress thread's point-to-point calls.
  std::uint64_t last[2] = {~std::uint64_t{0}, 0};
  for (;;) {
    std::uint64_t mine[2] = {0, 0}, all[2] = {0, 0};
    const std::int64_t report_at = sched::monotonic_ns() + unfinished_report_after_ns;
    bool reported = false;
    poll_until([&] {
      if (!quiescent_here()) {
        if (!reported && sched::monotonic_ns() > report_at) {
          reported = true;  // once: the program may be waiting on purpose
          std::fprintf(stderr,
                       "ito: dist: rank %d: the main function has returned, but ULTs still run "
                       "here after %lld s; the job ends when every rank's have finished:\n",
                       g->rank, static_cast<long long>(unfinished_report_after_ns / 1'000'000'000));
          ito::dump_ults(stderr);
        }
        return false;
      }
      for (std::uint64_t n : g->sent_to) mine[0] += n;
      mine[1] = g->received;
      return true;
    });
    MPI_Request wave;
    MPI_Iallreduce(mine, all, 2, MPI_UINT64_T, MPI_SUM, g->comm, &wave);
    poll_until([&] {
      int done = 0;
      MPI_Test(&wave, &done, MPI_STATUS_IGNORE);
      return done != 0;
    });
    if (all[0] == all[1] && all[0] == last[0] && all[1] == last[1]) return;
    last[0] = all[0];
    last[1] = all[1];
  }
}

void stop_migration() noexcept {
  set_progress_hook(progress_hook::scheduler, nullptr);
  sched::g_remote = nullptr;
  stack::g_chunk_source = nullptr;
  if (stats_requested()) {
    const migration_counts c = current_counts();
    std::fprintf(stderr,
                 "ito: dist: stats: rank %d: remote steals: %llu requests sent, %llu ULTs "
                 "received, %llu ULTs given; %llu remote joins, %llu ends away from home, %llu "
                 "stack bytes moved; %llu releases, %llu acquires\n",
                 g->rank, static_cast<unsigned long long>(c.steal_requests),
                 static_cast<unsigned long long>(c.ults_received),
                 static_cast<unsigned long long>(c.ults_sent),
                 static_cast<unsigned long long>(c.remote_joins),
                 static_cast<unsigned long long>(c.remote_ends),
                 static_cast<unsigned long long>(c.stack_bytes_moved),
                 static_cast<unsigned long long>(c.releases),
                 static_cast<unsigned long long>(c.acquires));
  }
  g_last_counts = current_counts();
  MPI_Comm_free(&g->comm);
  delete g;
  g = nullptr;
}

bool scheduler_running() noexcept { return g != nullptr; }

migration_counts current_counts() noexcept {
  migration_counts c;
  if (!g) return g_last_counts;
  c.steal_requests = g->steal_requests.load(std::memory_order_relaxed);
  c.ults_received = g->ults_received.load(std::memory_order_relaxed);
  c.ults_sent = g->ults_sent.load(std::memory_order_relaxed);
  c.remote_joins = g->remote_joins.load(std::memory_order_relaxed);
  c.remote_ends = g->remote_ends.load(std::memory_order_relaxed);
  c.stack_bytes_moved = g->stack_bytes_moved.load(std::memory_order_relaxed);
  c.releases = g->releases.load(std::memory_order_relaxed);
  c.acquires = g->acquires.load(std::memory_order_relaxed);
  return c;
}

}  // namespace ito::dist::detail
