// SPDX-License-Identifier: Apache-2.0
#include "distributed/dsm/page_board.hpp"

#include <algorithm>

#include "distributed/dsm/dsm.hpp"
#include "distributed/dsm/reserved_array.hpp"
#include "distributed/dsm/transport.hpp"

namespace ito::dist::detail {

page_board::page_board(std::uint64_t* base, std::size_t first, std::size_t pages)
    : leaves_(base + first),
      first_(first),
      words_(words_for(pages)),
      scan_(reserve_array<std::size_t>(words_)),
      listed_(reserve_array<std::uint8_t>(words_)) {}

void page_board::release() noexcept {
  release_array(scan_, words_);
  release_array(listed_, words_);
  scan_ = nullptr;
  listed_ = nullptr;
}

void board_posts::post(int rank, const page_board& board, std::size_t page) {
  marks_.push_back({rank, board.word(page), std::uint64_t{1} << (page % 64)});
}

std::size_t board_posts::issue(std::size_t words_at) {
  if (marks_.empty()) return 0;
  std::sort(marks_.begin(), marks_.end(), [](const mark& a, const mark& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.word < b.word;
  });
  bits_.resize(marks_.size());
  std::size_t k = 0, used = 0;
  while (k < marks_.size()) {  // the marks of one word on one rank: one accumulate
    const mark& m = marks_[k];
    std::uint64_t& bits = bits_[used++];
    bits = 0;
    for (; k < marks_.size() && marks_[k].rank == m.rank && marks_[k].word == m.word; ++k)
      bits |= marks_[k].bit;
    if (!transport::or_words(m.rank, words_at + m.word * sizeof(std::uint64_t), &bits, 1))
      mpi_failed("marking pages on another rank's board");
  }
  return marks_.size();
}

void board_posts::completed() noexcept { marks_.clear(); }

std::size_t board_posts::send(std::size_t words_at) {
  const std::size_t n = issue(words_at);
  if (n == 0) return 0;
  // One flush per rank marked, never MPI_Win_flush_all (target_flush.hpp);
  // the marks are sorted by rank.
  for (std::size_t i = 0; i < marks_.size(); ++i) {
    if (i > 0 && marks_[i].rank == marks_[i - 1].rank) continue;
    if (!transport::flush(transport::window::data, marks_[i].rank))
      mpi_failed("completing the marks on other ranks' boards");
  }
  completed();
  return n;
}

}  // namespace ito::dist::detail
