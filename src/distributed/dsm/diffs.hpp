// SPDX-License-Identifier: Apache-2.0
// Twins and diffs: a page this rank writes away from its home keeps a twin
// (twin_frames.hpp) of what it held before, and its release sends the home
// exactly the bytes that differ from it (runs of bytes: by put, or with the
// release's others by message, diff_mail.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "distributed/dsm/dsm_bookkeeping.hpp"
#include "distributed/dsm/node_layout.hpp"

namespace ito::dist::detail {

inline void take_twin(dsm& d, std::size_t page) {
  std::memcpy(d.twins->take(page), copy_of(d, page), page_bytes);
}

// Makes a non-home page writable with a twin of what it holds now: modified,
// or pinned (`how`). With d.lock held: the twin first, so the page is not
// writable before it.
inline void make_modified(dsm& d, std::size_t page, page_state how,
                          writable_runs* batch = nullptr) {
  take_twin(d, page);
  make_writable(d, page, batch);
  if (how == pinned) d.state.pinned_copy(page);
  else d.state.copy_written(page);
  d.modified_list[d.modified_count++] = page;
}

// Sends page's changes against its twin to its home (all of it for a page
// overwritten whole); a pinned page (`keep_twin`) keeps a twin, what was
// sent. False if nothing changed.
bool send_diff(dsm& d, std::size_t page, bool keep_twin);

}  // namespace ito::dist::detail
