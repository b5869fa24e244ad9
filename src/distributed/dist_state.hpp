// SPDX-License-Identifier: Apache-2.0
// The distributed runtime's per-process state (one per process at a time).
#pragma once

#include <cstddef>

#include "distributed/node_memory.hpp"

namespace ito::dist::detail {

// The iso-address region: one memfd mapped twice. `view` is the application's
// view, at the same address on every rank, whose page protections the DSM
// changes; `alias` is an always-accessible mapping of the same pages, the only
// one MPI ever sees (MPI touching a protected page deadlocks or crashes it).
// ITO_DSM_GLOBAL variables (dsm_globals.hpp) are DSM pages too: their section,
// wherever the executable has it, maps the memfd's `globals_bytes` after the
// region's `bytes`; the alias covers both.
struct iso_region {
  char* view = nullptr;
  char* alias = nullptr;
  std::size_t bytes = 0;
  char* globals = nullptr;  // the ito_dsm section, page-aligned, or null
  std::size_t globals_bytes = 0;
  int memfd = -1;  // this rank's copies (what the view maps until a page's home is known)
  // The node's memory (node_memory.hpp): the same file and alias as above
  // unless pages homed on this node and on others live apart.
  int node_memfd = -1;
  char* node_alias = nullptr;
  // Address space reserved (no access) at node_alias + tail_at, the page
  // after its region and globals: the DSM maps its sharing words there, so
  // that one window covers the pages and the words (dsm.hpp,
  // sharing_bytes_for).
  std::size_t tail_at = 0;
  std::size_t tail_bytes = 0;
};

struct dist_state {
  bool owns_mpi = false;     // MPI_Init_thread was ours: so is MPI_Finalize
  bool check_races = false;  // ITO_DSM_CHECK (race_check.hpp)
  std::size_t fault_block_pages = 1;  // ITO_DSM_BLOCK, in pages
  int rank = -1;
  int size = 0;
  node_info node;
  iso_region region;
};

// The running distributed runtime's state, or null.
dist_state* current() noexcept;

// The state of the runtime, or usage_error(EPERM) naming `what`.
dist_state& require(const char* what);

// ITO_STATS (as the scheduler reads it: 1, true or yes) when the runtime
// started: the DSM and the distributed scheduler print their counters when
// they stop.
bool stats_requested() noexcept;

}  // namespace ito::dist::detail
