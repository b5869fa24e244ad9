// SPDX-License-Identifier: Apache-2.0
#include "distributed/scheduler/ult_image.hpp"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "arch/sanitizer.hpp"
#include "distributed/dsm/dsm.hpp"
#include "distributed/scheduler/counts.hpp"
#include "distributed/scheduler/stack_area.hpp"
#include "sched/join_word.hpp"
#include "sched/ult.hpp"

#if ITO_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace ito::dist::detail {
namespace {

// The bytes of a home's descriptor that an image coming back must never
// write, not even for the moment between a copy and a fix-up: threads here
// read them without the tables' lock. A joiner's first look at the join
// word is lock-free (a copy ended elsewhere carries `remote|ended`, which
// such a joiner took for another ULT's join: EINVAL, or for an end whose
// frame was still being written); the registry links belong to the
// registry's lock, under which neighbours update them; the sanitizer fiber
// and the stack's origin are this process's own.
struct byte_range {
  char* lo;
  std::size_t len;
};

template <class T>
byte_range field_bytes(T* field) {
  return {reinterpret_cast<char*>(field), sizeof(T)};
}

// Copies len bytes from `from` to `to`, leaving the bytes of `kept` (sorted,
// disjoint, inside the destination) as they are.
void copy_around(char* to, const char* from, std::size_t len, const byte_range* kept,
                 std::size_t n_kept) {
  char* at = to;
  for (std::size_t i = 0; i < n_kept; ++i) {
    const byte_range& k = kept[i];
    std::memcpy(at, from + (at - to), static_cast<std::size_t>(k.lo - at));
    at = k.lo + k.len;
  }
  std::memcpy(at, from + (at - to), len - static_cast<std::size_t>(at - to));
}

}  // namespace

void fail_for(const sched::ult* u, const char* what) {
  std::fprintf(stderr, "ito: dist: rank %d: ULT %llu: %s\n", wire::rank(),
               static_cast<unsigned long long>(u->id), what);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::_Exit(2);
}

char* frame_lo(const sched::ult* u) {
  char* f = static_cast<char*>(u->frame);
  char* d = reinterpret_cast<char*>(const_cast<sched::ult*>(u));
  return f && f < d ? f : d;
}

void write_home_copy(sched::ult* u, const header& h, const char* payload) {
  byte_range kept[] = {
      {sched::join_word::bytes_of(u), sched::join_word::size_in_bytes},
      field_bytes(&u->stack_from),
      field_bytes(&u->fiber),
      {reinterpret_cast<char*>(&u->registry),
       static_cast<std::size_t>(reinterpret_cast<char*>(&u->registry_next + 1) -
                                reinterpret_cast<char*>(&u->registry))},
  };
  std::sort(std::begin(kept), std::end(kept),
            [](const byte_range& a, const byte_range& b) { return a.lo < b.lo; });
  char* to = ptr<char>(h.start);
  if (reinterpret_cast<char*>(u) < to || reinterpret_cast<char*>(u + 1) > to + h.len)
    fail_for(u, "an image of it came back without its descriptor");
  copy_around(to, payload, h.len, kept, std::size(kept));
}

void write_foreign_copy(sched::ult* u, const header& h, const char* payload, const void* lo,
                        const void* hi) {
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

// si_fence alone keeps every Modified page (written here since the last
// release) as it is, stale in the bytes others released; sd_fence then
// si_fence leaves a window in which another ULT writes a page again. Both at
// once, under the DSM's lock, close it.
void acquire_for_ult() {
  bump(counts().acquires);
  release_and_invalidate();
}

}  // namespace ito::dist::detail
