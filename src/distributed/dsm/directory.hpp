// SPDX-License-Identifier: Apache-2.0
// The directory: each page's home, kept by its manager rank (page % ranks,
// word page / ranks of the directory window) and cached here. The first rank
// to ask for a page that has none becomes its home (first touch), unless a
// collective array placed it (place_pages).
#pragma once

#include <cstddef>
#include <cstdint>

#include "distributed/dsm/dsm_bookkeeping.hpp"

namespace ito::dist::detail {

// Collective, once the directory window exists: whether this rank's own
// directory words take their compare-and-swap in memory rather than through
// MPI (Open MPI before 4.1.5 only: directory.cpp says why).
void decide_own_directory_cas();

// Asks the directory for `page`'s home, claiming it if it has none: the
// answer lands in *found once the directory window is flushed.
void ask_directory(dsm& d, std::size_t page, const std::int64_t* mine, std::int64_t* found);
// Records the directory's answer for `page` (0: it had none, now ours).
int settle_home(dsm& d, std::size_t page, std::int64_t found);
// home_of's way when the cache has no answer: one round trip.
int ask_home(dsm& d, std::size_t page);

// The page's home: the cached answer, else the directory's (the first rank to
// ask becomes the home: first touch).
inline int home_of(dsm& d, std::size_t page) {
  if (const std::int32_t h = d.home_plus1[page]) return h - 1;
  return ask_home(d, page);
}

// The homes of [first, last] that this rank does not know yet, learnt all at
// once (one round trip per directory rank).
void learn_homes(dsm& d, std::size_t first, std::size_t last);

}  // namespace ito::dist::detail
