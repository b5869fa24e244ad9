// SPDX-License-Identifier: Apache-2.0
// The fences (dsm.hpp): a release (release.hpp), an acquire (acquire.hpp),
// or both as one step; with one copy for the whole job, a memory fence.
#include <atomic>
#include <cstddef>
#include <mutex>

#include "distributed/dsm/acquire.hpp"
#include "distributed/dsm/dsm.hpp"
#include "distributed/dsm/dsm_bookkeeping.hpp"
#include "distributed/dsm/release.hpp"

namespace ito::dist::detail {

void sd_fence() {
  dsm& d = require_dsm("sd_fence");
  if (d.one_copy) return std::atomic_thread_fence(std::memory_order_seq_cst);
  std::lock_guard hold(d.lock);
  release(d);
}

void si_fence() {
  dsm& d = require_dsm("si_fence");
  if (d.one_copy) return std::atomic_thread_fence(std::memory_order_seq_cst);
  std::lock_guard hold(d.lock);
  take_write_notices(d);
}

void release_and_invalidate() {
  dsm& d = require_dsm("release_and_invalidate");
  if (d.one_copy) return std::atomic_thread_fence(std::memory_order_seq_cst);
  std::lock_guard hold(d.lock);
  // The notices first: a modified page that another rank wrote too is left
  // invalid by the release, so that a store from another thread of this
  // rank fetches what the other rank released rather than twinning a stale
  // copy.
  std::size_t noticed = 0, to_drop = 0;
  // A modified page checked out to read must not fault: it is merged now,
  // as an acquire does, and goes out shared.
  d.stale.take([&](std::size_t page) {
    if (d.state.of(page) == modified && !d.pins[page]) {
      d.noticed[page] = 1;
      d.noticed_list[noticed++] = page;
    } else {
      take_notice(d, page, &to_drop);
    }
  });
  drop_copies(d, to_drop);
  release(d);
  for (std::size_t k = 0; k < noticed; ++k) d.noticed[d.noticed_list[k]] = 0;
  take_write_notices(d);  // those that landed during the release
}

}  // namespace ito::dist::detail
