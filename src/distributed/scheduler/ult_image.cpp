// SPDX-License-Identifier: Apache-2.0
#include "distributed/scheduler/ult_image.hpp"

#include <mpi.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "arch/sanitizer.hpp"
#include "distributed/dsm/dsm.hpp"
#include "distributed/scheduler/counts.hpp"
#include "distributed/scheduler/stack_area.hpp"
#include "sched/ult.hpp"

#if ITO_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace ito::dist::detail {
namespace {

// The fields of a home's copy of a descriptor that are this process's own:
// kept when bytes from another process overwrite it.
struct local_fields {
  sched::ult_registry* registry;
  sched::ult* prev;
  sched::ult* next;
  arch::sanitizer_fiber fiber;
  explicit local_fields(const sched::ult* u)
      : registry(u->registry), prev(u->registry_prev), next(u->registry_next), fiber(u->fiber) {}
  void restore(sched::ult* u) const {
    u->registry = registry;
    u->registry_prev = prev;
    u->registry_next = next;
    u->fiber = fiber;
    u->stack_from = sched::stack_origin::pool;
  }
};

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
  const local_fields keep(u);
  std::memcpy(ptr<char>(h.start), payload, h.len);
  keep.restore(u);
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
