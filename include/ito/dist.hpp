// SPDX-License-Identifier: Apache-2.0
// ito's distributed mode: one program on many processes (MPI ranks), launched
// with `mpirun -n P ./prog` / `mpiexec -n P ./prog`. Link ito::dist (CMake) or
// `pkg-config ito-dist`. docs/DISTRIBUTED.md describes it.
//
//   int main(int argc, char** argv) {
//     ito::dist::runtime dist(&argc, &argv);   // every rank
//     if (ito::dist::rank() == 0) ...;
//     ito::dist::barrier();
//   }
//
// Every rank reserves the same range of virtual addresses (the iso-address
// region, ITO_DSM_SIZE bytes, default 64 GiB, reserved, not committed): data
// placed there has one address on every process.
#pragma once

#include "ito/cxx20.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace ito::dist {

struct options {
  // The region's size in bytes; 0: ITO_DSM_SIZE, else 64 GiB.
  std::size_t region_bytes = 0;
};

// Starts the distributed runtime on this rank: initialises MPI with
// MPI_THREAD_MULTIPLE unless the program did already (then it must have asked
// for that level), and reserves the region at an address every rank agrees
// on. Before MPI starts, a rank whose address-space layout is randomised
// re-executes itself with randomisation off, so that code and static data
// have one address on every rank too. Collective: every rank constructs one,
// and destroys it (which finalises MPI if the runtime initialised it).
// Errors: config_error for a bad ITO_DSM_SIZE or options, usage_error for a
// second runtime; a region no address fits on every rank stops the program
// with an `ito: dsm:` message (exit status 2), as a bad environment does.
class runtime {
 public:
  explicit runtime(int* argc = nullptr, char*** argv = nullptr, const options& o = {});
  ~runtime();
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;
};

// This process's rank and the number of ranks. usage_error(EPERM) outside a
// distributed runtime.
int rank();
int size();
// Ranks that map one copy of memory form a node (docs/DISTRIBUTED.md, "Nodes"):
// this rank's node, 0 .. nodes() - 1, and the number of nodes. Within a node
// the DSM region is plain shared memory; between nodes, the page protocol.
// ITO_DIST_NODE=rank makes every rank a node of its own.
int node();
int nodes();
// Waits until every rank has called it, with a release fence before and an
// acquire fence after (release, acquire): what any rank wrote before the
// barrier is seen by every rank after it.
void barrier();

// What this process's DSM did since the runtime started (zero without one).
struct dsm_stats {
  std::uint64_t fetches = 0;        // pages fetched from their home (read or write misses)
  std::uint64_t diffs_sent = 0;     // pages whose changes went to their home at a release
  std::uint64_t notices_sent = 0;   // write notices to other readers of pages written here
  std::uint64_t invalidations = 0;  // copies dropped (or merged) at acquires after a notice
  std::uint64_t home_write_faults = 0;  // writes faulted on this rank's pages others read
  std::uint64_t fetch_transfers = 0;  // transfers that fetched a checkout's pages (one per run
                                      // of pages homed on one rank)
  std::uint64_t diff_transfers = 0;   // transfers that carried diffs: one per home per release
                                      // (one per page for releases of one or two pages, or
                                      // without a progress thread)
  std::uint64_t twin_pages_kept = 0;  // now: free twin frames whose memory is kept for the
                                      // next page written (at most 16 MiB worth)
};
dsm_stats current_dsm_stats() noexcept;

// What the distributed scheduler did in this process during the last (or
// the running) start_main_thread; ITO_STATS=1 prints it at the end of each.
struct scheduler_stats {
  std::uint64_t steal_requests = 0;  // remote steal requests this rank sent
  std::uint64_t steal_requests_in_node = 0;  // of those, to a rank of its own node (asked
                                             // first where there are other nodes)
  std::uint64_t ults_received = 0;   // ULTs that arrived here, stolen or placed
  std::uint64_t ults_sent = 0;       // ULTs other ranks took from here
  std::uint64_t ults_placed = 0;     // new ULTs sent to their data's rank (create_thread(near))
  std::uint64_t remote_joins = 0;    // joins of a ULT whose end another process knew
  std::uint64_t remote_ends = 0;     // ULTs that ended here, away from their home
  std::uint64_t stack_bytes_moved = 0;  // stack bytes this rank sent in steals
  std::uint64_t releases = 0;  // release (sd_fence) before a ULT, its end or a result left
  std::uint64_t acquires = 0;  // release-and-invalidate before a migrated ULT or a joiner ran
};
scheduler_stats last_scheduler_stats() noexcept;

// Rethrown at the join of a ULT that threw on another process: the exception
// object lived in that process's memory, so its type name and what() travel
// instead (type_name() is the mangled name's demangled form).
class remote_error : public std::runtime_error {
 public:
  remote_error(std::string type_name, const std::string& what)
      : std::runtime_error(what), type_name_(std::move(type_name)) {}
  const char* type_name() const noexcept { return type_name_.c_str(); }

 private:
  std::string type_name_;
};

namespace detail {
void run_main_thread(void (*body)(void*), void* arg, void* result, std::size_t result_bytes);
}  // namespace detail

// The distributed scheduler (docs/DISTRIBUTED.md). Called by every rank: rank 0 runs
// fn(args...) as its main ULT; every rank's ITO_WORKERS workers run ULTs and
// steal them from the other ranks, so the ULTs fn creates (ito::create_thread,
// ito::lowlevel::fork, ...) migrate between processes. Returns fn's result on rank 0,
// and on every rank when the result is trivially copyable (other ranks get a
// default-constructed one otherwise). An exception from fn is rethrown on
// rank 0. Creates the distributed runtime if the program has none (do that
// first thing in main: the runtime may re-execute the program without ASLR).
//
// Fences follow the DAG (docs/DISTRIBUTED.md): a ULT sees everything that
// happened before its creation and everything its joined children did. A ULT
// that may migrate must not keep on its stack pointers to process-local
// memory (heap, thread_local, another ULT's stack); shared data goes in the
// DSM (alloc, alloc_collective). A ULT whose result is not trivially
// copyable stays on the process that created it, and its joiner goes there to
// take the result; an exception arrives elsewhere as remote_error. A ULT never
// moves while it holds a lock (or waits inside one). The run ends once every
// ULT has finished on every rank, detached ones included. Collective calls
// (barrier, alloc_collective) inside fn are usage_error(EPERM): only rank 0
// runs it. MPI-calling functions (fences, pin, barrier) called from a ULT run
// on an OS thread of ito's pool, with the stack MPI needs.
template <class F, class... A>
auto start_main_thread(F&& fn, A&&... args) {
  using R = std::invoke_result_t<F, A...>;
  if constexpr (std::is_void_v<R>) {
    auto call = [&] { std::invoke(std::forward<F>(fn), std::forward<A>(args)...); };
    detail::run_main_thread([](void* c) { (*static_cast<decltype(call)*>(c))(); }, &call, nullptr,
                            0);
  } else if constexpr (std::is_trivially_copyable_v<R>) {
    alignas(R) unsigned char bytes[sizeof(R)] = {};
    auto call = [&] { ::new (bytes) R(std::invoke(std::forward<F>(fn), std::forward<A>(args)...)); };
    detail::run_main_thread([](void* c) { (*static_cast<decltype(call)*>(c))(); }, &call, bytes,
                            sizeof(R));
    return *std::launder(reinterpret_cast<R*>(bytes));
  } else {
    static_assert(std::is_default_constructible_v<R>,
                  "ito::dist::start_main_thread: ranks other than 0 return R{}: R needs a default "
                  "constructor (or make it trivially copyable)");
    R result{};
    auto call = [&] { result = std::invoke(std::forward<F>(fn), std::forward<A>(args)...); };
    detail::run_main_thread([](void* c) { (*static_cast<decltype(call)*>(c))(); }, &call, nullptr,
                            0);
    return result;
  }
}

// --- The distributed shared memory (docs/DISTRIBUTED.md) -------------------
// Memory in the region is shared by all ranks, page by page, for programs
// free of data races: what a rank wrote is sent at its next release()
// (sd_fence), and another rank sees it after its own acquire() (si_fence) that
// follows in time (a barrier, or a message, orders the two).

// From this rank's heap in the region: no communication. Any rank may free a
// block: one of another rank's heap goes back to it by message (after this
// rank's writes are released), which needs the progress thread. usage_error
// for a pointer that is not from alloc or a double free on this rank's heap;
// a double free of another rank's block ends the job there with a message.
// bad_alloc when this rank's part is full.
void* alloc(std::size_t bytes);
void free(void* p);
// Where a collective array's pages have their homes (the node whose copy is
// the master: a rank reads and writes pages homed on its node with plain
// loads and stores, others through the page protocol). `block` (the default):
// the array cut in one contiguous part per rank, in rank order, so that a
// loop split the same way finds its part at home whoever initialised it;
// `cyclic`: blocks of `block_bytes` (rounded up to whole pages) dealt to the
// ranks in turn; `first_touch`: each page's home is the first rank to touch
// it. Arrays smaller than a page are first touch whatever is asked.
struct distribution {
  enum class kind { block, cyclic, first_touch };
  kind how = kind::block;
  std::size_t block_bytes = 0;  // cyclic only

  static constexpr distribution block() noexcept { return {}; }
  static constexpr distribution cyclic(std::size_t block_bytes) noexcept {
    return {kind::cyclic, block_bytes};
  }
  static constexpr distribution first_touch() noexcept { return {kind::first_touch, 0}; }
};

// Collective: every rank calls it with the same size and distribution, in the
// same order, and gets the same pointer (page-aligned from a page up). Lives
// as long as the runtime. usage_error(EINVAL) for sizes or distributions that
// differ between ranks, or cyclic with block_bytes 0.
void* alloc_collective(std::size_t bytes, distribution where = distribution::block());

// A global or static variable in the DSM: one copy shared by every rank under
// the same fences as alloc'ed memory, initialised as the program initialises
// it (every rank runs the same initialisation):
//   ITO_DSM_GLOBAL long histogram[256];
// Linking with ito::dist (or `pkg-config --libs ito-dist`) adds the linker
// script that puts these on pages of their own. Not for const variables.
// Before the runtime starts and after it ends they are this rank's plain
// memory (after: holding what this rank last saw of them).
#ifndef ITO_DSM_GLOBAL
#define ITO_DSM_GLOBAL __attribute__((section("ito_dsm"), used))
#endif

// The DSM's fences. release(): this rank's writes since its last release
// reach their pages' homes. acquire(): this rank's copies of pages others may
// have written are dropped, so that later reads see what they released.
inline void release();
inline void acquire();
// The same fences without waiting: the fence runs on a thread of ito's
// OS-thread pool and `done` runs there once it is complete (an exception
// from `done` is reported on stderr, not propagated). Until then its effect
// is not guaranteed; stores the caller makes meanwhile may go with this
// release or the next. The runtime's destructor waits for every one.
// usage_error(EPERM) outside a distributed runtime.
inline void release_async(std::function<void()> done);
inline void acquire_async(std::function<void()> done);
// The paper's names for the same fences (Itoyori's sd_fence: self-downgrade,
// the release; si_fence: self-invalidate, the acquire). Not deprecated.
void sd_fence();
void si_fence();
void sd_fence_async(std::function<void()> done);
void si_fence_async(std::function<void()> done);
inline void release() { sd_fence(); }
inline void acquire() { si_fence(); }
inline void release_async(std::function<void()> done) { sd_fence_async(std::move(done)); }
inline void acquire_async(std::function<void()> done) { si_fence_async(std::move(done)); }
// Keeps the pages holding [p, p+bytes) accessible, never faulting, across
// fences until unpin: for memory MPI or a signal handler touches. This rank's
// writes go out at every release; what other ranks released to those pages is
// merged in at every acquire. Pins are counted per page; unpin undoes one pin
// of each page it covers, and is usage_error(EINVAL) if one is not pinned.
void pin(void* p, std::size_t bytes);
void unpin(void* p, std::size_t bytes);

// Explicit access to a range of the DSM, in the spirit of Itoyori's
// checkout/checkin: a loop over DSM data without a fault per page.
//
//   ito::dist::checkout in(a + lo, n, ito::dist::access::read);
//   ito::dist::checkout out(b + lo, n, ito::dist::access::write);
//   for (std::size_t i = 0; i < n; ++i) out[i] = f(in[i]);
//
// The constructor brings the range in with one transfer per run of pages
// homed on one node (not one per page) and pins it: until the object is
// destroyed (the checkin) the range is accessible with plain loads and
// stores, never faulting, and fences keep it fresh as they do a pin's
// pages (what this rank writes goes out at each release; what others
// released is merged in at each acquire). `write` promises that every byte
// of the range is written before the checkin: its whole pages are then not
// fetched, and go out whole at the next release. Within a node (the region
// shared) a checkout costs no message. A ULT holding a checkout does not
// migrate. Checkouts nest and overlap (pins are counted per page). Errors:
// usage_error(EINVAL) for a range outside the region, usage_error(EPERM)
// without a runtime; a checkout still alive when the runtime ends stops the
// program with a message at its checkin.
enum class access { read, write, read_write };

namespace detail {
void check_out(void* p, std::size_t bytes, access how);
void check_in(void* p, std::size_t bytes) noexcept;
}  // namespace detail

template <class T>
class checkout {
 public:
  // An empty range checks nothing out.
  checkout(T* p, std::size_t count, access how) : p_(p), count_(count), held_(count != 0) {
    if (held_) detail::check_out(const_cast<std::remove_const_t<T>*>(p), count * sizeof(T), how);
  }
  ~checkout() {
    if (held_) detail::check_in(const_cast<std::remove_const_t<T>*>(p_), count_ * sizeof(T));
  }
  checkout(checkout&& o) noexcept
      : p_(o.p_), count_(o.count_), held_(std::exchange(o.held_, false)) {}
  checkout& operator=(checkout&&) = delete;
  checkout(const checkout&) = delete;
  checkout& operator=(const checkout&) = delete;

  T* data() const noexcept { return p_; }
  std::size_t size() const noexcept { return count_; }
  T& operator[](std::size_t i) const noexcept { return p_[i]; }
  T* begin() const noexcept { return p_; }
  T* end() const noexcept { return p_ + count_; }

 private:
  T* p_;
  std::size_t count_;
  bool held_;
};

// The iso-address region: the same base and size on every rank.
struct region_info {
  void* base;
  std::size_t bytes;
};
region_info region();

}  // namespace ito::dist
