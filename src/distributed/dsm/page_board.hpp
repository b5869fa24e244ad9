// SPDX-License-Identifier: Apache-2.0
// Page boards: sets of pages that other ranks mark in this rank's memory with
// one-sided accumulates, and that this rank takes when it fences (the DSM's
// write notices, and a home's "another rank reads this page now").
//
// A board is a bitmap in the transport's data window, a bit per page. A rank is only ever
// marked for pages it said it may be marked for (watch(): the pages it reads
// from other homes, or the pages it is home of), so take() scans the words
// holding those and no others: its cost follows this rank's working set, not
// the region's size. One accumulate per word and rank marks pages (one
// round trip).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ito::dist::detail {

class page_board {
 public:
  // Words a board for `pages` pages takes in a window.
  static std::size_t words_for(std::size_t pages) noexcept { return (pages + 63) / 64; }

  page_board() = default;
  // The board at word `first` of a window whose local memory is `base`.
  page_board(std::uint64_t* base, std::size_t first, std::size_t pages);
  // Frees the scan list (the window's memory is the caller's).
  void release() noexcept;

  // This rank may be marked for `page` from now on.
  void watch(std::size_t page) {
    const std::size_t w = page / 64;
    if (listed_[w]) return;
    listed_[w] = 1;
    scan_[scan_count_++] = w;
  }

  // Calls each(page) for every page marked, unmarking it.
  template <class Each>
  void take(Each&& each) {
    for (std::size_t k = 0; k < scan_count_; ++k) {
      const std::size_t w = scan_[k];
      if (__atomic_load_n(&leaves_[w], __ATOMIC_RELAXED) == 0) continue;
      std::uint64_t pages = __atomic_exchange_n(&leaves_[w], 0, __ATOMIC_ACQ_REL);
      for (; pages; pages &= pages - 1) each(w * 64 + static_cast<std::size_t>(__builtin_ctzll(pages)));
    }
  }

  // Marks `page` on this rank's own board again, for a later take(): a mark
  // taken before this rank could act on it (called from take()'s each, it
  // is not taken again by that take).
  void keep(std::size_t page) {
    __atomic_fetch_or(&leaves_[page / 64], std::uint64_t{1} << (page % 64), __ATOMIC_RELAXED);
  }

  // The page's word in the window, the same on every rank.
  std::size_t word(std::size_t page) const noexcept { return first_ + page / 64; }

 private:
  std::uint64_t* leaves_ = nullptr;
  std::size_t first_ = 0;
  std::size_t words_ = 0;
  std::size_t* scan_ = nullptr;      // the words watched, in the order first watched
  std::size_t scan_count_ = 0;
  std::uint8_t* listed_ = nullptr;   // 1 for a word on scan_
};

// Marks pages on other ranks' boards (in the data window): post() collects,
// send() issues one transport::or_words per word per rank and completes them.
class board_posts {
 public:
  void reserve(std::size_t marks) { marks_.reserve(marks), bits_.reserve(marks); }
  void post(int rank, const page_board& board, std::size_t page);
  // Issues the accumulates (the boards' words lie in the data window from
  // byte `words_at`), completes them (and every other operation on the window
  // to the ranks marked: one flush each), and returns the number of pages
  // marked.
  std::size_t send(std::size_t words_at);
  // Issues them only, and returns the number of pages marked: the caller
  // flushes the ranks marked (with whatever it issues to them after), then
  // calls completed(), which frees the origin buffers for the next marks.
  std::size_t issue(std::size_t words_at);
  void completed() noexcept;

 private:
  struct mark {
    int rank;
    std::size_t word;
    std::uint64_t bit;
  };
  std::vector<mark> marks_;
  std::vector<std::uint64_t> bits_;  // origin buffers, alive until the flush
};

}  // namespace ito::dist::detail
