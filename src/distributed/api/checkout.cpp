// SPDX-License-Identifier: Apache-2.0
#include "distributed/api/checkout.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "distributed/dist_state.hpp"
#include "distributed/dsm/dsm.hpp"
#include "distributed/large_stack.hpp"
#include "sched/ult.hpp"

namespace ito::dist::detail {

// A ULT holding a checkout stays on this process (its pins are this rank's):
// counted like a held lock (sched::ult::must_stay). MPI needs another stack
// than a ULT's (large_stack.hpp). Bringing pages in waits for other ranks:
// delegated, while the worker runs other ULTs. A range held here already
// (within a node: always) is checked out on this OS thread, on the worker's
// signal stack: no page comes in, but writing a page this rank homes posts
// write notices to its readers (an accumulate and a flush, under the DSM's
// std::mutex, which a delegated call could not hold), and that flush's
// progress may run MPICH's 128 KiB handler (it overflowed the ULT's stack:
// bench_dist_sort_json, rank nodes with checkout, ~1 run in 60).
// Counted before the pages are pinned: the MPI part is delegated, and the
// ULT, woken when its pages are in, waits in a deque where another rank's
// thief could take it before it ran again (its checkin then found no pins
// on the rank it had moved to).
void check_out(void* p, std::size_t bytes, access how) {
  require("ito::dist::checkout");
  sched::ult* self = sched::current_ult();
  if (self) ++self->must_stay;
  try {
    bool held = false;
    on_the_signal_stack([&] { held = check_out_held_pages(p, bytes, how); });
    if (!held) on_a_large_stack([=] { check_out_pages(p, bytes, how); });
  } catch (...) {
    if (self) --self->must_stay;
    throw;
  }
}

// No MPI: a checkin only counts pins down.
void check_in_or_throw(void* p, std::size_t bytes) {
  require("ito::dist::checkout's checkin");
  unpin(p, bytes);
  if (sched::ult* self = sched::current_ult(); self && self->must_stay) --self->must_stay;
}

void check_in(void* p, std::size_t bytes) noexcept {
  try {
    check_in_or_throw(p, bytes);
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "ito: dist: the checkout of %zu bytes at %p ended after the distributed "
                 "runtime it was taken in (destroy every ito::dist::checkout before the "
                 "runtime): %s\n",
                 bytes, p, e.what());
    std::abort();
  }
}

}  // namespace ito::dist::detail
