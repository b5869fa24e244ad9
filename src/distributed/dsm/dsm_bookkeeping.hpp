// SPDX-License-Identifier: Apache-2.0
// This rank's DSM (dsm.hpp says what it does): the one struct every room of
// it works on, written only with its lock held. Its fields, by room:
// the node layout (node_layout.hpp), the directory cache (directory.hpp),
// the readers and boards (fetch.hpp, release.hpp, acquire.hpp), the pages'
// states (page_state.hpp, their one owner), pins (pins.cpp), twins and the
// release's lists (diffs.hpp, release.hpp), scratch and statistics.
#pragma once

#include <signal.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "distributed/dsm/page_board.hpp"
#include "distributed/dsm/page_state.hpp"
#include "distributed/dsm/target_flush.hpp"
#include "distributed/dsm/twin_frames.hpp"
#include "ito/dist.hpp"

namespace ito::dist::detail {

struct mailbox;  // diff_mail.cpp

inline constexpr std::size_t page_bytes = 4096;

// Process-local bookkeeping, in MAP_NORESERVE arrays indexed by page (only the
// entries of touched pages take memory). Written only with `lock` held.
struct dsm {
  // The whole job is one node (node_memory.hpp): every rank maps the one
  // copy read-write, so there is no protocol: no fault, twin or message, and
  // a fence is a memory fence. Only pins are counted (unpin's errors).
  bool one_copy = false;
  // Several nodes, some of several ranks: pages homed on this node are
  // mapped from node_fd (node_alias), others from this rank's own memory.
  bool node_homes = false;
  char* view = nullptr;
  char* alias = nullptr;       // this rank's memory: copies of pages homed elsewhere
  char* node_alias = nullptr;  // its node's (the same as alias unless node_homes)
  int node_fd = -1;
  int node = 0;
  std::vector<int> node_of_rank;
  std::vector<std::vector<int>> ranks_of_node;
  std::size_t pages = 0;         // the region's, then the globals' (pages are numbered so)
  std::size_t region_pages = 0;  // pages of the region proper; the globals' follow
  char* globals = nullptr;       // where the globals' pages are in the program (or null)
  int rank = 0;
  int ranks = 1;
  // The transport's data window (transport.hpp) is over every rank's node
  // alias (the region and the globals), then its sharing words (below): one
  // window, so that a rank's or_words on a home's words are ordered before
  // its read_words of a page there (a first fetch: one round trip; MPI orders
  // accumulates to one target only within a window). Its directory window is
  // over every rank's managed directory entries:
  std::int64_t* entries = nullptr;   // this rank's: home + 1 of page rank + k * ranks
  std::size_t entry_count = 0;
  // The sharing words, in the data window from byte sharing_at on: at word
  // p, the readers of page p if this rank is its home (a bit per rank,
  // rank % 64; in the node's memory), then two boards: `stale` (write
  // notices: pages others wrote that this rank may hold copies of) and
  // `read_elsewhere` (pages homed on this node that another rank began to
  // read).
  std::size_t sharing_at = 0;
  std::size_t readers_words = 0;  // whole pages of words (node_memory.hpp)
  std::uint64_t* sharing_words = nullptr;
  std::size_t sharing_count = 0;
  page_board stale, read_elsewhere;
  board_posts posts;
  target_set targets;  // ranks a batch of operations went to, flushed one by one (target_flush.hpp)
  page_states state;   // each page's (page_state.hpp: its one owner)
  std::int32_t* home_plus1 = nullptr;  // cache of the directory
  std::uint8_t* registered = nullptr;  // 1 once this rank is among the page's readers
  std::uint32_t* pins = nullptr;       // pins of the page not yet undone (pin/unpin)
  std::unique_ptr<twin_frames> twins;  // of modified, pinned and hot pages
  std::size_t* modified_list = nullptr;  // pages now modified, pinned or home_hot
  std::size_t modified_count = 0;
  std::size_t* written = nullptr;      // a release's pages to send write notices for
  std::size_t written_count = 0;
  std::uint64_t* written_readers = nullptr;  // and their readers
  std::uint8_t* noticed = nullptr;     // release_and_invalidate: modified pages left invalid
  std::size_t* noticed_list = nullptr;
  std::size_t* dropped = nullptr;      // an acquire's shared copies to drop, a run at a time
  // Scratch of a checkout or a block fault (nothing allocated on the fault
  // path), as long as the DSM and touched only as far as a range needs: the
  // range's directory entries, the words read from the directory, and copies
  // of this rank's readers bit (the first reader_bits_filled are written).
  std::int64_t* range_entries = nullptr;
  std::int64_t* range_words = nullptr;
  std::uint64_t* reader_bits = nullptr;
  std::size_t reader_bits_filled = 0;
  dsm_stats stats;
  bool check_races = false;   // ITO_DSM_CHECK: read the home's bytes back before each diff
  bool mail_open = false;  // this release may send diffs by message (diff_mail.hpp)
  bool mail = false;       // and sends all of them so, one message per home
  std::size_t fault_block_pages = 1;  // ITO_DSM_BLOCK: what a fault brings in, in pages
  char master[page_bytes];    // a copy of the home's page: race checks, merges
  char snapshot[page_bytes];  // a pinned page as its release compares it
  int run_at[page_bytes / 2];  // send_diff's runs of changed bytes: where, how long
  int run_length[page_bytes / 2];
  std::mutex lock;
  struct sigaction previous {};
  mailbox* mail_state = nullptr;  // diff mail's state, while it is up (diff_mail.hpp)
};

// The words of the sharing area (readers masks, two boards) for `pages` pages.
std::size_t sharing_words_for(std::size_t pages) noexcept;
// Makes d's arrays, twins and boards from its sizes (pages, ranks,
// fault_block_pages) and d.sharing_words, where the caller maps the sharing
// area (entry_count, readers_words and sharing_count are set here); no MPI.
void reserve_bookkeeping(dsm& d);
// Gives back what reserve_bookkeeping made.
void release_bookkeeping(dsm& d) noexcept;

// This process's DSM, from start_dsm to stop_dsm (null otherwise): for the
// entry points and the fault handler only; the rooms take their dsm&.
extern std::atomic<dsm*> g_dsm;

// The running DSM; usage_error naming `what` without one.
dsm& require_dsm(const char* what);
// The pages [first, last] that p..p+bytes covers; usage_error outside the region.
void page_range(dsm& d, const void* p, std::size_t bytes, const char* what, std::size_t* first,
                std::size_t* last);

}  // namespace ito::dist::detail
