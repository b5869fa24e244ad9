// SPDX-License-Identifier: Apache-2.0
// A page's state in this rank's DSM, and its one owner: every transition is
// a named function here, and nothing else writes the state array, nor the
// overwrite marks (scripts/check-architecture.sh checks). The callers do
// what goes with a transition (the page's access, its twin, the lists), in
// the order their comments give; the state is written last, as before.
//
// Away from its home a page is invalid, shared (a read-only copy), modified
// (written since the last release, with a twin) or pinned. On its home it is
// home (read-write, no other rank reads it), home_watched (others read it:
// read-only, so that a write faults and is known) or home_hot (written since
// others read it, or pinned: read-write, with a twin that each release of
// the home compares it with to know whether to notify). A hot page that a
// release finds unchanged is watched again (unless pinned): a home whose
// arrays others read would otherwise compare every page it ever wrote at
// every release (a sort at two ranks: ~1,000 pages, 4 MiB, per release,
// 7-13 % of its time), where a page written again costs one fault (~3 us).
// With node homes, a page homed on another rank of this node that this rank
// has only read is home_read (read-only: a write faults and makes it home),
// so that a rank which only reads its node's pages notifies nobody when
// others begin to read them.
//
// Beside the state: a page is checked out (pins.cpp) while it has pins, and
// a modified page that a write checkout overwrites whole is marked
// overwritten: all of it goes at the next release, whatever its twin, and
// no merge touches it until then.
//
//   A page homed on another node (a copy in this rank's own memory):
//
//   invalid ──fetched──▶ shared ──copy_written──▶ modified ──released_modified──▶ shared
//      ▲                  │      (a write fault)     │
//      └─────dropped──────┘ (a notice)               └─released_modified (noticed)─▶ invalid
//   invalid ──copy_written──▶ modified     invalid ──overwritten_whole──▶ modified, overwritten
//   shared, modified ──pinned_copy──▶ pinned ──unpinned──▶ modified
//   pinned ──released_pinned──▶ pinned, no longer overwritten
//
//   A page homed on this node (this rank's, or with node homes a node
//   mate's, mapped from the node's memory):
//
//   invalid ──touched_home──▶ home ──watched──▶ home_watched ──heated──▶ home_hot
//     │                        ▲                  ▲                         │
//     │                        └──read_written──┐ └─────cooled──────────────┘
//     └──touched_read──▶ home_read ─────────────┘
//   home_read ──watched──▶ home_watched;  home, home_read ──heated (a pin)──▶ home_hot
//
//   transition          from                            to
//   fetched             invalid                         shared
//   copy_written        invalid, shared                 modified
//   overwritten_whole   invalid                         modified, overwritten
//   pinned_copy         shared, modified                pinned
//   unpinned            pinned                          modified
//   released_modified   modified                        shared (invalid if noticed)
//   released_pinned     pinned                          pinned, not overwritten
//   dropped             shared                          invalid
//   touched_home        invalid                         home
//   touched_read        invalid                         home_read
//   read_written        home_read                       home
//   watched             home, home_read                 home_watched
//   heated              home, home_read, home_watched   home_hot
//   cooled              home_hot                        home_watched
//
// (place_pages: a collective array's pages on this node go invalid ─▶ home
// at once, by touched_home.)
#pragma once

#include <cstddef>
#include <cstdint>

#include "distributed/dsm/reserved_array.hpp"

namespace ito::dist::detail {

enum page_state : std::uint8_t {
  invalid = 0,
  shared,
  modified,
  pinned,
  home,
  home_watched,
  home_hot,
  home_read,
};

// The states of the pages [0, pages), in a MAP_NORESERVE array indexed by
// page (only the entries of touched pages take memory). Written only with
// the DSM's lock held; read through of() and overwritten().
class page_states {
 public:
  void reserve(std::size_t pages) {
    state_ = reserve_array<std::uint8_t>(pages);
    overwrite_ = reserve_array<std::uint8_t>(pages);
  }
  void release(std::size_t pages) noexcept {
    release_array(state_, pages);
    release_array(overwrite_, pages);
  }

  page_state of(std::size_t page) const noexcept { return static_cast<page_state>(state_[page]); }
  // A page a write checkout overwrites whole: its diff is all of it.
  bool overwritten(std::size_t page) const noexcept { return overwrite_[page] != 0; }

  // Away from the home.
  // invalid -> shared: a copy fetched to read (a fault, a checkout, a block).
  void fetched(std::size_t page) noexcept { state_[page] = shared; }
  // invalid or shared -> modified: a write fault, after the twin.
  void copy_written(std::size_t page) noexcept { state_[page] = modified; }
  // invalid -> modified, marked overwritten: a write checkout of the whole
  // page (neither fetched nor twinned).
  void overwritten_whole(std::size_t page) noexcept {
    state_[page] = modified;
    overwrite_[page] = 1;
  }
  // shared or modified -> pinned: a pin or a checkout to write.
  void pinned_copy(std::size_t page) noexcept { state_[page] = pinned; }
  // pinned -> modified: its last pin undone.
  void unpinned(std::size_t page) noexcept { state_[page] = modified; }
  // modified -> shared, or invalid where another rank's notice came during
  // release_and_invalidate: its diff is at the home.
  void released_modified(std::size_t page, bool noticed) noexcept {
    overwrite_[page] = 0;
    state_[page] = noticed ? invalid : shared;
  }
  // pinned -> pinned: its diff is at the home, its twin what was sent.
  void released_pinned(std::size_t page) noexcept { overwrite_[page] = 0; }
  // shared -> invalid: a write notice for a copy nobody pinned.
  void dropped(std::size_t page) noexcept { state_[page] = invalid; }

  // On the home (this rank's, or with node homes its node's).
  // invalid -> home: first touched here (a fault, a checkout, a collective
  // array placed here) to write, or this rank's own page.
  void touched_home(std::size_t page) noexcept { state_[page] = home; }
  // home_read -> home: a node mate's page, written after being read (it
  // stays unwatched: notified as written when a reader comes).
  void read_written(std::size_t page) noexcept { state_[page] = home; }
  // invalid -> home_read: a node mate's page, first touched to read.
  void touched_read(std::size_t page) noexcept { state_[page] = home_read; }
  // home or home_read -> home_watched: another rank began to read it.
  void watched(std::size_t page) noexcept { state_[page] = home_watched; }
  // home, home_read or home_watched -> home_hot: written while watched, or
  // pinned.
  void heated(std::size_t page) noexcept { state_[page] = home_hot; }
  // home_hot -> home_watched: a release found it unchanged, and no pin.
  void cooled(std::size_t page) noexcept { state_[page] = home_watched; }

 private:
  std::uint8_t* state_ = nullptr;
  std::uint8_t* overwrite_ = nullptr;
};

}  // namespace ito::dist::detail
