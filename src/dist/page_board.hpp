// SPDX-License-Identifier: Apache-2.0
// Page boards: sets of pages that other ranks mark in this rank's memory with
// one-sided accumulates, and that this rank takes when it fences (the DSM's
// write notices, and a home's "someone else reads this page now").
//
// A board is two bitmaps in an MPI window: a bit per page (leaves) and a bit
// per leaf word (summary), so taking scans the summary only. A poster sets
// the leaf bits, flushes, and only then the summary bits: a taker clears a
// summary word before the leaf words it covers, so a page whose summary bit
// it cleared is either taken now or has its summary bit set again after.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ito::dist::detail {

class page_board {
 public:
  // Words a board for `pages` pages takes in a window.
  static std::size_t words_for(std::size_t pages) noexcept;

  page_board() = default;
  // The board at word `first` of a window whose local memory is `base`.
  page_board(std::uint64_t* base, std::size_t first, std::size_t pages) noexcept;

  // Calls each(page) for every page marked, unmarking it.
  template <class Each>
  void take(Each&& each) {
    for (std::size_t s = 0; s < summary_words_; ++s) {
      std::uint64_t groups = __atomic_exchange_n(&summary_[s], 0, __ATOMIC_ACQ_REL);
      for (; groups; groups &= groups - 1) {
        const std::size_t leaf = s * 64 + static_cast<std::size_t>(__builtin_ctzll(groups));
        std::uint64_t pages = __atomic_exchange_n(&leaves_[leaf], 0, __ATOMIC_ACQ_REL);
        for (; pages; pages &= pages - 1)
          each(leaf * 64 + static_cast<std::size_t>(__builtin_ctzll(pages)));
      }
    }
  }

  // Marks `page` on this rank's own board (a notice kept for a later take).
  void mark_here(std::size_t page) noexcept;

  // Displacements in the window, the same on every rank.
  std::size_t leaf_word(std::size_t page) const noexcept { return leaf_at_ + page / 64; }
  std::size_t summary_word(std::size_t page) const noexcept {
    return summary_at_ + page / (64 * 64);
  }

 private:
  std::uint64_t* leaves_ = nullptr;
  std::uint64_t* summary_ = nullptr;
  std::size_t leaf_at_ = 0, summary_at_ = 0;
  std::size_t summary_words_ = 0;
};

// Marks pages on other ranks' boards of one window: post() collects, send()
// issues the accumulates in two flushed rounds (leaves, then summaries),
// merging consecutive marks of one word on one rank into one accumulate.
class board_posts {
 public:
  void reserve(std::size_t marks) { marks_.reserve(marks), bits_.reserve(marks); }
  void post(int rank, const page_board& board, std::size_t page);
  bool empty() const noexcept { return marks_.empty(); }
  // Returns the number of pages marked. Completes every accumulate.
  std::size_t send(MPI_Win window);

 private:
  struct mark {
    int rank;
    std::size_t leaf_word, summary_word;
    std::uint64_t leaf_bit, summary_bit;
  };
  void send_round(MPI_Win window, bool summaries);
  std::vector<mark> marks_;
  std::vector<std::uint64_t> bits_;
};

}  // namespace ito::dist::detail
